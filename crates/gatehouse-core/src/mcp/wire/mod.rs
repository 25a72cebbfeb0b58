//! The MCP wire format shared by the server and the client.
//!
//! Map: [`revisions`] lists the protocol revisions and `_meta` keys.

pub mod revisions;
