//! The MCP client: Gatehouse's side of a stdio connection to a sandboxed,
//! untrusted server process.
//!
//! Map: [`connection`] spawns, negotiates, calls, supervises and tears down;
//! [`protocol`] holds the revisions and message shapes (2026-07-28 with
//! per-request `_meta`, legacy `initialize` back to 2024-11-05); [`frame`]
//! splits stdout into lines under a ceiling; [`lifecycle`] defines call states,
//! effect classes and the records a [`CallRecorder`] persists.
//!
//! Hand-written rather than `rmcp`'s client: see docs/decisions.md.

pub mod connection;
pub mod frame;
pub mod lifecycle;
pub mod protocol;
pub mod recorder;
pub mod saved;

pub use connection::{
    CallOptions, CallOutcome, ClientLimits, ConnectOptions, Connection, ServerInfo, ToolInfo,
};
pub use lifecycle::{
    CallRecord, CallRecorder, CallState, CancelToken, ConnectionRecord, EffectClass,
    MemoryRecorder, StderrCounters, StreamEnd,
};
pub use protocol::Era;
pub use recorder::StoreRecorder;
