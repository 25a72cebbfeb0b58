//! A call's lifecycle and the records that persist it.
//!
//! States: `received` → `validated` → `dispatched` → exactly one final state.
//! Before dispatch a call can only end `failed` (invalid), `timed_out` (no
//! slot in time) or `cancelled_before_dispatch`. After dispatch:
//! `completed` (an answer arrived, even a tool error), `failed` (a JSON-RPC
//! error, or a read-only call whose answer was lost), `timed_out` (its own
//! deadline), `cancelled_after_dispatch`, or `outcome_unknown` (a may-write
//! call whose answer was lost: the server may have acted, so it is never resent).
//!
//! The effect class is fixed at dispatch from the tool list as it was then,
//! and written with the `dispatched` record, before the request is sent.
//!
//! Records go through a [`CallRecorder`]: the store implements it for the
//! site's database, [`MemoryRecorder`] for tests and benchmarks.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::closed::EndReason;
use crate::error::{ErrorBody, Result};
use crate::mcp::wire::revisions::Era;
use crate::sandbox::ExitInfo;

/// Where a call is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum CallState {
    Received,
    Validated,
    Dispatched,
    Completed,
    Failed,
    TimedOut,
    CancelledBeforeDispatch,
    CancelledAfterDispatch,
    OutcomeUnknown,
}

impl CallState {
    pub fn as_str(self) -> &'static str {
        match self {
            CallState::Received => "received",
            CallState::Validated => "validated",
            CallState::Dispatched => "dispatched",
            CallState::Completed => "completed",
            CallState::Failed => "failed",
            CallState::TimedOut => "timed_out",
            CallState::CancelledBeforeDispatch => "cancelled_before_dispatch",
            CallState::CancelledAfterDispatch => "cancelled_after_dispatch",
            CallState::OutcomeUnknown => "outcome_unknown",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "received" => CallState::Received,
            "validated" => CallState::Validated,
            "dispatched" => CallState::Dispatched,
            "completed" => CallState::Completed,
            "failed" => CallState::Failed,
            "timed_out" => CallState::TimedOut,
            "cancelled_before_dispatch" => CallState::CancelledBeforeDispatch,
            "cancelled_after_dispatch" => CallState::CancelledAfterDispatch,
            "outcome_unknown" => CallState::OutcomeUnknown,
            _ => return None,
        })
    }

    pub fn is_final(self) -> bool {
        !matches!(
            self,
            CallState::Received | CallState::Validated | CallState::Dispatched
        )
    }
}

/// May the call write? From the tool's `readOnlyHint` when it was dispatched;
/// a tool not in the list, or without the hint, may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum EffectClass {
    ReadOnly,
    MayWrite,
}

impl EffectClass {
    pub fn as_str(self) -> &'static str {
        match self {
            EffectClass::ReadOnly => "read_only",
            EffectClass::MayWrite => "may_write",
        }
    }
}

/// How one of the child's output streams ended, as far as the connection saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamEnd {
    /// Still open when the record was written.
    Open,
    /// Read to end-of-file.
    Eof,
    /// A stdout line passed the frame ceiling.
    FrameTooLarge,
    /// The read failed.
    ReadError,
}

pub use crate::sandbox::stderr::StderrCounters;

/// One call, as persisted. Written at each transition; the last write is final.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// Stable id (`call_` + 32 hex digits).
    pub call_id: String,
    pub connection_id: String,
    pub tool: String,
    pub state: CallState,
    /// Fixed at dispatch; `None` before.
    pub effect: Option<EffectClass>,
    /// The JSON-RPC id on the wire, once dispatched.
    pub request_id: Option<u64>,
    /// Bytes of the arguments (the arguments themselves may hold secrets).
    pub args_bytes: u64,
    pub error: Option<ErrorBody>,
    /// The child's exit if one was observed when the call ended; never invented.
    pub exit: Option<ExitInfo>,
    pub stderr: StderrCounters,
    pub stdout_end: StreamEnd,
    pub stderr_end: StreamEnd,
    /// Unix milliseconds.
    pub received_at_ms: i64,
    pub dispatched_at_ms: Option<i64>,
    pub finished_at_ms: Option<i64>,
}

