//! Gatehouse core: all logic, no Tauri and no clap.
//!
//! Map: [`site`] finds, creates and opens a site folder; [`store`] holds every
//! SQL statement; [`keys`] mints and verifies API keys; [`users`] manages
//! accounts; [`actor`] resolves who a process runs as; [`permissions`] decides
//! every action; [`content`] is the permission-checked content API; [`audit`]
//! keeps the hash-chained log; [`seed`] fills scratch sites; [`media`] and
//! [`site_config`] are the permission-checked media and config APIs;
//! [`http_fetch`] is the SSRF-guarded fetcher; [`manifest`] lists the MCP tools
//! and [`server`] serves them over stdio.

pub mod actor;
pub mod audit;
pub mod client;
pub mod client_config;
pub mod content;
pub mod error;
pub mod http_fetch;
pub mod keys;
pub mod manifest;
pub mod mcp_revisions;
pub mod media;
pub mod permissions;
pub mod portable;
pub mod redact;
pub mod sandbox;
pub mod seed;
pub mod server;
pub mod site;
pub mod site_config;
pub mod stderr_tail;
pub mod store;
pub mod users;

pub use error::{Error, ErrorBody, Result};

/// The version of Gatehouse, shown by the CLI and the desktop app.
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
