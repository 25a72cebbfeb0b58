//! Starting a stored connection: settling dead runs, connecting under the
//! tool pin, and the one-call operations the CLI offers.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

use super::{SavedConnection, get};
use crate::access::audit;
use crate::access::audit::AuditAction;
use crate::connections::pin::{self, PinStatus};
use crate::connections::recorder::{LOCAL_ADMIN, StoreRecorder};
use crate::error::{Error, ErrorBody, Result, codes};
use crate::mcp::client::call::CallOutcome;
use crate::mcp::client::connection::Connection;
use crate::mcp::client::lifecycle::{CallState, ConnectionRun};
use crate::mcp::client::options::{CallOptions, ConnectOptions};
use crate::mcp::client::{EndReason, ToolInfo};
use crate::sandbox::probe::Ceiling;
use crate::sandbox::stderr::{TailEvent, TailSnapshot};
use crate::sandbox::{self, ExitInfo, Isolation, ScratchRoot};
use crate::site::Site;
use crate::store::{self, Store};

/// Where a site's scratch directories live: outside every site (see
/// [`sandbox::scratch::default_root`]); swept of dead hosts' runs when opened.
pub fn scratch_root(site: &Site) -> Result<ScratchRoot> {
    let path = sandbox::scratch::default_root()?;
    let real = |p: &std::path::Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    if real(&path).starts_with(real(&site.dir)) {
        return Err(Error::invalid(
            codes::SCRATCH_UNSAFE,
            format!("the scratch root {} is inside the site", path.display()),
            format!(
                "a server could reach the site's files from there; point {} outside the site",
                sandbox::scratch::ENV_SCRATCH_DIR
            ),
        ));
    }
    let (root, report) = ScratchRoot::open(path)?;
    if !report.removed.is_empty() {
        tracing::info!(
            count = report.removed.len(),
            "swept scratch directories left by a killed host"
        );
    }
    Ok(root.for_site(&site.dir))
}

/// Settles the runs of this site whose host was killed (SIGKILL of `gatehouse
/// call`, a crash): the sweep has killed their processes (PID + start time
/// checked) and removed their scratch; here their connection record ends
/// `host_killed` and every unfinished call `outcome_unknown`. Runs at every
/// start of a connection; returns the call ids closed.
pub async fn recover(site: &Site) -> Result<Vec<String>> {
    let root = scratch_root(site)?;
    let mut closed = Vec::new();
    for run in root.take_dead_runs(&site.dir) {
        let Some(child) = run.owner.child else {
            continue;
        };
        let error = Error::new(
            codes::HOST_KILLED,
            format!(
                "the process running this call was killed before the call finished; its server (pid {}) was killed by the next start",
                child.pid
            ),
        )
        .hint("the server may have acted: check before calling the tool again");
        let body = error.body();
        let error = serde_json::to_string(&body).expect("error serialises");
        let mut tx = site.store.begin_write().await?;
        let calls = store::calls::close_killed_run_in(
            &mut tx,
            child.pid as i64,
            run.owner.spawned_at_ms,
            &error,
            EndReason::HostKilled.as_str(),
            crate::time::now_ms(),
        )
        .await?;
        // Every call's end is audited, this one too (no call without its entry).
        for (call_id, tool, connection_id) in &calls {
            audit::append(
                &mut tx,
                audit::AuditEntry {
                    actor: LOCAL_ADMIN,
                    action: AuditAction::McpClientCall,
                    subject: tool,
                    detail: json!({
                        "connection_id": connection_id,
                        "call_id": call_id,
                        "state": CallState::OutcomeUnknown.as_str(),
                        "code": body.code,
                    }),
                },
            )
            .await?;
        }
        tx.commit()
            .await
            .map_err(|e| Error::storage("closing the records of a killed run", e))?;
        tracing::warn!(
            pid = child.pid,
            killed = run.killed.len(),
            calls = calls.len(),
            "settled a run whose host was killed"
        );
        let ids: Vec<String> = calls.into_iter().map(|(id, _, _)| id).collect();
        closed.extend(ids);
    }
    Ok(closed)
}

