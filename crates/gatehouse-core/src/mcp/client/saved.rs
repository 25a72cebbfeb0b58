//! Connections stored in the site, shared by the CLI and the desktop app, and
//! the one-call operations on them: [`probe`], [`call`], [`tail`], each
//! checked against the connection's tool pin ([`pin`]; [`approve`] lifts a hold).
//!
//! A stored definition never holds a secret value: a secret is stored as the
//! name of a host variable ([`EnvValue::SecretFromHost`]) read at connect time.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::connection::Connection;
use super::lifecycle::{CallState, ConnectionRun};
use super::options::{CallOptions, ConnectOptions};
use super::pin::{self, PinStatus};
use super::recorder::{LOCAL_ADMIN, StoreRecorder};
use crate::access::audit;
use crate::error::{Error, ErrorBody, Result, codes};
use crate::sandbox::stderr::{TailEvent, TailSnapshot};
use crate::sandbox::{self, ChildSpec, EnvValue, ExitInfo, Isolation, Profile, ScratchRoot};
use crate::site::Site;
use crate::store::{self, Store};

/// Limits stored with a connection; unset ones take the client's defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedLimits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inactivity_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cpu_ms: Option<u64>,
    /// The isolation profile (stored with the limits; an absent one is the default).
    #[serde(default)]
    pub sandbox: Profile,
}

/// A stored connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SavedConnection {
    pub name: String,
    pub spec: ChildSpec,
    pub limits: SavedLimits,
    pub created_at: i64,
}

fn validate_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            codes::CONNECTION_NAME_INVALID,
            format!("{name:?} is not a valid connection name"),
            "use 1-64 lowercase letters, digits, '-' or '_'",
        ))
    }
}

/// Longest call deadline a stored connection may ask for (a day).
pub const MAX_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;
/// Smallest memory ceiling that lets any interpreter start.
pub const MIN_RSS_BYTES: u64 = 16 << 20;

/// An invalid field: `field` names it (`name`, `command`, `args`, `env.KEY`,
/// `limits.timeout_ms`, …) in the error's detail, so a form shows the error
/// next to that field.
fn field_error(field: &str, code: crate::error::Code, message: String, hint: &str) -> Error {
    Error::invalid(code, message, hint).detail(json!({ "field": field }))
}

/// A variable name a child's environment can carry: a letter or `_`, then
/// letters, digits or `_`.
fn valid_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 128
}

/// Checks a definition before it is stored: every problem names its field
/// (see [`field_error`]). A secret value is refused: definitions name the host
/// variable that holds it instead.
pub fn validate(conn: &SavedConnection) -> Result<()> {
    validate_name(&conn.name).map_err(|e| e.detail(json!({"field": "name"})))?;
    let program = conn.spec.program.trim();
    if program.is_empty() {
        return Err(field_error(
            "command",
            codes::CALL_INVALID,
            "a connection needs a command".into(),
            "put the server's command after --, for example: -- npx -y @modelcontextprotocol/server-everything",
        ));
    }
    if program != conn.spec.program || conn.spec.program.contains('\0') {
        return Err(field_error(
            "command",
            codes::INPUT_INVALID,
            format!("{:?} is not a command", conn.spec.program),
            "write the program alone (no surrounding spaces, no NUL); arguments go in their own list",
        ));
    }
    if let Some(i) = conn.spec.args.iter().position(|a| a.contains('\0')) {
        return Err(field_error(
            &format!("args.{i}"),
            codes::INPUT_INVALID,
            format!("argument {} contains a NUL byte", i + 1),
            "arguments cannot contain NUL",
        ));
    }
    for (name, value) in &conn.spec.env {
        let field = format!("env.{name}");
        if !valid_env_name(name) {
            return Err(field_error(
                &field,
                codes::ENV_INVALID,
                format!("{name:?} is not a valid environment variable name"),
                "use letters, digits and '_', not starting with a digit, for example API_TOKEN",
            ));
        }
        match value {
            EnvValue::Plain { value } if value.contains('\0') => {
                return Err(field_error(
                    &field,
                    codes::ENV_INVALID,
                    format!("the value of {name} contains a NUL byte"),
                    "environment values cannot contain NUL",
                ));
            }
            EnvValue::FromHost { name: host } | EnvValue::SecretFromHost { name: host }
                if !valid_env_name(host) =>
            {
                return Err(field_error(
                    &field,
                    codes::ENV_INVALID,
                    format!("{host:?} is not a host variable name"),
                    "name the host variable to read, for example GITHUB_TOKEN",
                ));
            }
            EnvValue::Secret { .. } => {
                return Err(field_error(
                    &field,
                    codes::ENV_INVALID,
                    "secret values are never stored in the site".into(),
                    "store a secret as the name of a host variable (--secret NAME) and set it when connecting",
                ));
            }
            _ => {}
        }
    }
    let limits = &conn.limits;
    if let Some(ms) = limits.timeout_ms
        && !(1..=MAX_TIMEOUT_MS).contains(&ms)
    {
        return Err(field_error(
            "limits.timeout_ms",
            codes::DURATION_INVALID,
            format!("a call timeout of {ms} ms is out of range"),
            "use between 1 ms and 24 h, or leave it empty for the default (30 s)",
        ));
    }
    if let Some(ms) = limits.inactivity_ms
        && !(1..=MAX_TIMEOUT_MS).contains(&ms)
    {
        return Err(field_error(
            "limits.inactivity_ms",
            codes::DURATION_INVALID,
            format!("an inactivity timeout of {ms} ms is out of range"),
            "use between 1 ms and 24 h, or leave it empty for none",
        ));
    }
    if let Some(bytes) = limits.max_rss_bytes
        && bytes < MIN_RSS_BYTES
    {
        return Err(field_error(
            "limits.max_rss_bytes",
            codes::INPUT_INVALID,
            format!("a memory limit of {bytes} bytes is too small to start a server"),
            "use at least 16MiB, or leave it empty for no limit",
        ));
    }
    if limits.max_cpu_ms == Some(0) {
        return Err(field_error(
            "limits.max_cpu_ms",
            codes::DURATION_INVALID,
            "a CPU limit of 0 ms would kill the server at once".into(),
            "use a duration like 30s, or leave it empty for no limit",
        ));
    }
    limits
        .sandbox
        .validate()
        .map_err(|e| e.detail(json!({"field": "limits.sandbox"})))
}

