//! Calling a tool: validation, a slot, dispatch (effect class fixed, attempt
//! recorded before sending), then exactly one final state.
//!
//! Failure rules: a call's own deadline kills the group (the server is stuck);
//! a kill, an exit or a protocol failure ends every pending call; a pending call
//! that may write ends `outcome_unknown`, a read-only one `failed`. A call
//! whose future is dropped on the wire is cancelled and recorded so
//! ([`CallInFlight`]).

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};
use std::time::Duration;

use tokio::sync::{Notify, SemaphorePermit, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::closed::Closed;
use super::connection::Connection;
use super::lifecycle::{CallRecord, CallState, EffectClass, StderrCounters, StreamEnd, new_id};
use super::negotiate::modern_meta;
use super::options::CallOptions;
use super::rpc::Reply;
use super::shared::{Command, Shared};
use crate::error::{Error, ErrorBody, codes};
use crate::mcp::wire::jsonrpc;
use crate::mcp::wire::revisions::Era;
use crate::sync::lock;
use crate::time::now_ms;

/// How a call ended, for the caller.
#[derive(Debug, Clone, Serialize)]
pub struct CallOutcome {
    pub call_id: String,
    pub state: CallState,
    pub result: Option<Value>,
    pub error: Option<ErrorBody>,
    pub record: CallRecord,
}

/// A call's clocks and cancel token, fixed when it is received.
struct Budget {
    total: Duration,
    inactivity: Option<Duration>,
    deadline: Instant,
    cancel: CancellationToken,
}

/// Why a call ends before its answer: its final state and the error.
struct Stop(CallState, Error);

/// A request on the wire: what waiting for its answer needs.
struct Sent {
    id: u64,
    effect: EffectClass,
    answer: oneshot::Receiver<Reply>,
    activity: Arc<Notify>,
}

impl Connection {
    /// Calls `tool` with `arguments`, recording every transition: validate,
    /// take a slot, dispatch, then wait for exactly one final state.
    pub async fn call_tool(&self, tool: &str, arguments: Value, opts: CallOptions) -> CallOutcome {
        let s = &self.shared;
        let total = opts.timeout.unwrap_or(s.limits.call_timeout);
        let budget = Budget {
            total,
            inactivity: opts.inactivity.or(s.limits.inactivity_timeout),
            deadline: Instant::now() + total,
            cancel: opts.cancel.unwrap_or_default(),
        };
        // Serialised once: its length goes into the record, its bytes on the wire.
        let args_json = serde_json::to_vec(&arguments).unwrap_or_default();
        let mut call = CallInFlight::new(s.clone(), tool, args_json.len() as u64);
        call.write().await;

        if let Err(Stop(state, e)) = self.validate(tool, &arguments) {
            return call.finish(state, None, Some(e)).await;
        }
        call.record.state = CallState::Validated;
        call.write().await;

        let _permit = match self.take_slot(&budget).await {
            Ok(permit) => permit,
            Err(Stop(state, e)) => return call.finish(state, None, Some(e)).await,
        };
        let sent = match self.dispatch(&mut call, tool, args_json, &budget).await {
            Ok(sent) => sent,
            Err(Stop(state, e)) => return call.finish(state, None, Some(e)).await,
        };
        self.await_answer(call, tool, sent, &budget).await
    }

    /// Shape only (the server validates against its schema), then whether the
    /// connection can take a call at all.
    fn validate(&self, tool: &str, arguments: &Value) -> Result<(), Stop> {
        let s = &self.shared;
        if tool.is_empty() || !arguments.is_object() {
            let e = Error::invalid(
                codes::CALL_INVALID,
                "a call needs a tool name and an object of arguments",
                "pass --args as a JSON object, for example '{\"message\":\"hi\"}'",
            );
            return Err(Stop(CallState::Failed, e));
        }
        if let Some(closed) = s.rpc.closed() {
            return Err(Stop(CallState::Failed, closed.error()));
        }
        // Only a stored connection has a pinned tool list to hold against; an
        // ad-hoc one (tests, tools) takes the server's list as it comes.
        if s.name.is_some() && s.rpc.tools_list_changed() {
            return Err(Stop(CallState::Failed, on_hold_error(s.name.as_deref())));
        }
        Ok(())
    }

    /// One of the connection's call slots, unless the caller cancels or the
    /// deadline passes first.
    async fn take_slot(&self, budget: &Budget) -> Result<SemaphorePermit<'_>, Stop> {
        let s = &self.shared;
        let permit = tokio::select! {
            biased;
            _ = budget.cancel.cancelled() => return Err(Stop(CallState::CancelledBeforeDispatch, cancelled_error())),
            p = s.slots.acquire() => match p {
                Ok(p) => p,
                Err(_) => return Err(Stop(CallState::Failed, Closed::Dropped.error())),
            },
            _ = tokio::time::sleep_until(budget.deadline) => {
                let e = Error::new(codes::CALL_TIMEOUT, "no free slot before the call's deadline")
                    .hint("fewer concurrent calls, or a longer --timeout");
                return Err(Stop(CallState::TimedOut, e));
            }
        };
        if budget.cancel.is_cancelled() {
            return Err(Stop(CallState::CancelledBeforeDispatch, cancelled_error()));
        }
        Ok(permit)
    }

    /// Fixes the effect class, writes the attempt to the record before
    /// sending, then puts the request on the wire within the deadline.
    async fn dispatch(
        &self,
        call: &mut CallInFlight,
        tool: &str,
        args_json: Vec<u8>,
        budget: &Budget,
    ) -> Result<Sent, Stop> {
        let s = &self.shared;
        let effect = lock(&s.tools)
            .get(tool)
            .copied()
            .unwrap_or(EffectClass::MayWrite);
        let id = s.rpc.next_id();
        call.record.effect = Some(effect);
        call.record.request_id = Some(id);
        call.record.state = CallState::Dispatched;
        call.record.dispatched_at_ms = Some(now_ms());
        if let Err(e) = s.recorder.record_call(&call.record).await {
            return Err(Stop(CallState::Failed, e));
        }
        let (answer, activity) = s
            .rpc
            .register(id)
            .map_err(|closed| Stop(CallState::Failed, closed.error()))?;
        call.on_wire = true;
        let modern = s.era() == Some(Era::Modern);
        let line = tools_call_line(id, tool, &args_json, modern, budget.inactivity.is_some());
        drop(args_json);
        // A child that stops reading stdin must not hold the call past its deadline.
        if tokio::time::timeout_at(budget.deadline, s.rpc.write_line(&line))
            .await
            .is_err()
        {
            s.rpc.unregister(id);
            call.on_wire = false;
            let closed = Closed::Timeout {
                tool: tool.to_string(),
                after: budget.total,
            };
            let _ = s.commands.send(Command::Kill(closed.clone()));
            return Err(Stop(CallState::TimedOut, closed.error()));
        }
        Ok(Sent {
            id,
            effect,
            answer,
            activity,
        })
    }

    /// Waits for the answer, the caller's cancel, or a deadline (total or
    /// inactivity, which progress moves), whichever comes first.
    async fn await_answer(
        &self,
        mut call: CallInFlight,
        tool: &str,
        sent: Sent,
        budget: &Budget,
    ) -> CallOutcome {
        let s = &self.shared;
        let Sent {
            id,
            effect,
            mut answer,
            activity,
        } = sent;
        let mut limits = Deadlines::new(
            budget.deadline,
            budget.total,
            budget.inactivity,
            Instant::now(),
        );
        loop {
            tokio::select! {
                biased;
                reply = &mut answer => {
                    call.on_wire = false;
                    return match reply {
                        Ok(Reply::Answer(Ok(result))) => self.settle_result(call, result).await,
                        Ok(Reply::Answer(Err(e))) => {
                            let err = Error::new(codes::REMOTE_ERROR, format!("the server answered with an error: {}", e.message))
                                .detail(json!({"code": e.code, "message": e.message, "data": e.data}));
                            call.finish(CallState::Failed, None, Some(err)).await
                        }
                        Ok(Reply::Closed(closed)) => self.settle_lost(call, effect, closed).await,
                        Err(_) => self.settle_lost(call, effect, s.rpc.closed().unwrap_or(Closed::Dropped)).await,
                    };
                }
                _ = budget.cancel.cancelled() => {
                    call.on_wire = false;
                    s.rpc.unregister(id);
                    s.send_line(jsonrpc::notification_line(
                        "notifications/cancelled",
                        &json!({"requestId": id, "reason": "cancelled by the caller"}),
                    ));
                    return call.finish(CallState::CancelledAfterDispatch, None, Some(cancelled_error())).await;
                }
                _ = activity.notified() => limits.on_activity(Instant::now()),
                _ = tokio::time::sleep_until(limits.next()) => {
                    let Some((after, what)) = limits.passed(Instant::now()) else { continue };
                    call.on_wire = false;
                    s.rpc.unregister(id);
                    let closed = Closed::Timeout { tool: tool.to_string(), after };
                    let _ = s.commands.send(Command::Kill(closed.clone()));
                    let mut e = closed.error();
                    e.message = format!("{} ({what})", e.message);
                    let e = e.detail(json!({"may_have_acted": effect == EffectClass::MayWrite, "limit": what}));
                    return call.finish(CallState::TimedOut, None, Some(e)).await;
                }
            }
        }
    }

    async fn settle_result(&self, call: CallInFlight, result: Value) -> CallOutcome {
        // 2026-07-28: every result names its type; an absent one is "complete".
        match result.get("resultType").and_then(|t| t.as_str()) {
            None | Some("complete") => call.finish(CallState::Completed, Some(result), None).await,
            Some("input_required") => {
                let e = Error::new(
                    codes::INPUT_REQUIRED_UNSUPPORTED,
                    "the server asked for more input (a multi round-trip request); Gatehouse does not provide it",
                );
                call.finish(CallState::Failed, Some(result), Some(e)).await
            }
            Some(other) => {
                let e = Error::new(
                    codes::PROTOCOL_VIOLATION,
                    format!("unknown resultType {other:?}"),
                );
                call.finish(CallState::Failed, Some(result), Some(e)).await
            }
        }
    }

    async fn settle_lost(
        &self,
        call: CallInFlight,
        effect: EffectClass,
        closed: Closed,
    ) -> CallOutcome {
        let e = closed.error();
        match effect {
            EffectClass::ReadOnly => call.finish(CallState::Failed, None, Some(e)).await,
            EffectClass::MayWrite => {
                let e = Error {
                    hint: Some(
                        "the tool may write and its answer was lost: the server may have acted; check before calling it again"
                            .into(),
                    ),
                    ..e
                };
                call.finish(CallState::OutcomeUnknown, None, Some(e)).await
            }
        }
    }
}

