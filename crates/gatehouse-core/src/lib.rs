//! Gatehouse core: all logic, no Tauri and no clap.
//!
//! Map, one line per tree:
//! - [`error`]: the one error shape (a stable code, a message, a hint).
//! - [`access`]: API keys, users, the actor a process runs as, permissions, the
//!   audit log.
//! - [`site`]: the site folder and its settings, content, media, config,
//!   sample data, export and import.
//! - [`store`]: every SQL statement, for SQLite and PostgreSQL.
//! - [`mcp`]: the wire format both sides share, the server (`gatehouse mcp`)
//!   and the protocol client for other servers.
//! - [`connections`]: the other servers a site stores and runs: definitions,
//!   consent, tool pins, call records, the live registry.
//! - [`sandbox`]: spawning and tearing down child servers, and their stderr.
//! - [`client_config`]: the configuration each MCP client needs to reach Gatehouse.
//! - [`supervise`]: `gatehouse serve` as the desktop app's supervised child,
//!   its counters and every client's remote config for it.
//! - [`redact`]: hiding secrets in text that leaves the process.
//! - [`time`]: the clock in store milliseconds, shown as RFC 3339 in every output.
//! - [`host_env`]: the host's own secrets taken out of its environment; the
//!   user's config directory.
//! - [`secret_store`]: secrets at rest: the system's credential store, or
//!   owner-only files where none answers.
//! - [`text`]: labels without bidirectional overrides; control characters made visible.
//! - [`json`]: canonical JSON, for digests and signatures.
//! - [`sync`]: the one mutex policy (a poisoned lock is taken, not a panic).
//!
//! Layers, bottom up; a module imports only from its own layer and those below
//! (test modules excepted), so the store never reaches into a domain module;
//! the test in `layers.rs` reads this list and holds every `crate::` path to it:
//! `redact` → `error` → `time`, `text`, `json`, `host_env`, `sync` →
//! `secret_store` → `store` → `access` → `site` → `sandbox` → `mcp` →
//! `connections` → `client_config` → `supervise`.

pub mod access;
pub mod client_config;
pub mod connections;
pub mod error;
pub mod host_env;
pub mod json;
pub mod mcp;
pub mod redact;
pub mod sandbox;
pub mod secret_store;
pub mod site;
pub mod store;
pub mod supervise;
pub mod sync;
pub mod text;
pub mod time;

#[cfg(test)]
mod layers;

pub use error::{Error, ErrorBody, Result};

/// The version of Gatehouse, shown by the CLI and the desktop app.
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
