//! The JSON-RPC plumbing of one connection: the pending table, the writer
//! (an outbox on the child's stdin) and the stdout reader that routes answers.
//!
//! Requests are written to the child's stdin by the calling task itself (no
//! writer task to hop through): each caller queues its line in an outbox, and
//! whoever holds stdin writes everything queued at once, so concurrent calls
//! share one `write` instead of taking turns.
//!
//! The reader frames stdout under [`Oversize::Fail`], routes responses to
//! pending calls by id, resets inactivity timers on progress, answers `ping`,
//! notes `notifications/tools/list_changed` (a hold), refuses other server requests, and counts non-JSON-RPC lines as protocol
//! violations.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::{Notify, oneshot};

use super::closed::Closed;
use crate::mcp::wire::jsonrpc::{self, ErrorData, Message};
use crate::redact::Secrets;
use crate::sync::lock;

/// What a pending request receives.
pub(super) enum Reply {
    Answer(Result<Value, ErrorData>),
    Closed(Closed),
}

struct Pending {
    tx: oneshot::Sender<Reply>,
    activity: Arc<Notify>,
}

#[derive(Default)]
struct PendingTable {
    map: HashMap<u64, Pending>,
    /// Once set, nothing new is registered: the connection is over.
    closed: Option<Closed>,
}

/// The request/response side of a connection.
pub(super) struct Rpc {
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    /// Whole lines waiting for whoever next holds `stdin`.
    outbox: Mutex<Vec<u8>>,
    pending: Mutex<PendingTable>,
    next_id: AtomicU64,
    /// Non-JSON-RPC lines seen on stdout.
    violations: AtomicU64,
    /// `notifications/tools/list_changed` received so far: the connection is
    /// on hold while this is above `list_changes_approved`.
    list_changes: AtomicU64,
    /// How many of those an admin's approval covered (see [`Rpc::approve_list_changes`]).
    list_changes_approved: AtomicU64,
}

impl Rpc {
    pub(super) fn new(stdin: ChildStdin) -> Self {
        Self {
            stdin: tokio::sync::Mutex::new(Some(stdin)),
            outbox: Mutex::new(Vec::new()),
            pending: Mutex::new(PendingTable::default()),
            next_id: AtomicU64::new(1),
            violations: AtomicU64::new(0),
            list_changes: AtomicU64::new(0),
            list_changes_approved: AtomicU64::new(0),
        }
    }

    pub(super) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Whether an announced tool list change waits for approval (on hold).
    pub(super) fn tools_list_changed(&self) -> bool {
        self.list_changes.load(Ordering::SeqCst) > self.list_changes_approved.load(Ordering::SeqCst)
    }

    /// Holds the connection as an announcement would: its list changed
    /// without one (seen when it was listed again).
    pub(super) fn hold(&self) {
        self.list_changes.fetch_add(1, Ordering::SeqCst);
    }

    /// The announcements received so far (a mark for [`Rpc::approve_list_changes`]).
    pub(super) fn list_changes(&self) -> u64 {
        self.list_changes.load(Ordering::SeqCst)
    }

    /// Lifts the hold for the first `upto` announcements; a later one holds again.
    pub(super) fn approve_list_changes(&self, upto: u64) {
        self.list_changes_approved.fetch_max(upto, Ordering::SeqCst);
    }

    pub(super) fn violations(&self) -> u64 {
        self.violations.load(Ordering::Relaxed)
    }

    /// Writes one line to the child's stdin, with any queued by concurrent
    /// callers; false once stdin is closed or broken. Lines stay whole and in
    /// queue order; an earlier holder may already have written ours.
    pub(super) async fn write_line(&self, line: &[u8]) -> bool {
        lock(&self.outbox).extend_from_slice(line);
        let mut stdin = self.stdin.lock().await;
        let Some(w) = stdin.as_mut() else {
            return false;
        };
        let batch = std::mem::take(&mut *lock(&self.outbox));
        if !batch.is_empty() && w.write_all(&batch).await.is_err() {
            *stdin = None;
            return false;
        }
        true
    }

    /// Closes stdin (the polite request to exit); a write stuck on a full pipe
    /// must not hold this up past `wait`.
    pub(super) async fn close_stdin(&self, wait: Duration) {
        if let Ok(mut stdin) = tokio::time::timeout(wait, self.stdin.lock()).await {
            stdin.take();
        }
    }

    /// Registers a pending request, unless the connection is over.
    pub(super) fn register(
        &self,
        id: u64,
    ) -> Result<(oneshot::Receiver<Reply>, Arc<Notify>), Closed> {
        let mut table = lock(&self.pending);
        if let Some(closed) = &table.closed {
            return Err(closed.clone());
        }
        let (tx, rx) = oneshot::channel();
        let activity = Arc::new(Notify::new());
        table.map.insert(
            id,
            Pending {
                tx,
                activity: activity.clone(),
            },
        );
        Ok((rx, activity))
    }

