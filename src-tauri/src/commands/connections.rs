//! Commands for the Connections screen: the site's stored MCP connections,
//! connect (after consent, see `connection_edit`) and disconnect, their live
//! state, and each one's live stderr, several streams at once.
//!
//! Live stderr reaches the page through a `tauri::ipc::Channel`, which keeps
//! messages in order (events do not promise that). [`watch_stderr`] first sends
//! what the connection's [`StderrTail`] kept (with core's truncation marker
//! split out, so the page can show it as Gatehouse's note and not the child's;
//! the child's lines come with their controls made visible and their
//! look-alikes of Gatehouse's lines defanged),
//! then forwards a core [`Subscription`]: coalesced lines, "missed" gaps when the
//! page is slow, and byte counters with every message. Each stream has an id
//! the page chose; [`unwatch_stderr`] stops it (the screen does so when left).

use gatehouse_core::Error;
use gatehouse_core::connections::registry::{LiveConnection, LiveState};
use gatehouse_core::connections::{consent, saved};
use gatehouse_core::error::codes;
use gatehouse_core::mcp::client::{EndReason, LiveUsage};
use gatehouse_core::sandbox::stderr::{
    StderrCounters, StderrTail, Subscription, TailEvent, TailSnapshot,
};
use gatehouse_core::sandbox::{ExitInfo, Isolation};
use serde::Serialize;
use tauri::State;
use tauri::ipc::Channel;

use crate::error::IpcResult;
use crate::live::check_id;
use crate::state::AppState;

/// One message on a tail stream, as the page receives it.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TailMessage {
    /// What the tail kept before the page subscribed. When bytes were dropped,
    /// `marker` is core's exact truncation marker, which sat between `before`
    /// (the kept head) and `after` (the kept tail).
    Snapshot {
        before: Vec<String>,
        marker: Option<String>,
        after: Vec<String>,
        counters: StderrCounters,
    },
    /// Complete lines, in stream order (one message may carry many).
    Lines {
        lines: Vec<String>,
        counters: StderrCounters,
    },
    /// The page fell behind and these lines were dropped for it, here.
    Missed {
        lines: u64,
        bytes: u64,
        counters: StderrCounters,
    },
    /// The stream is over; no message follows.
    End { counters: StderrCounters },
}

/// A snapshot as the page receives it: core says where its marker sits.
fn snapshot_message(snapshot: &TailSnapshot, counters: StderrCounters) -> TailMessage {
    let (before, marker, after) = snapshot.parts();
    TailMessage::Snapshot {
        before: lines(before),
        marker: marker.map(str::to_owned),
        after: lines(after),
        counters,
    }
}

/// The stream of a tail whose child is gone, as a live one would have ended:
/// what it kept, then the end (the actor preview's short-lived servers).
pub(crate) fn ended_tail(snapshot: &TailSnapshot) -> Vec<TailMessage> {
    let counters = StderrCounters {
        bytes_seen: snapshot.bytes_seen,
        bytes_retained: snapshot.bytes_retained,
        truncated: snapshot.truncated,
    };
    vec![
        snapshot_message(snapshot, counters),
        TailMessage::End { counters },
    ]
}

/// The lines of `text`, whose last line may or may not end in a newline, as
/// the child's text: controls visible, look-alikes of Gatehouse's own lines
/// defanged (see [`gatehouse_core::text::child_line`]).
fn lines(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    let text = text.strip_suffix('\n').unwrap_or(text);
    text.split('\n')
        .map(gatehouse_core::text::child_line)
        .collect()
}

/// At most one batch per stream per this long reaches the page, whatever the
/// child writes: four a second per tail (ten floods at 100 ms cost the page
/// more long frames; docs/bench.md, "The desktop app").
const FRAME: std::time::Duration = std::time::Duration::from_millis(250);
/// At most this many lines per batch: the page keeps 2,000 per tail, and a
/// flood is read from its newest lines; the others arrive as a gap notice.
const LINES_PER_FRAME: usize = 500;

