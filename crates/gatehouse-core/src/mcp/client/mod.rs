//! The MCP client: Gatehouse's side of a stdio connection to a sandboxed,
//! untrusted server process.
//!
//! Map, one job per file:
//! - [`connection`]: the [`Connection`] handle and `connect`;
//! - [`shared`]: the state a connection's tasks share and the supervisor's
//!   commands (the leaf the other parts import);
//! - [`options`]: limits, connect and call options;
//! - [`rpc`]: the pending table, the stdin writer (an outbox) and the routing
//!   of answers, all over [`crate::mcp::wire`]; [`reader`]: the stdout reader;
//! - [`negotiate`]: the protocol revision (`server/discover`, else legacy
//!   `initialize`) and the tool list, read as typed results ([`server_info`]);
//! - [`call`]: `call_tool`, its deadlines, cancellation and final states;
//! - [`supervisor`]: the one owner of the child (exit, watchdog, kills, teardown);
//! - [`closed`]: why a connection ended;
//! - [`lifecycle`]: call states, effect classes and the records a
//!   [`CallRecorder`] persists.
//!
//! Stored connections (definitions, consent, pins, the site's records, the
//! live registry) are the layer above, [`crate::connections`].
//!
//! Hand-written rather than `rmcp`'s client: see docs/decisions.md.

pub mod call;
mod closed;
pub mod connection;
pub mod lifecycle;
pub mod negotiate;
pub mod options;
mod reader;
mod rpc;
pub mod server_info;
mod shared;
mod supervisor;

pub use call::CallOutcome;
pub use closed::{Ceiling, EndReason};
pub use connection::{Connection, LiveUsage};
pub use lifecycle::{
    CallRecord, CallRecorder, CallState, ConnectionRun, EffectClass, MemoryRecorder,
    StderrCounters, StreamEnd,
};
pub use options::{CallOptions, ClientLimits, ConnectOptions};
pub use server_info::{ServerInfo, ToolInfo};
pub use tokio_util::sync::CancellationToken;

pub use crate::mcp::wire::revisions::Era;