/// One run of a connection (spawn to teardown), as persisted: written at
/// connect and at close. (The stored definition is [`crate::connections::saved`]'s.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionRun {
    pub connection_id: String,
    /// The connection definition's name, when it came from the site.
    pub name: Option<String>,
    pub program: String,
    pub pid: Option<i32>,
    /// The protocol family, once negotiated.
    pub era: Option<Era>,
    pub protocol_version: Option<String>,
    pub server_name: Option<String>,
    pub server_version: Option<String>,
    /// Why it ended.
    pub end_reason: Option<EndReason>,
    pub exit: Option<ExitInfo>,
    pub stderr: StderrCounters,
    pub stderr_excerpt: Option<String>,
    pub stdout_end: StreamEnd,
    pub stderr_end: StreamEnd,
    pub protocol_violations: u64,
    pub started_at_ms: i64,
    pub ended_at_ms: Option<i64>,
}

/// A future the recorder returns (boxed so the trait stays object-safe).
pub type RecordFuture<'a> = Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>;

/// Persists call and connection records. Each write replaces the previous
/// record with the same id (an upsert), so a crash leaves the last state written.
pub trait CallRecorder: Send + Sync + std::fmt::Debug {
    fn record_call<'a>(&'a self, record: &'a CallRecord) -> RecordFuture<'a>;
    fn record_connection<'a>(&'a self, record: &'a ConnectionRun) -> RecordFuture<'a>;
}

/// Keeps every write in memory, in order (tests, benchmarks, `probe`).
#[derive(Debug, Default)]
pub struct MemoryRecorder {
    pub calls: Mutex<Vec<CallRecord>>,
    pub connections: Mutex<Vec<ConnectionRun>>,
}

impl MemoryRecorder {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The states `call_id` went through, in order.
    pub fn states(&self, call_id: &str) -> Vec<CallState> {
        self.lock_calls()
            .iter()
            .filter(|r| r.call_id == call_id)
            .map(|r| r.state)
            .collect()
    }

    /// The last record written for `call_id`.
    pub fn last(&self, call_id: &str) -> Option<CallRecord> {
        self.lock_calls()
            .iter()
            .rev()
            .find(|r| r.call_id == call_id)
            .cloned()
    }

    /// The last record written for connection `id`.
    pub fn last_connection(&self, id: &str) -> Option<ConnectionRun> {
        self.connections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .rev()
            .find(|r| r.connection_id == id)
            .cloned()
    }

    fn lock_calls(&self) -> std::sync::MutexGuard<'_, Vec<CallRecord>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl CallRecorder for MemoryRecorder {
    fn record_call<'a>(&'a self, record: &'a CallRecord) -> RecordFuture<'a> {
        self.lock_calls().push(record.clone());
        Box::pin(std::future::ready(Ok(())))
    }

    fn record_connection<'a>(&'a self, record: &'a ConnectionRun) -> RecordFuture<'a> {
        self.connections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(record.clone());
        Box::pin(std::future::ready(Ok(())))
    }
}

/// A fresh stable id with `prefix`.
pub fn new_id(prefix: &str) -> String {
    let bytes: [u8; 16] = rand::random();
    format!("{prefix}_{}", hex::encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_through_text() {
        use CallState::*;
        for s in [
            Received,
            Validated,
            Dispatched,
            Completed,
            Failed,
            TimedOut,
            CancelledBeforeDispatch,
            CancelledAfterDispatch,
            OutcomeUnknown,
        ] {
            assert_eq!(CallState::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        assert!(!Dispatched.is_final() && OutcomeUnknown.is_final());
    }
}
