//! The MCP client: Gatehouse's side of a stdio connection to a sandboxed,
//! untrusted server process.
//!
//! Map, one job per file:
//! - [`connection`]: the [`Connection`] handle, `connect`, and the state its
//!   tasks share;
//! - [`options`]: limits, connect and call options;
//! - [`rpc`]: the pending table, the stdin writer (an outbox) and the stdout
//!   reader that routes answers, all over [`crate::mcp::wire`];
//! - [`negotiate`]: the protocol revision (`server/discover`, else legacy
//!   `initialize`) and the tool list, read as typed results;
//! - [`call`]: `call_tool`, its deadlines, cancellation and final states;
//! - [`supervisor`]: the one owner of the child (exit, watchdog, kills, teardown);
//! - [`closed`]: why a connection ended;
//! - [`lifecycle`]: call states, effect classes and the records a
//!   [`CallRecorder`] persists ([`recorder`]: into the site's store);
//! - [`saved`]: connection definitions stored in the site (validated field by
//!   field), and [`consent`]: the admin's agreement to spawn one exactly as defined;
//! - [`form`]: a definition as the desktop form edits it;
//! - [`result_view`]: a call result cut to what a window shows;
//! - [`actor_preview`]: the manifest `gatehouse mcp` serves one actor;
//! - [`pin`]: tool pinning (the approved tool list, diffs, holds, approvals);
//! - [`registry`]: the live connections a long-lived host keeps by name.
//!
//! Hand-written rather than `rmcp`'s client: see docs/decisions.md.

pub mod actor_preview;
pub mod call;
mod closed;
pub mod connection;
pub mod consent;
pub mod form;
pub mod lifecycle;
pub mod negotiate;
pub mod options;
pub mod pin;
pub mod recorder;
pub mod registry;
pub mod result_view;
mod rpc;
pub mod saved;
mod supervisor;

pub use call::CallOutcome;
pub use closed::{Ceiling, EndReason};
pub use connection::{Connection, LiveUsage};
pub use lifecycle::{
    CallRecord, CallRecorder, CallState, ConnectionRun, EffectClass, MemoryRecorder,
    StderrCounters, StreamEnd,
};
pub use negotiate::{ServerInfo, ToolInfo};
pub use options::{CallOptions, ClientLimits, ConnectOptions};
pub use recorder::StoreRecorder;
pub use registry::{LiveConnection, LiveState, Registry};
pub use tokio_util::sync::CancellationToken;

pub use crate::mcp::wire::revisions::Era;