/// The memory ceiling and CPU-time budget a connection runs under: its own,
/// else the site's defaults (`[limits]` in `gatehouse.toml`, else 1 GiB and
/// 10 minutes). A connection may set them higher or lower than the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Ceilings {
    pub max_rss_bytes: u64,
    /// The site's default, not the connection's own.
    pub max_rss_default: bool,
    pub max_cpu_ms: u64,
    pub max_cpu_default: bool,
}

impl Ceilings {
    /// How a child of `profile` under these ceilings is confined here, as
    /// the connection reports it once running (the ceilings filled in the
    /// way `Connection::connect` fills them).
    pub fn isolation(&self, profile: &sandbox::Profile) -> Isolation {
        let mut profile = profile.clone();
        profile.max_memory_bytes = profile.max_memory_bytes.or(Some(self.max_rss_bytes));
        profile.max_cpu_ms = profile.max_cpu_ms.or(Some(self.max_cpu_ms));
        sandbox::probe::describe(&profile).with_ceilings(
            Some(Ceiling {
                value: self.max_rss_bytes,
                site_default: self.max_rss_default,
            }),
            Some(Ceiling {
                value: self.max_cpu_ms,
                site_default: self.max_cpu_default,
            }),
        )
    }

    /// `saved`'s own ceilings, the site's `[limits]` where it sets none
    /// (refused when that table is).
    pub fn of(site: &Site, saved: &SavedConnection) -> Result<Ceilings> {
        let defaults = site.file.limits()?;
        Ok(Ceilings {
            max_rss_bytes: saved
                .limits
                .max_rss_bytes
                .unwrap_or_else(|| defaults.max_rss_bytes()),
            max_rss_default: saved.limits.max_rss_bytes.is_none(),
            max_cpu_ms: saved
                .limits
                .max_cpu_ms
                .unwrap_or_else(|| defaults.max_cpu_ms()),
            max_cpu_default: saved.limits.max_cpu_ms.is_none(),
        })
    }
}

/// Options to connect `saved` with records going to the site's store. Makes
/// this process the subreaper of its children's orphans (see [`sandbox::become_subreaper`]).
pub fn connect_options(site: &Site, saved: &SavedConnection) -> Result<ConnectOptions> {
    if let Err(e) = sandbox::become_subreaper() {
        tracing::warn!(error = %e, "killed grandchildren may linger as zombies");
    }
    let recorder = std::sync::Arc::new(StoreRecorder::new(site.store.clone()));
    let mut o = ConnectOptions::new(saved.spec.clone(), scratch_root(site)?, recorder);
    o.name = Some(saved.name.clone());
    o.profile = saved.limits.sandbox.clone();
    if let Some(ms) = saved.limits.timeout_ms {
        o.limits.call_timeout = Duration::from_millis(ms);
    }
    o.limits.inactivity_timeout = saved.limits.inactivity_ms.map(Duration::from_millis);
    let ceilings = Ceilings::of(site, saved)?;
    o.limits.max_rss_bytes = Some(ceilings.max_rss_bytes);
    o.limits.max_cpu = Some(Duration::from_millis(ceilings.max_cpu_ms));
    o.limits.ceilings_site_default = (ceilings.max_rss_default, ceilings.max_cpu_default);
    Ok(o)
}

/// Connects `saved` and checks its tools against the pin (pinning them on
/// the first connect); a changed list closes the connection and is refused
/// with `CONNECTION_TOOLS_CHANGED` (see [`pin`]).
async fn connect_pinned(site: &Site, saved: &SavedConnection) -> Result<(Connection, PinStatus)> {
    recover(site).await?;
    let conn = Connection::connect(connect_options(site, saved)?).await?;
    match pin::check(
        &site.store,
        LOCAL_ADMIN,
        &saved.name,
        &saved.spec,
        &conn.tools(),
    )
    .await
    {
        Ok(status) => Ok((conn, status)),
        Err(e) => {
            conn.close().await;
            Err(e)
        }
    }
}