/// What an audit entry says about a definition: the command and the variable
/// names, never a value (arguments only as a hash: they may hold tokens).
fn audit_detail(conn: &SavedConnection) -> Value {
    json!({
        "program": conn.spec.program,
        "args_sha256": hex::encode(Sha256::digest(serde_json::to_string(&conn.spec.args).expect("args serialise"))),
        "env": conn.spec.env.keys().collect::<Vec<_>>(),
        "limits": conn.limits,
        "definition_sha256": super::consent::definition_hash(conn),
    })
}

fn definition_row(conn: &SavedConnection, updated_at: i64) -> store::connections::DefinitionRow {
    store::connections::DefinitionRow {
        name: conn.name.clone(),
        spec: serde_json::to_string(&conn.spec).expect("spec serialises"),
        limits: serde_json::to_string(&conn.limits).expect("limits serialise"),
        created_at: conn.created_at,
        updated_at,
    }
}

fn exists_error(name: &str) -> Error {
    field_error(
        "name",
        codes::CONNECTION_EXISTS,
        format!("a connection named {name} already exists"),
        "pick another name, or remove the old one with `gatehouse connections remove`",
    )
}

/// Stores a new connection definition, audited as `connection.add` by `actor`
/// (the entry holds the command and the variable names, never a value).
pub async fn add(store: &Store, actor: &str, conn: &SavedConnection) -> Result<()> {
    validate(conn)?;
    let row = definition_row(conn, conn.created_at);
    let mut tx = store.begin_write().await?;
    if !store::connections::insert_definition_in(&mut tx, &row).await? {
        return Err(exists_error(&conn.name));
    }
    audit::append(
        &mut tx,
        audit::Entry {
            actor,
            action: "connection.add",
            subject: &conn.name,
            detail: audit_detail(conn),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("storing a connection", e))
}

/// Replaces stored connection `old_name` with `conn` (a rename when the names
/// differ), audited as `connection.edit`. The consent given for the old
/// definition no longer matches its hash, so the next start asks again (and
/// says it changed); a rename drops it.
pub async fn update(
    store: &Store,
    actor: &str,
    old_name: &str,
    conn: &SavedConnection,
) -> Result<()> {
    validate(conn)?;
    let row = definition_row(conn, store::now_ms());
    let mut tx = store.begin_write().await?;
    if conn.name != old_name
        && store::connections::definition_exists_in(&mut tx, &conn.name).await?
    {
        return Err(exists_error(&conn.name));
    }
    if !store::connections::update_definition_in(&mut tx, old_name, &row).await? {
        return Err(not_found(old_name));
    }
    if conn.name != old_name {
        store::consents::delete_in(&mut tx, old_name).await?;
    }
    let mut detail = audit_detail(conn);
    if conn.name != old_name {
        detail["renamed_from"] = json!(old_name);
    }
    audit::append(
        &mut tx,
        audit::Entry {
            actor,
            action: "connection.edit",
            subject: &conn.name,
            detail,
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("updating a connection", e))
}

/// Stores a copy of connection `name` as `new_name` (audited as
/// `connection.add`); a copy is a new definition, so it needs its own consent.
pub async fn duplicate(
    store: &Store,
    actor: &str,
    name: &str,
    new_name: &str,
) -> Result<SavedConnection> {
    let mut copy = get(store, name).await?;
    copy.name = new_name.to_string();
    copy.created_at = store::now_ms();
    add(store, actor, &copy).await?;
    Ok(copy)
}

/// The newest `limit` call records of every run of connection `name`, newest first.
pub async fn call_records(store: &Store, name: &str, limit: u32) -> Result<Vec<super::CallRecord>> {
    super::recorder::load_calls_of(store, name, i64::from(limit.clamp(1, 1000))).await
}

fn from_row(row: store::connections::DefinitionRow) -> Result<SavedConnection> {
    let spec =
        serde_json::from_str(&row.spec).map_err(|e| Error::storage("reading a connection", e))?;
    let limits =
        serde_json::from_str(&row.limits).map_err(|e| Error::storage("reading a connection", e))?;
    Ok(SavedConnection {
        name: row.name,
        spec,
        limits,
        created_at: row.created_at,
    })
}

pub async fn list(store: &Store) -> Result<Vec<SavedConnection>> {
    store::connections::list_definitions(store)
        .await?
        .into_iter()
        .map(from_row)
        .collect()
}

pub async fn get(store: &Store, name: &str) -> Result<SavedConnection> {
    match store::connections::get_definition(store, name).await? {
        Some(row) => from_row(row),
        None => Err(not_found(name)),
    }
}

/// Removes a connection definition, audited as `connection.remove` by `actor`.
pub async fn remove(store: &Store, actor: &str, name: &str) -> Result<()> {
    let mut tx = store.begin_write().await?;
    if !store::connections::delete_definition_in(&mut tx, name).await? {
        return Err(not_found(name));
    }
    // A connection added again under this name is pinned afresh.
    store::tool_pins::delete_in(&mut tx, name).await?;
    store::consents::delete_in(&mut tx, name).await?;
    audit::append(
        &mut tx,
        audit::Entry {
            actor,
            action: "connection.remove",
            subject: name,
            detail: json!({}),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("removing a connection", e))
}

fn not_found(name: &str) -> Error {
    Error::invalid(
        codes::CONNECTION_NOT_FOUND,
        format!("no connection named {name}"),
        "list them with `gatehouse connections list`",
    )
}

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
            super::lifecycle::now_ms(),
        )
        .await?;
        // Every call's end is audited, this one too (no call without its entry).
        for (call_id, tool, connection_id) in &calls {
            audit::append(
                &mut tx,
                audit::Entry {
                    actor: LOCAL_ADMIN,
                    action: "mcp.client_call",
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
    o.limits.max_rss_bytes = saved.limits.max_rss_bytes;
    o.limits.max_cpu = saved.limits.max_cpu_ms.map(Duration::from_millis);
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
/// when it turns true (its calls are refused meanwhile).
pub async fn open(site: &Site, name: &str) -> Result<Connection> {
    let saved = get(&site.store, name).await?;
    connect_pinned(site, &saved).await.map(|(conn, _)| conn)
}

/// Records the hold of a connection whose server announced a tool list
/// change, with its list as it is now; returns the error its calls get.
pub async fn hold(site: &Site, name: &str, conn: &Connection) -> Error {
    hold_if_changed(site, name, conn)
        .await
        .unwrap_or_else(|| super::call::on_hold_error(Some(name)))
}

/// After a session: a server that announced a tool list change puts its
/// connection on hold (recorded with its new list when it can be read).
async fn hold_if_changed(site: &Site, name: &str, conn: &Connection) -> Option<Error> {
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
}

pub async fn show(store: &Store, name: &str) -> Result<ConnectionView> {
    let connection = get(store, name).await?;
    let pin = pin::status(store, name).await?;
    let isolation = sandbox::isolation::describe(&connection.limits.sandbox);
    Ok(ConnectionView {
        connection,
        pin,
        isolation,
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
    if let Some(held) = hold_if_changed(site, name, &conn).await
        && out.state != CallState::Completed
    {
        // Refused for the hold: say what changed.
        out.error = Some(held.body());
    }
    conn.close().await;
    let report = CallReport {
        call_id: out.call_id,
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

/// Parses a size such as `512MiB`, `1GiB`, `100MB`, `4096`.
pub fn parse_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| size_error(text))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        _ => return Err(size_error(text)),
    };
    n.checked_mul(mult).ok_or_else(|| size_error(text))
}

fn size_error(text: &str) -> Error {
    Error::invalid(
        codes::INPUT_INVALID,
        format!("{text:?} is not a size"),
        "write a size like 512MiB, 1GiB or 100MB",
    )
}

/// Parses a duration such as `30s`, `2m`, `500ms`.
pub fn parse_duration(text: &str) -> Result<Duration> {
    humantime::parse_duration(text).map_err(|_| {
        Error::invalid(
            codes::DURATION_INVALID,
            format!("{text:?} is not a duration"),
            "write a duration like 30s, 2m or 500ms",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_names() {
        assert_eq!(parse_size("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("100MB").unwrap(), 100_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("12XB").is_err());
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert!(validate_name("echo-1").is_ok());
        assert!(validate_name("Echo").is_err());
        assert!(validate_name("").is_err());
    }
}