/// Forwards `subscription` to `channel` until the stream ends, the page goes
/// away or `stop` resolves; returns whether the end was delivered. A batch
/// per [`FRAME`] at most: ten flooding servers must not flood the page.
pub async fn forward_tail(
    tail: &StderrTail,
    mut subscription: Subscription,
    channel: &Channel<TailMessage>,
    stop: impl Future<Output = ()>,
) -> bool {
    tokio::pin!(stop);
    let mut next = tokio::time::Instant::now();
    loop {
        // Wait for something, then for the frame (what comes meanwhile joins
        // the batch; the subscription's own bound turns excess into a gap).
        let first = tokio::select! {
            event = subscription.recv() => event,
            () = &mut stop => return false,
        };
        let Some(first) = first else {
            return true;
        };
        if first != TailEvent::End {
            tokio::select! {
                () = tokio::time::sleep_until(next) => {}
                () = &mut stop => return false,
            }
        }
        let mut batch = vec![first];
        while let Some(event) = subscription.try_recv() {
            batch.push(event);
        }
        for event in gatehouse_core::sandbox::stderr::coalesce(batch, LINES_PER_FRAME) {
            let counters = tail.counters();
            let (message, last) = match event {
                TailEvent::Lines(lines) => {
                    let lines = lines
                        .iter()
                        .map(|l| gatehouse_core::text::child_line(l))
                        .collect();
                    (TailMessage::Lines { lines, counters }, false)
                }
                TailEvent::Missed { lines, bytes } => (
                    TailMessage::Missed {
                        lines,
                        bytes,
                        counters,
                    },
                    false,
                ),
                TailEvent::End => (TailMessage::End { counters }, true),
            };
            if channel.send(message).is_err() {
                // The page went away (reload or window closed): nobody to tell.
                return false;
            }
            if last {
                return true;
            }
        }
        next = tokio::time::Instant::now() + FRAME;
    }
}

/// A connection as the list shows it. Env values are never included: a
/// stored connection may name host variables that hold secrets.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct ConnectionView {
    pub name: String,
    pub program: String,
    pub args: Vec<String>,
    pub live: Option<LiveView>,
}

/// What this window knows of a connection it started.
#[derive(Debug, Serialize, ts_rs::TS)]
pub struct LiveView {
    pub id: String,
    pub pid: i32,
    pub state: LiveState,
    pub server_name: Option<String>,
    pub server_version: Option<String>,
    pub protocol_version: String,
    pub exit: Option<ExitInfo>,
    /// Why it ended.
    pub end_reason: Option<EndReason>,
    /// The same in words: which deadline, ceiling or exit.
    pub end_message: Option<String>,
    pub counters: StderrCounters,
    /// Uptime, memory, CPU and calls in flight while it runs.
    pub usage: Option<LiveUsage>,
    /// How the server is confined; a layer weaker than its profile asks for
    /// is named in the warnings (issue 10: never silently).
    pub isolation: Isolation,
    /// Connected, but its server announced a tool list change: its calls are
    /// refused until an admin approves the new list (issue 10 §6).
    pub on_hold: bool,
}

impl LiveView {
    fn of(live: &LiveConnection) -> Self {
        let server = live.conn.server();
        // A connection that ended by itself has no final record here (only a
        // close from this window keeps one): its run says how it ended.
        let run = live.conn.record();
        Self {
            id: live.conn.id().to_string(),
            pid: live.conn.pid(),
            state: live.state(),
            server_name: server.name,
            server_version: server.version,
            protocol_version: server.protocol_version,
            exit: live.record.as_ref().and_then(|r| r.exit).or(run.exit),
            end_reason: live
                .record
                .as_ref()
                .and_then(|r| r.end_reason)
                .or(run.end_reason),
            end_message: live.conn.end_message(),
            counters: live.conn.stderr().counters(),
            usage: live.conn.usage(),
            isolation: live.conn.isolation().clone(),
            on_hold: live.state() == LiveState::Connected && live.conn.tools_list_changed(),
        }
    }
}

fn not_open(name: &str) -> Error {
    Error::invalid(
        codes::CONNECTION_NOT_OPEN,
        format!("connection {name} was not started in this window"),
        "press Connect first",
    )
}