/// A call on a connection whose server announced a tool list change.
pub(crate) fn on_hold_error(name: Option<&str>) -> Error {
    let name = name.unwrap_or("NAME");
    Error::new(
        codes::CONNECTION_TOOLS_CHANGED,
        "the server announced mid-session that its tool list changed (notifications/tools/list_changed); its calls are on hold",
    )
    .hint(format!(
        "review the change with `gatehouse probe {name}` and approve it with `gatehouse connections approve {name}`"
    ))
    .detail(json!({"reason": "list_changed"}))
}

pub(super) fn cancelled_error() -> Error {
    Error::new(codes::CALL_CANCELLED, "the call was cancelled")
}

/// A `tools/call` request line built by hand around the already-serialised
/// arguments (the hot path: no intermediate `Value`). Its `_meta` carries, for
/// a modern server, the per-request version and capabilities, and, when the
/// caller watches for inactivity, a progress token (the request id): without
/// an inactivity timer progress changes nothing, so the server is not asked.
pub(super) fn tools_call_line(
    id: u64,
    tool: &str,
    args_json: &[u8],
    modern: bool,
    progress: bool,
) -> Vec<u8> {
    static MODERN_META: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let name = serde_json::to_string(tool).unwrap_or_default();
    let mut out = Vec::with_capacity(args_json.len() + name.len() + 256);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.to_string().as_bytes());
    out.extend_from_slice(b",\"method\":\"tools/call\",\"params\":{\"name\":");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b",\"arguments\":");
    out.extend_from_slice(if args_json.is_empty() {
        b"{}"
    } else {
        args_json
    });
    if modern || progress {
        out.extend_from_slice(b",\"_meta\":{");
        if modern {
            let meta = MODERN_META.get_or_init(|| {
                let full = modern_meta().to_string();
                // Without its braces, to splice the progress token in.
                full[1..full.len() - 1].to_string()
            });
            out.extend_from_slice(meta.as_bytes());
        }
        if progress {
            if modern {
                out.push(b',');
            }
            out.extend_from_slice(b"\"progressToken\":");
            out.extend_from_slice(id.to_string().as_bytes());
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"}}\n");
    out
}

