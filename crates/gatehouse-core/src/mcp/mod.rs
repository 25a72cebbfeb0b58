//! MCP, both directions.
//!
//! Map: [`wire`] is what both sides share (revisions and `_meta` keys);
//! [`server`] is `gatehouse mcp`, serving this site's tools to one actor;
//! [`client`] connects to other MCP servers running in the [`crate::sandbox`].

pub mod client;
pub mod server;
pub mod wire;