    pub(super) fn unregister(&self, id: u64) {
        lock(&self.pending).map.remove(&id);
    }

    /// Ends the connection for every pending call (first reason wins).
    pub(super) fn close_all(&self, why: Closed) {
        let (drained, why): (Vec<Pending>, Closed) = {
            let mut table = lock(&self.pending);
            let why = table.closed.get_or_insert(why).clone();
            (table.map.drain().map(|(_, p)| p).collect(), why)
        };
        for p in drained {
            let _ = p.tx.send(Reply::Closed(why.clone()));
        }
    }

    /// Why the connection ended, once it has.
    pub(super) fn closed(&self) -> Option<Closed> {
        lock(&self.pending).closed.clone()
    }

    /// An uncounted request (negotiation, listing): the reply, or `None` when
    /// none came within `timeout`.
    pub(super) async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Option<Reply> {
        let id = self.next_id();
        let (rx, _) = match self.register(id) {
            Ok(r) => r,
            Err(closed) => return Some(Reply::Closed(closed)),
        };
        let line = jsonrpc::request_line(id, method, &params);
        let answered = tokio::time::timeout(timeout, async {
            self.write_line(&line).await;
            rx.await
        });
        match answered.await {
            Ok(Ok(reply)) => Some(reply),
            Ok(Err(_)) => Some(Reply::Closed(self.closed().unwrap_or(Closed::Dropped))),
            Err(_) => {
                self.unregister(id);
                None
            }
        }
    }

    /// Routes one parsed stdout line; returns a line to write back, if any.
    /// An answer loses its `secrets` here, before anything reads it: a server
    /// can say what it was given anywhere (its name and instructions, a
    /// tool's description, an error), and what it says at connect is pinned
    /// and audited, where no one could take a secret out again.
    pub(super) fn route(&self, line: &[u8], secrets: &Secrets) -> Option<Vec<u8>> {
        match jsonrpc::parse_line(line) {
            Some(Message::Response { id, mut outcome }) => {
                match &mut outcome {
                    Ok(result) => secrets.redact_json(result),
                    Err(e) => {
                        e.message = secrets.redact(e.message.to_string()).into();
                        if let Some(data) = e.data.as_mut() {
                            secrets.redact_json(data);
                        }
                    }
                }
                let Some(id) = id.as_u64() else {
                    // Not an id we issued.
                    self.violation(line);
                    return None;
                };
                match lock(&self.pending).map.remove(&id) {
                    Some(p) => {
                        let _ = p.tx.send(Reply::Answer(outcome));
                    }
                    // Late answer to a call that timed out or was cancelled.
                    None => tracing::debug!(id, "answer for no pending call"),
                }
                None
            }
            Some(Message::Notification { method, params }) => {
                if method == "notifications/tools/list_changed" {
                    // Read before the next line is routed: a call dispatched
                    // after this point is refused (see `call_tool`).
                    self.list_changes.fetch_add(1, Ordering::SeqCst);
                    tracing::warn!("the server changed its tool list mid-session: on hold");
                }
                if method == "notifications/progress"
                    && let Some(token) = params
                        .as_ref()
                        .and_then(|p| p.get("progressToken"))
                        .and_then(Value::as_u64)
                    && let Some(p) = lock(&self.pending).map.get(&token)
                {
                    p.activity.notify_one();
                }
                None
            }
            Some(Message::Request { id, method, .. }) => Some(answer_server_request(&id, &method)),
            None => {
                self.violation(line);
                None
            }
        }
    }

    fn violation(&self, line: &[u8]) {
        self.violations.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(bytes = line.len(), "non-JSON-RPC line on stdout");
    }
}

/// The answer to a server-to-client request: `ping` gets `{}`, anything else
/// a clean "method not found".
pub(super) fn answer_server_request(id: &Value, method: &str) -> Vec<u8> {
    if method == "ping" {
        return jsonrpc::line(&jsonrpc::response(id, serde_json::json!({})));
    }
    let error = ErrorData::new(
        jsonrpc::ErrorCode::METHOD_NOT_FOUND,
        format!("Method not found: this client does not support {method}"),
        None,
    );
    jsonrpc::line(&jsonrpc::error_response(id, &error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refuses_unsupported_server_requests_cleanly() {
        let ping: Value =
            serde_json::from_slice(&answer_server_request(&json!("a"), "ping")).unwrap();
        assert_eq!(ping, json!({"jsonrpc": "2.0", "id": "a", "result": {}}));
        let other: Value =
            serde_json::from_slice(&answer_server_request(&json!(5), "sampling/createMessage"))
                .unwrap();
        assert_eq!(other["error"]["code"], -32601);
        assert_eq!(other["id"], 5);
    }
}