/// A call between `received` and its final state. If its future is dropped
/// while the request is on the wire, it cancels it and records that.
struct CallInFlight {
    shared: Arc<Shared>,
    record: CallRecord,
    on_wire: bool,
    finished: bool,
}

impl CallInFlight {
    fn new(shared: Arc<Shared>, tool: &str, args_bytes: u64) -> Self {
        let record = CallRecord {
            call_id: new_id("call"),
            connection_id: shared.id.clone(),
            tool: tool.to_string(),
            state: CallState::Received,
            effect: None,
            request_id: None,
            args_bytes,
            error: None,
            exit: None,
            stderr: StderrCounters::default(),
            stdout_end: StreamEnd::Open,
            stderr_end: StreamEnd::Open,
            received_at_ms: now_ms(),
            dispatched_at_ms: None,
            finished_at_ms: None,
        };
        Self {
            shared,
            record,
            on_wire: false,
            finished: false,
        }
    }

    async fn write(&mut self) {
        if let Err(e) = self.shared.recorder.record_call(&self.record).await {
            tracing::warn!(error = %e, call_id = %self.record.call_id, "call record not written");
        }
    }

    fn fill_final(&mut self, state: CallState, error: Option<&Error>) {
        self.record.state = state;
        self.record.error = error.map(|e| e.body());
        let ends = *lock(&self.shared.ends);
        self.record.exit = ends.exit;
        self.record.stderr = self.shared.stderr_counters();
        self.record.stdout_end = ends.stdout;
        self.record.stderr_end = ends.stderr;
        self.record.finished_at_ms = Some(now_ms());
    }

