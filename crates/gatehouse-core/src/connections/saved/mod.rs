//! Connections stored in the site, shared by the CLI and the desktop app.
//!
//! Map:
//! - here: a definition ([`SavedConnection`]), validated field by field, and
//!   its audited add, edit, duplicate and remove;
//! - [`run`](self::run): starting one ([`open`], and the one-call operations
//!   [`probe`], [`call`], [`tail`]), each checked against the connection's tool
//!   pin ([`approve`] lifts a hold; [`approve_live`] also resumes an open
//!   connection held mid-session), and settling runs whose host was killed;
//! - [`units`]: sizes and durations as an admin writes them.
//!
//! A stored definition never holds a secret value: a secret is stored as the
//! name of a host variable ([`EnvValue::SecretFromHost`]) read at connect time.

mod run;
mod units;

pub use run::{
    CallReport, Ceilings, ConnectionView, ProbeReport, StderrReport, approve, approve_live, call,
    call_open, connect_options, hold, hold_if_changed, list_open, open, probe, recover,
    scratch_root, show, tail,
};
pub use units::parse_size;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::access::audit;
use crate::access::audit::AuditAction;
use crate::error::{Error, Result, codes};
use crate::sandbox::{ChildSpec, EnvValue, Profile};
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
            "use at least 16MiB, or leave it empty for the site's default ceiling",
        ));
    }
    if limits.max_cpu_ms == Some(0) {
        return Err(field_error(
            "limits.max_cpu_ms",
            codes::DURATION_INVALID,
            "a CPU limit of 0 ms would kill the server at once".into(),
            "use a duration like 30s, or leave it empty for the site's default budget",
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
        "definition_sha256": spec_and_limits_hash(conn),
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
        audit::AuditEntry {
            actor,
            action: AuditAction::ConnectionAdd,
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
    let row = definition_row(conn, crate::time::now_ms());
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
        audit::AuditEntry {
            actor,
            action: AuditAction::ConnectionEdit,
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
    copy.created_at = crate::time::now_ms();
    add(store, actor, &copy).await?;
    Ok(copy)
}

/// One page of a connection's call records, newest first.
#[derive(Debug, Clone)]
pub struct CallPage {
    pub records: Vec<crate::mcp::client::CallRecord>,
    /// Calls of every run of the connection, on all pages.
    pub total: u64,
    /// Where the next (older) page starts; `None` on the last page.
    pub next_offset: Option<u32>,
}

/// The call records of every run of connection `name`, newest first: `limit`
/// of them (1 to 1000) after the newest `offset`.
///
/// # Caveats
/// An offset, not a cursor: call ids carry no order. A call made while
/// someone pages pushes every older record one place on, so the record at a
/// page's end shows again at the next page's start; none is skipped.
pub async fn call_records(store: &Store, name: &str, offset: u32, limit: u32) -> Result<CallPage> {
    let limit = limit.clamp(1, 1000);
    let total = store::calls::count_for_name(store, name).await?;
    // One more than asked says whether an older page exists.
    let mut records =
        super::recorder::load_calls_of(store, name, i64::from(offset), i64::from(limit) + 1)
            .await?;
    let more = records.len() > limit as usize;
    records.truncate(limit as usize);
    Ok(CallPage {
        next_offset: more.then(|| offset + limit),
        total: u64::try_from(total).unwrap_or(0),
        records,
    })
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
        audit::AuditEntry {
            actor,
            action: AuditAction::ConnectionRemove,
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

/// The SHA-256 (hex) of what a definition runs and under which limits: its
/// spec (program, args, environment sources) and its limits, as canonical
/// JSON. The name is not part of it: a renamed or copied connection is a new
/// connection and asks anyway (consent is stored by name). Consent is given
/// to this hash; tool pins hash the spec alone ([`super::pin::diff::spec_hash`]).
pub fn spec_and_limits_hash(conn: &SavedConnection) -> String {
    let canonical = serde_json::to_string(&json!({"spec": conn.spec, "limits": conn.limits}))
        .expect("definition serialises");
    hex::encode(Sha256::digest(canonical.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(validate_name("echo-1").is_ok());
        assert!(validate_name("Echo").is_err());
        assert!(validate_name("").is_err());
    }
    fn run(connection_id: &str, name: &str) -> store::connections::RunRow {
        store::connections::RunRow {
            connection_id: connection_id.into(),
            name: Some(name.into()),
            program: "/bin/true".into(),
            pid: None,
            era: None,
            protocol_version: None,
            server_name: None,
            server_version: None,
            end_reason: None,
            exit_code: None,
            exit_signal: None,
            stderr_bytes_seen: 0,
            stderr_bytes_retained: 0,
            stderr_truncated: 0,
            stderr_excerpt: None,
            stdout_end: "open".into(),
            stderr_end: "open".into(),
            protocol_violations: 0,
            started_at: 1,
            ended_at: None,
        }
    }

    fn call(call_id: &str, connection_id: &str, received_at: i64) -> store::calls::CallRow {
        store::calls::CallRow {
            call_id: call_id.into(),
            connection_id: connection_id.into(),
            tool: "echo".into(),
            state: "completed".into(),
            effect: None,
            request_id: None,
            args_bytes: 2,
            error: None,
            exit_code: None,
            exit_signal: None,
            stderr_bytes_seen: 0,
            stderr_bytes_retained: 0,
            stderr_truncated: 0,
            stdout_end: "open".into(),
            stderr_end: "open".into(),
            received_at,
            dispatched_at: Some(received_at),
            finished_at: Some(received_at + 1),
        }
    }

    /// Paging reaches every record of every run once, newest first, and says
    /// where the next page starts; another connection's calls stay out.
    #[tokio::test]
    async fn call_records_page_through_every_run_newest_first() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(&store::sqlite_url(&tmp.path().join("site.db")))
            .await
            .unwrap();
        for (id, name) in [("run-a", "echo"), ("run-b", "echo"), ("run-c", "other")] {
            store::connections::upsert_run(&store, &run(id, name))
                .await
                .unwrap();
        }
        // Five calls of `echo` over two runs (two at the same instant), one of `other`.
        for (id, conn, at) in [
            ("c1", "run-a", 10),
            ("c2", "run-a", 20),
            ("c3", "run-b", 30),
            ("c4", "run-b", 30),
            ("c5", "run-b", 40),
            ("x1", "run-c", 50),
        ] {
            store::calls::upsert(&store, &call(id, conn, at))
                .await
                .unwrap();
        }

        let mut seen = Vec::new();
        let mut offset = 0;
        let mut pages = 0;
        loop {
            let page = call_records(&store, "echo", offset, 2).await.unwrap();
            assert_eq!(page.total, 5);
            assert!(page.records.len() <= 2);
            seen.extend(page.records.iter().map(|r| r.call_id.clone()));
            pages += 1;
            match page.next_offset {
                Some(next) => offset = next,
                None => break,
            }
        }
        assert_eq!(pages, 3);
        assert_eq!(seen, ["c5", "c4", "c3", "c2", "c1"]);

        let exact = call_records(&store, "echo", 0, 5).await.unwrap();
        assert_eq!((exact.records.len(), exact.next_offset), (5, None));
        let past = call_records(&store, "echo", 9, 2).await.unwrap();
        assert_eq!(
            (past.records.len(), past.total, past.next_offset),
            (0, 5, None)
        );
        let none = call_records(&store, "missing", 0, 50).await.unwrap();
        assert_eq!((none.records.len(), none.total), (0, 0));
        store.close().await;
    }
}