/// Opens stored connection `name` for a long-lived host (the desktop app):
/// dead runs settled, the server started, its tools checked against the pin.
/// The caller checks [`Connection::tools_list_changed`] and calls [`hold`]
/// when it turns true (its calls are refused meanwhile; [`call_open`] does
/// both), and lifts the hold with [`approve_live`].
pub async fn open(site: &Site, name: &str) -> Result<Connection> {
    let saved = get(&site.store, name).await?;
    connect_pinned(site, &saved).await.map(|(conn, _)| conn)
}

/// Records the hold of a connection whose server announced a tool list
/// change, with its list as it is now; returns the error its calls get.
pub async fn hold(site: &Site, name: &str, conn: &Connection) -> Error {
    hold_if_changed(site, name, conn)
        .await
        .unwrap_or_else(|| crate::mcp::client::call::on_hold_error(Some(name)))
}

/// Calls `tool` on connection `name`, opened with [`open`] by a long-lived
/// host: a server that announced a tool list change (before or while
/// answering) has its hold recorded at once, and a call refused for the hold
/// gets the hold's error, which says what changed.
pub async fn call_open(
    site: &Site,
    name: &str,
    conn: &Connection,
    tool: &str,
    arguments: Value,
    opts: CallOptions,
) -> CallOutcome {
    let mut out = conn.call_tool(tool, arguments, opts).await;
    if let Some(held) = hold_if_changed(site, name, conn).await
        && out.state != CallState::Completed
    {
        out.error = Some(held.body());
    }
    out
}

/// Approves the tool change live connection `name` (opened with [`open`]) is
/// held for, as [`approve`] does, and lifts its hold in place when the list
/// its server offers now is the approved one: the session goes on with it.
/// A server whose list moved on again since the change was shown stays on
/// hold, and the new difference is recorded and returned
/// (`CONNECTION_TOOLS_CHANGED`), like any hold.
pub async fn approve_live(
    site: &Site,
    actor: &str,
    name: &str,
    conn: &Connection,
) -> Result<pin::Approval> {
    // Taken before the list is read: an announcement after it keeps the hold.
    let mark = conn.hold_mark();
    let approval = approve(&site.store, actor, name).await?;
    let Some(approved) = approval.approved_sha256.as_deref() else {
        // The held list could not be read: the approval dropped the pin.
        return Err(Error::new(
            codes::CONNECTION_TOOLS_CHANGED,
            format!("connection {name}'s new tool list could not be read, so it stays on hold"),
        )
        .hint("disconnect and connect again: the next connect pins the list it offers then"));
    };
    let offered = conn.list_tools().await?;
    if pin::diff::tools_hash(&pin::diff::snapshot(&offered)) != approved {
        return Err(pin::hold(&site.store, actor, name, Some(&offered))
            .await
            .unwrap_or_else(|e| e));
    }
    conn.lift_hold(mark);
    Ok(approval)
}

/// After a session, or whenever a long-lived host looks: a server that
/// announced a tool list change puts its connection on hold (recorded with
/// its new list when it can be read); returns the hold's error, which says
/// what changed, or `None` when the connection is not on hold.
pub async fn hold_if_changed(site: &Site, name: &str, conn: &Connection) -> Option<Error> {
    if !conn.tools_list_changed() {
        return None;
    }
    let relisted = conn.list_tools().await.ok();
    // Either the hold's error, or why the hold could not be recorded.
    Some(
        pin::hold(&site.store, LOCAL_ADMIN, name, relisted.as_deref())
            .await
            .unwrap_or_else(|e| e),
    )
}