    async fn finish(
        mut self,
        state: CallState,
        result: Option<Value>,
        mut error: Option<Error>,
    ) -> CallOutcome {
        self.finished = true;
        // A server can print what it was given: nothing of its secrets
        // reaches the caller, the record or the audit log. Its answers lost
        // them as they were read (`Rpc::route`); an error may also quote its
        // stderr or how it ended.
        let secrets = &self.shared.secrets;
        if let Some(e) = error.as_mut() {
            e.message = secrets.redact(std::mem::take(&mut e.message));
            if let Some(d) = e.detail.as_mut() {
                secrets.redact_json(d);
            }
        }
        self.fill_final(state, error.as_ref());
        if let Err(e) = self.shared.recorder.record_call(&self.record).await {
            tracing::warn!(error = %e, call_id = %self.record.call_id, "final call record not written");
        }
        CallOutcome {
            call_id: self.record.call_id.clone(),
            state,
            result,
            error: error.map(|e| e.body()),
            record: self.record.clone(),
        }
    }
}

impl Drop for CallInFlight {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let Some(id) = self.record.request_id else {
            // Dropped before dispatch.
            self.fill_final(CallState::CancelledBeforeDispatch, Some(&cancelled_error()));
            spawn_record(self.shared.clone(), self.record.clone());
            return;
        };
        if self.on_wire {
            self.shared.rpc.unregister(id);
            self.shared.send_line(jsonrpc::notification_line(
                "notifications/cancelled",
                &json!({"requestId": id, "reason": "the caller went away"}),
            ));
        }
        self.fill_final(CallState::CancelledAfterDispatch, Some(&cancelled_error()));
        spawn_record(self.shared.clone(), self.record.clone());
    }
}

fn spawn_record(shared: Arc<Shared>, record: CallRecord) {
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        rt.spawn(async move {
            let _ = shared.recorder.record_call(&record).await;
        });
    }
}

