//! `gatehouse mcp`: the MCP server over stdio.
//!
//! Map: [`stdio`] reads stdin and writes stdout on the runtime's thread;
//! stdin is framed by [`crate::mcp::wire::framer`] (oversized lines skipped
//! and answered), and each line is classified by
//! [`crate::mcp::wire::jsonrpc`], which also builds the replies; [`era`] decides
//! per request whether it is served under the stateless 2026-07-28 revision or
//! the legacy handshake; [`handler`] dispatches methods and keeps the little
//! state there is; [`arguments`] checks every call's arguments against the
//! tool's input schema; [`budget`] bounds the requests in flight and the memory
//! they hold; [`tools`] runs the tools (the list is [`crate::mcp::server::manifest`]);
//! [`reach`] narrows the tools by a key's restrictions (manifest and calls),
//! [`key_form`] edits them as the desktop app's key form does, and
//! [`key_report`] lists keys with their reach and usage for the Keys screen;
//! [`shutdown`] watches for signals and the parent's death; [`call_record`]
//! gives every tool call its audit entry, however it ends; [`hold`] makes a
//! call the approval policy names wait for a person's yes (asking the client's
//! user through the one outgoing-request path, [`handler::State::request_client`]).
//!
//! stdout carries protocol messages only, one JSON object per line, written by
//! a single writer task. Requests run concurrently (bounded by
//! [`Limits::max_in_flight`]) and `notifications/cancelled` ends one at its
//! next wait (a tool call has its audit entry by then), after which no
//! response is sent for it. Malformed input gets its JSON-RPC error
//! and the server keeps serving. The protocol model types (tools, results,
//! errors) are the official `rmcp` SDK's; the loop is ours (see
//! docs/decisions.md for why).

pub mod admit;
pub mod arguments;
pub mod budget;
pub mod call_record;
pub mod era;
pub mod handler;
pub mod hold;
pub mod http;
pub mod http_fetch;
pub mod key_form;
pub mod key_report;
pub mod manifest;
pub mod reach;
pub mod shutdown;
mod stdio;
pub mod tools;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{Semaphore, mpsc, oneshot, watch};
use tokio::task::JoinSet;

use crate::access::actor::Actor;
use crate::error::Result;
use crate::mcp::wire::framer::Frame;
use crate::mcp::wire::jsonrpc::{self, Message};
use crate::site::Site;
use crate::sync::lock;
use admit::{Admission, Admitted, Incoming};
use handler::State;
use shutdown::Reason;

/// Bounds that keep a misbehaving client from exhausting the server.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The longest accepted line: big enough for a base64 media upload at its cap.
    pub max_message_bytes: usize,
    /// Slots for ordinary requests; a request arriving when all are taken is
    /// answered "busy" at once.
    pub max_in_flight: usize,
    /// Separate slots for `subscriptions/listen`, which stays open for the
    /// whole session: listeners can never take the slots calls need.
    pub max_listeners: usize,
    /// The most one message may cost once parsed ([`budget::estimate`]).
    pub max_request_cost: usize,
    /// The most all messages being served may cost together.
    pub max_total_cost: usize,
    /// How often the actor is re-read while a client listens for `list_changed`.
    pub watch_interval: Duration,
    /// How long in-flight requests may finish after input ends or a signal.
    pub drain: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 4 * 1024 * 1024,
            max_in_flight: 32,
            max_listeners: 8,
            max_request_cost: 32 * 1024 * 1024,
            max_total_cost: 256 * 1024 * 1024,
            watch_interval: Duration::from_secs(2),
            drain: Duration::from_secs(5),
        }
    }
}

/// Serves MCP on this process's stdin and stdout until stdin closes, a
/// signal arrives or the parent dies.
pub async fn run_stdio(site: Site, actor: Actor) -> Result<Reason> {
    site.file.check_policies()?;
    let limits = Limits::default();
    http::sweep_holds(&site).await;
    let input = stdio::input(limits.max_message_bytes);
    tracing::info!(actor = %actor.label(), "MCP server ready on stdio");
    let reason = serve(
        site,
        actor,
        input,
        stdio::output(),
        shutdown::signal_or_orphaned(),
        limits,
    )
    .await?;
    tracing::info!(?reason, "MCP server stopped");
    Ok(reason)
}