/// The arguments of the `list_connections` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ListConnectionsArgs {}

/// The site's stored connections, with the state of those started here.
#[tauri::command(rename_all = "snake_case")]
pub async fn list_connections(
    args: ListConnectionsArgs,
    state: State<'_, AppState>,
) -> IpcResult<Vec<ConnectionView>> {
    let ListConnectionsArgs {} = args;
    let site = state.site()?;
    Ok(saved::list(&site.store)
        .await?
        .into_iter()
        .map(|c| ConnectionView {
            live: state.connections.get(&c.name).as_ref().map(LiveView::of),
            name: c.name,
            program: c.spec.program,
            args: c.spec.args,
        })
        .collect())
}

/// The arguments of the `open_connection` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct OpenConnectionArgs {
    pub name: String,
}

/// Starts stored connection `name` (or returns it if it is still running).
/// `CONSENT_REQUIRED` (what to show in its detail) until the admin agreed to
/// spawn exactly this definition.
#[tauri::command(rename_all = "snake_case")]
pub async fn open_connection(
    args: OpenConnectionArgs,
    state: State<'_, AppState>,
) -> IpcResult<LiveView> {
    let OpenConnectionArgs { name } = args;
    let live = state
        .connections
        .open(&name, async {
            let site = state.site()?;
            let stored = saved::get(&site.store, &name).await?;
            consent::require(&site, &stored).await?;
            // Checked against the connection's tool pin (CONNECTION_TOOLS_CHANGED).
            saved::open(&site, &name).await
        })
        .await?;
    Ok(LiveView::of(&live))
}

/// The arguments of the `close_connection` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct CloseConnectionArgs {
    pub name: String,
}

/// Closes connection `name`: stdin closed, the server waited for, its group
/// signalled if it lingers, the final record written.
#[tauri::command(rename_all = "snake_case")]
pub async fn close_connection(
    args: CloseConnectionArgs,
    state: State<'_, AppState>,
) -> IpcResult<LiveView> {
    let CloseConnectionArgs { name } = args;
    let live = state
        .connections
        .close(&name)
        .await
        .ok_or_else(|| not_open(&name))?;
    Ok(LiveView::of(&live))
}

/// The arguments of the `connection_status` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct ConnectionStatusArgs {
    pub name: String,
}

/// Connection `name` as this window knows it now (state, usage, end).
#[tauri::command(rename_all = "snake_case")]
pub async fn connection_status(
    args: ConnectionStatusArgs,
    state: State<'_, AppState>,
) -> IpcResult<LiveView> {
    let ConnectionStatusArgs { name } = args;
    let live = state
        .connections
        .get(&name)
        .ok_or_else(|| not_open(&name))?;
    Ok(LiveView::of(&live))
}

/// The arguments of the `watch_stderr` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct WatchStderrArgs {
    pub name: String,
    pub stream: String,
}

/// Streams connection `name`'s stderr to `on_event` as stream `stream` (an id
/// the page chose): what was kept, then live lines until the server's stderr
/// ends, the page goes away, or [`unwatch_stderr`] stops it.
#[tauri::command(rename_all = "snake_case")]
pub async fn watch_stderr(
    args: WatchStderrArgs,
    on_event: Channel<TailMessage>,
    state: State<'_, AppState>,
) -> IpcResult<bool> {
    let WatchStderrArgs { name, stream } = args;
    check_id(&stream)?;
    let live = state
        .connections
        .get(&name)
        .ok_or_else(|| not_open(&name))?;
    let handle = state.streams.begin(&stream);
    let tail = live.conn.stderr().clone();
    // One step: no line written in between shows twice or goes missing.
    let (snapshot, subscription) = tail.follow();
    let delivered = on_event
        .send(snapshot_message(&snapshot, tail.counters()))
        .is_ok()
        && forward_tail(&tail, subscription, &on_event, handle.token.cancelled()).await;
    state.streams.end(&stream, &handle);
    Ok(delivered)
}