/// A dispatched call's two clocks: the total deadline, fixed at the start, and
/// the inactivity deadline, which progress (any message about the call) moves
/// forward. Kept apart from the `select!` so the rule is tested with explicit
/// instants, without a server or a wall clock.
#[derive(Debug, Clone, Copy)]
struct Deadlines {
    total_at: Instant,
    total: Duration,
    inactivity: Option<Duration>,
    idle_at: Option<Instant>,
}

impl Deadlines {
    fn new(total_at: Instant, total: Duration, inactivity: Option<Duration>, now: Instant) -> Self {
        Self {
            total_at,
            total,
            inactivity,
            idle_at: inactivity.map(|d| now + d),
        }
    }

    /// Progress: the inactivity clock starts again; the total one never does.
    fn on_activity(&mut self, now: Instant) {
        if let Some(d) = self.inactivity {
            self.idle_at = Some(now + d);
        }
    }

    /// When to look again.
    fn next(&self) -> Instant {
        self.idle_at.map_or(self.total_at, |i| i.min(self.total_at))
    }

    /// The limit that has passed at `now`, as (its length, its name); the
    /// total deadline wins when both have.
    fn passed(&self, now: Instant) -> Option<(Duration, &'static str)> {
        if now >= self.total_at {
            Some((self.total, "total deadline"))
        } else if self.idle_at.is_some_and(|i| now >= i) {
            Some((self.inactivity.unwrap_or(self.total), "inactivity timeout"))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_built_tools_call_line_is_the_json_it_means() {
        let args = serde_json::to_vec(&json!({"message": "he said \"hi\"\n"})).unwrap();
        for (modern, progress) in [(true, true), (true, false), (false, true), (false, false)] {
            let line = tools_call_line(7, "ec\"ho", &args, modern, progress);
            assert_eq!(line.last(), Some(&b'\n'));
            let v: Value = serde_json::from_slice(&line).unwrap();
            let mut params =
                json!({"name": "ec\"ho", "arguments": {"message": "he said \"hi\"\n"}});
            if modern {
                params["_meta"] = modern_meta().clone();
            }
            if progress {
                params["_meta"]["progressToken"] = json!(7);
            }
            assert_eq!(
                v,
                json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}),
                "modern {modern}, progress {progress}"
            );
        }
    }

    /// Progress every 100 ms keeps a call alive past many 700 ms inactivity
    /// windows, but not past its total deadline; silence ends it at the
    /// inactivity limit. Times are explicit instants, so no window can be
    /// missed by a slow machine.
    #[test]
    fn progress_resets_inactivity_but_never_the_total_deadline() {
        let ms = Duration::from_millis;
        let start = Instant::now();
        let at = |t: u64| start + ms(t);

        let mut d = Deadlines::new(at(1_000), ms(1_000), Some(ms(700)), start);
        for t in (100..1_000).step_by(100) {
            assert_eq!(d.passed(at(t)), None, "at {t} ms");
            d.on_activity(at(t));
            assert_eq!(d.next(), at(t + 700).min(at(1_000)));
        }
        assert_eq!(d.passed(at(1_000)), Some((ms(1_000), "total deadline")));

        // Silence after one progress message at 300 ms: over at 1 000 ms.
        let mut d = Deadlines::new(at(20_000), ms(20_000), Some(ms(700)), start);
        assert_eq!(d.next(), at(700));
        d.on_activity(at(300));
        assert_eq!(d.next(), at(1_000));
        assert_eq!(d.passed(at(999)), None);
        assert_eq!(d.passed(at(1_000)), Some((ms(700), "inactivity timeout")));

        // Both passed: the total deadline is the one named.
        let d = Deadlines::new(at(500), ms(500), Some(ms(500)), start);
        assert_eq!(d.passed(at(500)), Some((ms(500), "total deadline")));

        // Without an inactivity limit only the total deadline counts.
        let mut d = Deadlines::new(at(800), ms(800), None, start);
        d.on_activity(at(500));
        assert_eq!(d.next(), at(800));
        assert_eq!(d.passed(at(799)), None);
        assert_eq!(d.passed(at(800)), Some((ms(800), "total deadline")));
    }
}