/// The server loop over any line source and sink (tests use pipes).
pub async fn serve<W>(
    site: Site,
    actor: Actor,
    mut input: mpsc::Receiver<Frame<Vec<u8>>>,
    output: W,
    stop: impl Future<Output = Reason>,
    limits: Limits,
) -> Result<Reason>
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, out_rx) = mpsc::channel::<Value>(256);
    let writer = tokio::spawn(write_lines(output, out_rx));
    let (closing_tx, closing_rx) = watch::channel(false);
    // Every request is marked as it arrives (below), before anything is read
    // on its behalf.
    let store = site.store.clone();
    store.share_reads_between_arrivals();
    let state = Arc::new(State::new(site, actor, out_tx.clone(), closing_rx));
    let watcher = tokio::spawn(watch_actor(state.clone(), limits.watch_interval));
    let permits = Arc::new(Semaphore::new(limits.max_in_flight));
    let listen_permits = Arc::new(Semaphore::new(limits.max_listeners));
    let admission = Admission::new(&limits);
    // Each call's cancel: a oneshot, whose wait is an atomic flag, where a
    // cancellation token's takes a lock to join and to leave a waiters' list.
    let in_flight: Arc<Mutex<HashMap<String, oneshot::Sender<()>>>> = Arc::default();
    let mut tasks = JoinSet::new();
    tokio::pin!(stop);

    let reason = loop {
        let frame = tokio::select! {
            frame = input.recv() => frame,
            reason = &mut stop => break reason,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
        };
        let Some(frame) = frame else {
            break Reason::EndOfInput;
        };
        store.arrived();
        let line = match frame {
            Frame::Oversized { bytes } => {
                tracing::debug!(bytes, "dropping an oversized message");
                let refusal = jsonrpc::invalid_request(
                    Value::Null,
                    format!(
                        "Invalid Request: the message is {bytes} bytes; the limit is {}",
                        limits.max_message_bytes
                    ),
                );
                state.send(admit::refusal(&refusal)).await;
                continue;
            }
            Frame::Line(line) => line,
        };
        // The reader never waits for memory or a slot: it answers instead.
        let admitted = match admission.admit(&line, state.batches_allowed()) {
            Ok(Some(admitted)) => admitted,
            Ok(None) => continue,
            Err(reply) => {
                state.send(reply).await;
                continue;
            }
        };
        match &admitted.message {
            Incoming::Notification { method, params } if method == "notifications/cancelled" => {
                cancel(&in_flight, params.as_ref());
                dispatch(&state, admitted).await;
            }
            Incoming::Notification { .. } | Incoming::Response { .. } => {
                dispatch(&state, admitted).await;
            }
            // The handshake is answered in order, so nothing sent after it can
            // be served before the session exists.
            Incoming::Request { method, .. } if method == "initialize" => {
                if let Some(reply) = dispatch(&state, admitted).await {
                    state.send(reply).await;
                }
            }
            Incoming::Batch(_) => {
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    state
                        .send(jsonrpc::error_response(
                            &Value::Null,
                            &budget::busy("every request slot is taken"),
                        ))
                        .await;
                    continue;
                };
                let state = state.clone();
                tasks.spawn(async move {
                    if let Some(reply) = dispatch(&state, admitted).await {
                        state.send(reply).await;
                    }
                    drop(permit);
                });
            }
            Incoming::Request { id, method, .. } => {
                // Long-lived listens have their own slots; neither kind waits.
                let (slots, what) = if method == "subscriptions/listen" {
                    (&listen_permits, "every subscription slot is taken")
                } else {
                    (&permits, "every request slot is taken")
                };
                let Ok(permit) = slots.clone().try_acquire_owned() else {
                    tracing::debug!(method = %jsonrpc::shorten(method, 40), "busy");
                    state
                        .send(jsonrpc::error_response(id, &budget::busy(what)))
                        .await;
                    continue;
                };
                let key = id_key(id);
                let state = state.clone();
                let registry = in_flight.clone();
                // Hold the registry lock across spawn and insert, so a fast task
                // cannot try to deregister before it was registered.
                let mut map = lock(&in_flight);
                let task_key = key.clone();
                let (cancel, mut cancelled) = oneshot::channel();
                map.insert(key, cancel);
                // Boxed: tokio copies a task's future when it spawns it and
                // again when it completes; a call's is kilobytes, a box's 16 bytes.
                tasks.spawn(Box::pin(async move {
                    // The call runs until its first wait before a cancel is
                    // heard: by then a tool call has its audit entry, which
                    // the cancel records as such. Aborted before it ever ran,
                    // a call cancelled at once had left no entry.
                    let reply = tokio::select! {
                        biased;
                        reply = dispatch(&state, admitted) => reply,
                        // A sender dropped unsent (another request took its
                        // id) cancels nothing.
                        Ok(()) = &mut cancelled => None,
                    };
                    // Deregister before replying: a cancel after this point is too late.
                    lock(&registry).remove(&task_key);
                    if let Some(reply) = reply {
                        state.send(reply).await;
                    }
                    drop(permit);
                }));
            }
        }
    };

    // Shut down: subscriptions end gracefully, in-flight work gets a moment.
    let _ = closing_tx.send(true);
    watcher.abort();
    let drain = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(limits.drain, drain).await.is_err() {
        tracing::warn!("in-flight requests did not finish in time; answering them as cut short");
        // Each call records itself `interrupted` and sends the shutdown error.
        state.late_records().interrupting();
        let answered = async { while tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(call_record::ANSWER_GRACE, answered)
            .await
            .is_err()
        {
            tracing::warn!("in-flight requests could not be answered in time; abandoning them");
            tasks.abort_all();
            // Dropping an aborted call queues its audit entry (`interrupted`),
            // unless it had handed one over already.
            while tasks.join_next().await.is_some() {}
            // Each still registered was dropped before it answered (a task
            // deregisters before its answer; a cancelled one was taken out):
            // answered here, not left with a closed pipe. Racing every call's
            // entry against the stop instead cost ~1.3 µs of CPU a call.
            let left: Vec<String> = lock(&in_flight).drain().map(|(id, _)| id).collect();
            for id in left {
                if let Ok(id) = serde_json::from_str::<Value>(&id) {
                    state
                        .send(jsonrpc::error_response(&id, &handler::abandoned()))
                        .await;
                }
            }
        }
    }
    state.late_records().wait(call_record::CALL_BOUND).await;
    drop(state);
    drop(out_tx);
    match writer.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(error = %e, "stdout closed before the last message"),
        Err(e) => tracing::error!(error = %e, "the stdout writer failed"),
    }
    Ok(reason)
}

