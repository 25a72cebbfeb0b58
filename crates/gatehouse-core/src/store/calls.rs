//! SQL for MCP call records: one row per call, replaced at each lifecycle
//! transition (an upsert), so the row always holds the last state written.
//! The rows are plain columns; `connections::recorder` maps them to and from
//! the client's `CallRecord`.

use sqlx::{AssertSqlSafe, Row};

use super::{Store, Tx};
use crate::error::{Error, Result};

/// One stored call, column for column. Enums are their snake_case names,
/// `error` is JSON, `stderr_truncated` is 0 or 1.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct CallRow {
    pub call_id: String,
    pub connection_id: String,
    pub tool: String,
    pub state: String,
    pub effect: Option<String>,
    pub request_id: Option<i64>,
    pub args_bytes: i64,
    pub error: Option<String>,
    pub exit_code: Option<i64>,
    pub exit_signal: Option<i64>,
    pub stderr_bytes_seen: i64,
    pub stderr_bytes_retained: i64,
    pub stderr_truncated: i64,
    pub stdout_end: String,
    pub stderr_end: String,
    pub received_at: i64,
    pub dispatched_at: Option<i64>,
    pub finished_at: Option<i64>,
}

const COLUMNS: &str = "call_id, connection_id, tool, state, effect, request_id, args_bytes, error, \
     exit_code, exit_signal, stderr_bytes_seen, stderr_bytes_retained, stderr_truncated, \
     stdout_end, stderr_end, received_at, dispatched_at, finished_at";

/// Writes `row`, replacing the call's previous row.
pub async fn upsert(store: &Store, row: &CallRow) -> Result<()> {
    let mut tx = store.begin_write().await?;
    upsert_in(&mut tx, row).await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("recording a call", e))?;
    Ok(())
}

/// [`upsert`] inside the caller's write transaction (so an audit entry
/// commits with it).
pub async fn upsert_in(tx: &mut Tx, row: &CallRow) -> Result<()> {
    let sql = format!(
        "INSERT INTO mcp_calls ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) \
         ON CONFLICT (call_id) DO UPDATE SET state = $4, effect = $5, request_id = $6, error = $8, \
         exit_code = $9, exit_signal = $10, stderr_bytes_seen = $11, stderr_bytes_retained = $12, \
         stderr_truncated = $13, stdout_end = $14, stderr_end = $15, dispatched_at = $17, finished_at = $18"
    );
    sqlx::query(AssertSqlSafe(sql))
        .bind(&row.call_id)
        .bind(&row.connection_id)
        .bind(&row.tool)
        .bind(&row.state)
        .bind(&row.effect)
        .bind(row.request_id)
        .bind(row.args_bytes)
        .bind(&row.error)
        .bind(row.exit_code)
        .bind(row.exit_signal)
        .bind(row.stderr_bytes_seen)
        .bind(row.stderr_bytes_retained)
        .bind(row.stderr_truncated)
        .bind(&row.stdout_end)
        .bind(&row.stderr_end)
        .bind(row.received_at)
        .bind(row.dispatched_at)
        .bind(row.finished_at)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("recording a call", e))?;
    Ok(())
}

pub async fn get(store: &Store, call_id: &str) -> Result<Option<CallRow>> {
    let sql = &format!("SELECT {COLUMNS} FROM mcp_calls WHERE call_id = $1");
    store
        .read("looking up a call", |pool| async move {
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(call_id)
                .fetch_optional(&pool)
                .await
        })
        .await
}

/// Calls of one connection run, oldest first.
pub async fn list_for_connection(store: &Store, connection_id: &str) -> Result<Vec<CallRow>> {
    let sql = &format!(
        "SELECT {COLUMNS} FROM mcp_calls WHERE connection_id = $1 ORDER BY received_at, call_id"
    );
    store
        .read("listing calls", |pool| async move {
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(connection_id)
                .fetch_all(&pool)
                .await
        })
        .await
}

