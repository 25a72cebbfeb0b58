//! Connections stored in the site, shared by the CLI and the desktop app, and
//! the one-call operations on them: [`probe`], [`call`], [`tail`].
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
use super::recorder::StoreRecorder;
use crate::access::audit;
use crate::error::{Error, ErrorBody, Result, codes};
use crate::sandbox::stderr::TailSnapshot;
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

/// Stores a new connection definition, audited as `connection.add` by `actor`
/// (the entry holds the command and the variable names, never a value).
pub async fn add(store: &Store, actor: &str, conn: &SavedConnection) -> Result<()> {
    validate_name(&conn.name)?;
    if conn.spec.program.is_empty() {
        return Err(Error::invalid(
            codes::CALL_INVALID,
            "a connection needs a command",
            "put the server's command after --, for example: -- npx -y @modelcontextprotocol/server-everything",
        ));
    }
    if conn
        .spec
        .env
        .values()
        .any(|v| matches!(v, EnvValue::Secret { .. }))
    {
        return Err(Error::invalid(
            codes::ENV_INVALID,
            "secret values are never stored in the site",
            "store a secret as the name of a host variable (--secret NAME) and set it when connecting",
        ));
    }
    conn.limits.sandbox.validate()?;
    // Resolve once now so a bad name is refused at add time, not at connect.
    for name in conn.spec.env.keys() {
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            return Err(Error::invalid(
                codes::ENV_INVALID,
                format!("{name:?} is not a valid environment variable name"),
                "use a name without '=' or NUL",
            ));
        }
    }
    let row = store::connections::DefinitionRow {
        name: conn.name.clone(),
        spec: serde_json::to_string(&conn.spec).expect("spec serialises"),
        limits: serde_json::to_string(&conn.limits).expect("limits serialise"),
        created_at: conn.created_at,
        updated_at: conn.created_at,
    };
    let mut tx = store.begin_write().await?;
    if !store::connections::insert_definition_in(&mut tx, &row).await? {
        return Err(Error::invalid(
            codes::CONNECTION_EXISTS,
            format!("a connection named {} already exists", conn.name),
            "pick another name, or remove the old one with `gatehouse connections remove`",
        ));
    }
    audit::append(
        &mut tx,
        audit::Entry {
            actor,
            action: "connection.add",
            subject: &conn.name,
            detail: json!({
                "program": conn.spec.program,
                "args_sha256": hex::encode(Sha256::digest(serde_json::to_string(&conn.spec.args).expect("args serialise"))),
                "env": conn.spec.env.keys().collect::<Vec<_>>(),
                "limits": conn.limits,
            }),
        },
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("storing a connection", e))
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
        let error = serde_json::to_string(&error.body()).expect("error serialises");
        let ids = store::calls::close_killed_run(
            &site.store,
            child.pid as i64,
            run.owner.spawned_at_ms,
            &error,
            super::lifecycle::now_ms(),
        )
        .await?;
        tracing::warn!(
            pid = child.pid,
            killed = run.killed.len(),
            calls = ids.len(),
            "settled a run whose host was killed"
        );
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
            tail: s.text,
        }
    }
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
}

/// Connects, negotiates, lists tools, disconnects.
pub async fn probe(site: &Site, name: &str) -> Result<ProbeReport> {
    let saved = get(&site.store, name).await?;
    recover(site).await?;
    let conn = Connection::connect(connect_options(site, &saved)?).await?;
    let isolation = conn.isolation().clone();
    let server = conn.server();
    let tools = conn.list_tools().await;
    let stderr = conn.stderr().clone();
    let record = conn.close().await;
    let tools = tools?;
    Ok(ProbeReport {
        server: json!({
            "name": server.name,
            "version": server.version,
            "protocol_version": server.protocol_version,
            "era": server.era,
        }),
        tools: tools
            .into_iter()
            .map(|t| json!({"name": t.name, "annotations": t.annotations}))
            .collect(),
        stderr: stderr.excerpt().into(),
        exit: record.exit,
        isolation,
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
    recover(site).await?;
    let conn = Connection::connect(connect_options(site, &saved)?).await?;
    let out = conn
        .call_tool(tool, arguments, CallOptions::default())
        .await;
    let stderr = conn.stderr().clone();
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
    mut on_event: impl FnMut(crate::sandbox::stderr::TailEvent),
) -> Result<ConnectionRun> {
    let saved = get(&site.store, name).await?;
    recover(site).await?;
    let conn = Connection::connect(connect_options(site, &saved)?).await?;
    // What was written before, then the live lines from exactly there on.
    let (backlog, mut sub) = conn.stderr().follow();
    on_event(crate::sandbox::stderr::TailEvent::Lines(
        backlog.text.lines().map(str::to_owned).collect(),
    ));
    tokio::pin!(stop);
    loop {
        tokio::select! {
            ev = sub.recv() => match ev {
                Some(ev) => on_event(ev),
                None => break,
            },
            _ = &mut stop => break,
        }
    }
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