/// Serves one admitted message on `state`, the transport-independent half of
/// the server: the reply, if one is due. The message's share of the memory
/// budget is held until it is served.
pub async fn dispatch(state: &Arc<State>, admitted: Admitted) -> Option<Value> {
    let Admitted { message, held } = admitted;
    let reply = match message {
        Incoming::Request { id, method, params } => {
            state.handle_request(&id, &method, params).await
        }
        Incoming::Notification { method, params } => {
            state.handle_notification(&method, params.as_ref());
            None
        }
        Incoming::Response { id, outcome } => {
            state.on_response(&id, outcome);
            None
        }
        // Batch elements: requests are answered in the batch reply.
        Incoming::Batch(items) => {
            let mut replies = Vec::new();
            for item in items {
                let reply = match jsonrpc::classify(item) {
                    Err(refusal) => Some(admit::refusal(&refusal)),
                    Ok(Message::Response { id, outcome }) => {
                        state.on_response(&id, outcome);
                        None
                    }
                    Ok(Message::Notification { method, params }) => {
                        state.handle_notification(&method, params.as_ref());
                        None
                    }
                    // 2025-03-26 keeps the handshake out of batches.
                    Ok(Message::Request { id, method, .. }) if method == "initialize" => {
                        Some(admit::refusal(&jsonrpc::invalid_request(
                            id,
                            "Invalid Request: initialize cannot be sent in a batch; send it on its own",
                        )))
                    }
                    Ok(Message::Request { id, method, params }) => {
                        state.handle_request(&id, &method, params).await
                    }
                };
                replies.extend(reply);
            }
            (!replies.is_empty()).then_some(Value::Array(replies))
        }
    };
    drop(held);
    reply
}