/// The tools open connection `name` lists now, checked against its pin: a
/// server that changed its list without announcing it is held as one that
/// announced it (its calls refused, the change recorded for approval), and
/// the error says what changed. A list read again was shown as it came,
/// tools nobody approved included, with a call form for each.
pub async fn list_open(site: &Site, name: &str, conn: &Connection) -> Result<Vec<ToolInfo>> {
    if let Some(held) = hold_if_changed(site, name, conn).await {
        return Err(held);
    }
    let tools = conn.list_tools().await?;
    // The answer is a barrier: a change the server announced before it
    // answered has been read by now.
    if let Some(held) = hold_if_changed(site, name, conn).await {
        return Err(held);
    }
    if pin::is_pinned(&site.store, name, &tools).await? {
        return Ok(tools);
    }
    conn.hold_now();
    Err(pin::hold(&site.store, LOCAL_ADMIN, name, Some(&tools))
        .await
        .unwrap_or_else(|e| e))
}

/// A stored connection with its pin, for `connections show`.
#[derive(Debug, Clone, Serialize)]
pub struct ConnectionView {
    #[serde(flatten)]
    pub connection: SavedConnection,
    /// The approved tool list's pin; `None` before the first connect.
    pub pin: Option<PinStatus>,
    /// How its server would be confined on this host now (missing layers in
    /// its warnings).
    pub isolation: Isolation,
    /// The memory and CPU ceilings it runs under, site defaults filled in.
    pub ceilings: Ceilings,
}

pub async fn show(site: &Site, name: &str) -> Result<ConnectionView> {
    let connection = get(&site.store, name).await?;
    let pin = pin::status(&site.store, name).await?;
    let ceilings = Ceilings::of(site, &connection)?;
    let isolation = ceilings.isolation(&connection.limits.sandbox);
    Ok(ConnectionView {
        connection,
        pin,
        isolation,
        ceilings,
    })
}

/// Approves the tool change connection `name` is held for (see [`pin::approve`]).
pub async fn approve(store: &Store, actor: &str, name: &str) -> Result<pin::Approval> {
    let saved = get(store, name).await?;
    pin::approve(store, actor, name, &saved.spec).await
}

/// stderr as reported by `probe` and `call`.
#[derive(Debug, Clone, Serialize)]
pub struct StderrReport {
    pub bytes_seen: u64,
    pub bytes_retained: u64,
    pub truncated: bool,
    pub tail: String,
}

impl From<TailSnapshot> for StderrReport {
    fn from(s: TailSnapshot) -> Self {
        Self {
            bytes_seen: s.bytes_seen,
            bytes_retained: s.bytes_retained,
            truncated: s.truncated,
            tail: shown_text(&s),
        }
    }
}

/// The kept text with the child's look-alikes of Gatehouse's own lines
/// defanged; the real marker (known by position, not by text) kept as is.
fn shown_text(s: &TailSnapshot) -> String {
    let (before, marker, after) = s.parts();
    let mut out = crate::text::defang_own_lines(before).into_owned();
    if let Some(m) = marker {
        out.push_str(m);
        out.push('\n');
        out.push_str(&crate::text::defang_own_lines(after));
    }
    out
}

/// What `gatehouse probe NAME --json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeReport {
    pub server: Value,
    pub tools: Vec<Value>,
    pub stderr: StderrReport,
    pub exit: Option<ExitInfo>,
    /// How the server was confined; a missing layer is named in its warnings.
    pub isolation: Isolation,
    /// The approved tool list this connect was checked against.
    pub pin: PinStatus,
}

/// Connects, negotiates, lists tools, disconnects.
pub async fn probe(site: &Site, name: &str) -> Result<ProbeReport> {
    let saved = get(&site.store, name).await?;
    let (conn, pin) = connect_pinned(site, &saved).await?;
    let isolation = conn.isolation().clone();
    let server = conn.server();
    let tools = conn.tools();
    let stderr = conn.stderr().clone();
    let held = hold_if_changed(site, name, &conn).await;
    let record = conn.close().await;
    if let Some(e) = held {
        return Err(e);
    }
    Ok(ProbeReport {
        server: json!({
            "name": server.name,
            "version": server.version,
            "protocol_version": server.protocol_version,
            "era": server.era,
        }),
        tools: tools
            .into_iter()
            .map(|t| json!({"name": t.name, "description": t.description, "annotations": t.annotations}))
            .collect(),
        stderr: stderr.excerpt().into(),
        exit: record.exit,
        isolation,
        pin,
    })
}

