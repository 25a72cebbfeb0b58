//! Stored connections: the site's side of the MCP servers it runs, on top of
//! the protocol client in [`crate::mcp::client`].
//!
//! Map, one job per file:
//! - [`saved`]: connection definitions stored in the site (validated field by
//!   field), and running them with the site's records;
//! - [`consent`]: the admin's agreement to spawn one exactly as defined;
//! - [`pin`]: tool pinning (the approved tool list, diffs, holds, approvals);
//! - [`recorder`]: connection runs and call records kept in the site's store;
//! - [`registry`]: the live connections a long-lived host keeps by name;
//! - [`form`]: a definition as the desktop form edits it;
//! - [`result_view`]: a call result cut to what a window shows;
//! - [`actor_preview`]: the manifest `gatehouse mcp` serves one actor.

pub mod actor_preview;
pub mod consent;
pub mod form;
pub mod pin;
pub mod recorder;
pub mod registry;
pub mod result_view;
pub mod saved;