/// The arguments of the `unwatch_stderr` command, as the page sends them.
#[derive(serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct UnwatchStderrArgs {
    pub stream: String,
}

/// Stops stream `stream`; false if it was not running.
#[tauri::command(rename_all = "snake_case")]
pub async fn unwatch_stderr(
    args: UnwatchStderrArgs,
    state: State<'_, AppState>,
) -> IpcResult<bool> {
    let UnwatchStderrArgs { stream } = args;
    check_id(&stream)?;
    Ok(state.streams.cancel(&stream))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_core::sandbox::stderr::TailLimits;
    use serde_json::json;

    const COUNTERS: StderrCounters = StderrCounters {
        bytes_seen: 5,
        bytes_retained: 4,
        truncated: true,
    };

    /// `ui/src/ipc.ts` declares this shape; a rename here must show up there.
    #[test]
    fn messages_serialize_as_the_page_expects() {
        let counters = json!({"bytes_seen": 5, "bytes_retained": 4, "truncated": true});
        let cases = [
            (
                TailMessage::Lines {
                    lines: vec!["a".into()],
                    counters: COUNTERS,
                },
                json!({"kind": "lines", "lines": ["a"], "counters": counters}),
            ),
            (
                TailMessage::Missed {
                    lines: 2,
                    bytes: 9,
                    counters: COUNTERS,
                },
                json!({"kind": "missed", "lines": 2, "bytes": 9, "counters": counters}),
            ),
            (
                TailMessage::Snapshot {
                    before: vec!["h".into()],
                    marker: Some("[m]".into()),
                    after: vec!["t".into()],
                    counters: COUNTERS,
                },
                json!({"kind": "snapshot", "before": ["h"], "marker": "[m]", "after": ["t"], "counters": counters}),
            ),
            (
                TailMessage::End { counters: COUNTERS },
                json!({"kind": "end", "counters": counters}),
            ),
        ];
        for (message, expected) in cases {
            assert_eq!(serde_json::to_value(&message).unwrap(), expected);
        }
    }

    fn small_tail() -> StderrTail {
        StderrTail::new(TailLimits {
            head_bytes: 16,
            tail_bytes: 64,
            ..TailLimits::default()
        })
    }

    #[test]
    fn snapshot_splits_at_cores_marker_only() {
        let tail = small_tail();
        for i in 0..40 {
            tail.push(format!("line {i:02}\n").as_bytes());
        }
        // A look-alike line from the child must stay an ordinary line.
        let fake = "[stderr truncated: kept last 9 of 9 bytes]";
        tail.push(format!("{fake}\n").as_bytes());
        let snapshot = tail.snapshot();
        assert!(snapshot.truncated);
        let TailMessage::Snapshot {
            before,
            marker,
            after,
            ..
        } = snapshot_message(&snapshot, tail.counters())
        else {
            panic!("not a snapshot");
        };
        assert_eq!(before, ["line 00", "line 01"]);
        assert_eq!(
            marker.as_deref(),
            Some(
                format!(
                    "[stderr truncated: kept first 16 and last 64 of {} bytes]",
                    40 * 8 + fake.len() + 1
                )
                .as_str()
            )
        );
        // Shown as the child's, defanged: only core's marker starts so.
        let shown = format!("\\u005b{}", &fake[1..]);
        assert_eq!(after.last(), Some(&shown));
        assert_eq!(after.iter().filter(|l| l.starts_with("[stderr")).count(), 0);
    }

    #[test]
    fn snapshot_without_truncation_is_all_lines() {
        let tail = small_tail();
        tail.push(b"one\ntwo\n");
        let TailMessage::Snapshot {
            before,
            marker,
            after,
            counters,
        } = snapshot_message(&tail.snapshot(), tail.counters())
        else {
            panic!("not a snapshot");
        };
        assert_eq!(before, ["one", "two"]);
        assert_eq!(marker, None);
        assert!(after.is_empty());
        assert_eq!(
            counters,
            StderrCounters {
                bytes_seen: 8,
                bytes_retained: 8,
                truncated: false
            }
        );
    }
}