/// What `gatehouse call NAME TOOL --json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct CallReport {
    pub call_id: String,
    pub state: CallState,
    pub result: Option<Value>,
    pub error: Option<ErrorBody>,
    /// A call that completed before its server changed its tool list: the
    /// hold the session recorded (later calls are refused until approved).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<ErrorBody>,
    pub stderr: StderrReport,
}

/// Connects, calls `tool` once, disconnects. A call that did not complete is
/// an `Err` whose code is the call's and whose detail is the whole report.
pub async fn call(site: &Site, name: &str, tool: &str, arguments: Value) -> Result<CallReport> {
    let saved = get(&site.store, name).await?;
    let (conn, _) = connect_pinned(site, &saved).await?;
    let mut out = conn
        .call_tool(tool, arguments, CallOptions::default())
        .await;
    let stderr = conn.stderr().clone();
    let held = match hold_if_changed(site, name, &conn).await {
        Some(held) => Some(held),
        // Before the session ends, one more request: what the server sent
        // before answering it (a change announced just after the call's
        // answer) has been read, and a list changed unannounced is held too.
        None if out.state == CallState::Completed => list_open(site, name, &conn)
            .await
            .err()
            .filter(|e| e.code == codes::CONNECTION_TOOLS_CHANGED),
        None => None,
    };
    let held = held.map(|h| h.body());
    if out.state != CallState::Completed && held.is_some() {
        // Refused for the hold: say what changed.
        out.error = held.clone();
    }
    conn.close().await;
    let report = CallReport {
        call_id: out.call_id,
        held: held.filter(|_| out.state == CallState::Completed),
        state: out.state,
        result: out.result,
        error: out.error,
        stderr: stderr.excerpt().into(),
    };
    match (&report.state, &report.error) {
        (CallState::Completed, _) => Ok(report),
        (_, Some(e)) => Err(Error {
            code: e.code,
            message: e.message.clone(),
            hint: e.hint.clone(),
            detail: Some(serde_json::to_value(&report).expect("report serialises")),
        }),
        (_, None) => Err(Error::new(
            codes::REMOTE_ERROR,
            format!("the call ended {}", report.state.as_str()),
        )),
    }
}

/// Connects and hands live stderr to the caller until the server exits or
/// `stop` resolves; then disconnects and returns the final record.
pub async fn tail(
    site: &Site,
    name: &str,
    stop: impl std::future::Future<Output = ()>,
    mut on_event: impl FnMut(TailEvent),
) -> Result<ConnectionRun> {
    let saved = get(&site.store, name).await?;
    let (conn, _) = connect_pinned(site, &saved).await?;
    // What was written before, then the live lines from exactly there on.
    // The child's lines never pass for Gatehouse's own (see `shown_text`).
    let (backlog, mut sub) = conn.stderr().follow();
    on_event(TailEvent::Lines(
        shown_text(&backlog).lines().map(str::to_owned).collect(),
    ));
    tokio::pin!(stop);
    loop {
        tokio::select! {
            ev = sub.recv() => match ev {
                Some(TailEvent::Lines(lines)) => on_event(TailEvent::Lines(
                    lines.iter().map(|l| crate::text::defang_own_lines(l).into_owned()).collect(),
                )),
                Some(ev) => on_event(ev),
                None => break,
            },
            _ = &mut stop => break,
        }
    }
    let _ = hold_if_changed(site, name, &conn).await;
    Ok(conn.close().await)
}