/// A request id as the in-flight registry keys it: its JSON text (`7` and
/// `"7"` are different requests), written into a buffer, not through `fmt`.
fn id_key(id: &Value) -> String {
    serde_json::to_string(id).expect("a JSON value serialises")
}

fn cancel(
    in_flight: &Mutex<HashMap<String, oneshot::Sender<()>>>,
    params: Option<&serde_json::Map<String, Value>>,
) {
    let Some(id) = params.and_then(|p| p.get("requestId")) else {
        return;
    };
    let key = id_key(id);
    if let Some(cancel) = lock(in_flight).remove(&key) {
        tracing::debug!(request = %jsonrpc::shorten(&key, 40), "cancelling a request");
        let _ = cancel.send(());
    }
}

/// Re-reads the actor now and then while someone listens, so a role change
/// or revocation is announced even if the client makes no call.
pub(crate) async fn watch_actor(state: Arc<State>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if state.has_listeners() {
            let _ = state.actor_now().await;
        }
    }
}

/// The one writer of stdout: a line per message, flushed when the queue is
/// empty (so answers that are ready together leave in one write).
async fn write_lines<W: AsyncWrite + Unpin>(
    output: W,
    mut rx: mpsc::Receiver<Value>,
) -> std::io::Result<()> {
    let mut output = tokio::io::BufWriter::with_capacity(64 * 1024, output);
    // One buffer for every line: a line of its own grew from nothing each time.
    let mut line = Vec::with_capacity(16 * 1024);
    while let Some(message) = rx.recv().await {
        line.clear();
        jsonrpc::write_line(&mut line, &message);
        output.write_all(&line).await?;
        // A large answer's room is not kept for the small ones after it.
        if line.capacity() > 1 << 20 {
            line = Vec::with_capacity(16 * 1024);
        }
        if rx.is_empty() {
            output.flush().await?;
        }
    }
    output.flush().await?;
    output.shutdown().await.ok();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything a served message's future holds, its task carries, and tokio
    /// copies a task's future whole when it spawns it and again when it
    /// completes; the paths few calls take (an approval hold, the writes, the
    /// fetch) are boxed so that every call does not pay for their state.
    #[tokio::test]
    async fn a_served_message_carries_no_state_of_the_rare_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let site = crate::site::init(&tmp.path().join("s"), Some("t"), false, None)
            .await
            .unwrap();
        let (out, _answers) = mpsc::channel(1);
        let (_closing, closing) = watch::channel(false);
        let state = Arc::new(State::new(site, Actor::public(), out, closing));
        let held = Arc::new(Semaphore::new(1)).try_acquire_owned().unwrap();
        let message = Incoming::Request {
            id: Value::from(1),
            method: "tools/call".into(),
            params: None,
        };
        let served = dispatch(&state, Admitted { message, held });
        let size = std::mem::size_of_val(&served);
        // 3.8 KB when this was written; 8.1 KB (9.2 KB in a release build) with
        // the approval hold's state inline.
        assert!(
            size <= 5 * 1024,
            "a served message's future is {size} bytes: box the path that grew it"
        );
    }
}
