//! The MCP wire format shared by the server and the client; it knows no tool
//! and no connection.
//!
//! Map: [`jsonrpc`] is the one JSON-RPC layer (message type, error type,
//! codes, line builders); [`framer`] is the one newline framer (with an
//! explicit oversize policy and one `\r` rule); [`revisions`] lists the
//! protocol revisions, the [`revisions::Era`] families and the `_meta` keys;
//! [`results`] gives the typed shapes of the results the client reads
//! (`server/discover`, `initialize`, `tools/list`).

pub mod framer;
pub mod jsonrpc;
pub mod results;
pub mod revisions;
