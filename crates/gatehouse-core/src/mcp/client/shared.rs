//! The state a connection's tasks and handles share, and the commands its
//! supervisor takes: the leaf the connection's parts ([`super::connection`],
//! [`super::rpc`], [`super::reader`], [`super::supervisor`],
//! [`super::negotiate`], [`super::call`]) all import, so none of them
//! imports another to reach it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::{Semaphore, mpsc, oneshot};

use super::closed::Closed;
use super::lifecycle::{CallRecorder, ConnectionRun, EffectClass, StderrCounters, StreamEnd};
use super::options::ClientLimits;
use super::rpc::Rpc;
use super::server_info::{ServerInfo, ToolInfo};
use crate::mcp::wire::revisions::Era;
use crate::redact::Secrets;
use crate::sandbox::stderr::StderrTail;
use crate::sandbox::{ExitInfo, Isolation, ProcId};
use crate::sync::lock;
use crate::time::now_ms;

/// What the supervisor is asked to do.
pub(super) enum Command {
    Kill(Closed),
    Shutdown(oneshot::Sender<()>),
}

/// How the child and its streams ended, as far as the connection saw: one
/// lock, since records read all three together.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ends {
    pub exit: Option<ExitInfo>,
    pub stdout: StreamEnd,
    pub stderr: StreamEnd,
}

/// What the connection's tasks and handles share.
pub(super) struct Shared {
    pub id: String,
    pub name: Option<String>,
    pub program: String,
    pub pid: i32,
    /// How the child is confined (what is weaker than asked is in its warnings).
    pub isolation: Isolation,
    pub limits: ClientLimits,
    pub rpc: Rpc,
    pub commands: mpsc::UnboundedSender<Command>,
    /// Calls on the wire at once.
    pub slots: Semaphore,
    /// Set once, by negotiation.
    pub server: OnceLock<ServerInfo>,
    /// Effect classes from the last tool list.
    pub tools: Mutex<HashMap<String, EffectClass>>,
    /// The last tool list, whole (for tool pinning).
    pub listed: Mutex<Vec<ToolInfo>>,
    pub stderr: StderrTail,
    /// The secrets the child was given: redacted from its stderr, its tool
    /// results and its errors.
    pub secrets: Secrets,
    pub recorder: Arc<dyn CallRecorder>,
    pub ends: Mutex<Ends>,
    pub started_at_ms: i64,
    /// The child's descendants the sandbox has seen (the supervisor copies
    /// them each tick), so [`Connection::usage`] sums what the ceilings sum.
    pub descendants: Mutex<Vec<ProcId>>,
}

impl Shared {
    pub(super) fn era(&self) -> Option<Era> {
        self.server.get().map(|s| s.era)
    }

    pub(super) fn stderr_counters(&self) -> StderrCounters {
        self.stderr.counters()
    }

    pub(super) fn connection_record(&self, end: Option<&Closed>) -> ConnectionRun {
        let server = self.server.get();
        let ended = end.is_some();
        let ends = *lock(&self.ends);
        ConnectionRun {
            connection_id: self.id.clone(),
            name: self.name.clone(),
            program: self.program.clone(),
            pid: Some(self.pid),
            era: server.map(|s| s.era),
            protocol_version: server.map(|s| s.protocol_version.clone()),
            server_name: server.and_then(|s| s.name.clone()),
            server_version: server.and_then(|s| s.version.clone()),
            end_reason: end.map(Closed::reason),
            exit: ends.exit,
            stderr: self.stderr_counters(),
            stderr_excerpt: ended.then(|| self.stderr.excerpt().text),
            stdout_end: ends.stdout,
            stderr_end: ends.stderr,
            protocol_violations: self.rpc.violations(),
            started_at_ms: self.started_at_ms,
            ended_at_ms: ended.then(now_ms),
        }
    }

    /// Writes in the background, for callers that must not wait on the child
    /// (the stdout reader, drop handlers).
    pub(super) fn send_line(self: &Arc<Self>, line: Vec<u8>) {
        let s = self.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                s.rpc.write_line(&line).await;
            });
        }
    }
}