/// Calls of every run of stored connection `name`, newest first: `limit` of
/// them after skipping the newest `offset`.
pub async fn list_for_name(
    store: &Store,
    name: &str,
    offset: i64,
    limit: i64,
) -> Result<Vec<CallRow>> {
    let columns = COLUMNS
        .split(", ")
        .map(|c| format!("c.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = &format!(
        "SELECT {columns} FROM mcp_calls c JOIN mcp_connection_runs r ON r.connection_id = c.connection_id \
         WHERE r.name = $1 ORDER BY c.received_at DESC, c.call_id DESC LIMIT $2 OFFSET $3"
    );
    store
        .read("listing calls", |pool| async move {
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(name)
                .bind(limit)
                .bind(offset)
                .fetch_all(&pool)
                .await
        })
        .await
}

/// How many calls every run of stored connection `name` made.
pub async fn count_for_name(store: &Store, name: &str) -> Result<i64> {
    let (n,): (i64,) = store
        .read("counting calls", |pool| async move {
            sqlx::query_as(
                "SELECT COUNT(*) FROM mcp_calls c JOIN mcp_connection_runs r \
                 ON r.connection_id = c.connection_id WHERE r.name = $1",
            )
            .bind(name)
            .fetch_one(&pool)
            .await
        })
        .await?;
    Ok(n)
}

/// Closes the run of a child whose host was killed (matched by the child's PID
/// and a start time within a minute of its spawn) and every call of it left
/// unfinished, as `outcome_unknown` with `error` (JSON), inside the caller's
/// write transaction (so the audit entries commit with it). Returns the
/// calls closed as (call id, tool, connection id).
pub async fn close_killed_run_in(
    tx: &mut Tx,
    pid: i64,
    spawned_at_ms: i64,
    error: &str,
    end_reason: &str,
    now_ms: i64,
) -> Result<Vec<(String, String, String)>> {
    let ctx = "closing the records of a killed run";
    let runs: Vec<String> = sqlx::query(
        "SELECT connection_id FROM mcp_connection_runs WHERE pid = $1 AND ended_at IS NULL \
         AND started_at >= $2 AND started_at <= $3",
    )
    .bind(pid)
    .bind(spawned_at_ms - 60_000)
    .bind(spawned_at_ms + 60_000)
    .fetch_all(&mut **tx)
    .await
    .map_err(|e| Error::storage(ctx, e))?
    .iter()
    .map(|r| r.try_get::<String, _>("connection_id"))
    .collect::<std::result::Result<_, _>>()
    .map_err(|e| Error::storage(ctx, e))?;
    let mut closed = Vec::new();
    for id in &runs {
        let calls: Vec<(String, String, String)> = sqlx::query(
            "SELECT call_id, tool FROM mcp_calls WHERE connection_id = $1 \
             AND state IN ('received', 'validated', 'dispatched')",
        )
        .bind(id)
        .fetch_all(&mut **tx)
        .await
        .map_err(|e| Error::storage(ctx, e))?
        .iter()
        .map(|r| {
            Ok((
                r.try_get::<String, _>("call_id")?,
                r.try_get::<String, _>("tool")?,
                id.clone(),
            ))
        })
        .collect::<std::result::Result<_, sqlx::Error>>()
        .map_err(|e| Error::storage(ctx, e))?;
        sqlx::query(
            "UPDATE mcp_calls SET state = 'outcome_unknown', error = $2, finished_at = $3 \
             WHERE connection_id = $1 AND state IN ('received', 'validated', 'dispatched')",
        )
        .bind(id)
        .bind(error)
        .bind(now_ms)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage(ctx, e))?;
        sqlx::query(
            "UPDATE mcp_connection_runs SET end_reason = $3, ended_at = $2 \
             WHERE connection_id = $1",
        )
        .bind(id)
        .bind(now_ms)
        .bind(end_reason)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage(ctx, e))?;
        closed.extend(calls);
    }
    Ok(closed)
}
