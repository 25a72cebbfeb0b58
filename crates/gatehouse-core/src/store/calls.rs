//! SQL for MCP call records: one row per call, replaced at each lifecycle
//! transition (an upsert), so the row always holds the last state written.

use sqlx::Row;

use super::Store;
use crate::error::{Error, Result};
use crate::mcp::client::lifecycle::{CallRecord, CallState, EffectClass, StderrCounters};
use crate::sandbox::ExitInfo;

const COLUMNS: &str = "call_id, connection_id, tool, state, effect, request_id, args_bytes, error, \
     exit_code, exit_signal, stderr_bytes_seen, stderr_bytes_retained, stderr_truncated, \
     stdout_end, stderr_end, received_at, dispatched_at, finished_at";

/// Writes `record`, replacing the call's previous row.
pub async fn upsert(store: &Store, record: &CallRecord) -> Result<()> {
    let mut tx = store.begin_write().await?;
    let sql = format!(
        "INSERT INTO mcp_calls ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) \
         ON CONFLICT (call_id) DO UPDATE SET state = $4, effect = $5, request_id = $6, error = $8, \
         exit_code = $9, exit_signal = $10, stderr_bytes_seen = $11, stderr_bytes_retained = $12, \
         stderr_truncated = $13, stdout_end = $14, stderr_end = $15, dispatched_at = $17, finished_at = $18"
    );
    sqlx::query(&sql)
        .bind(&record.call_id)
        .bind(&record.connection_id)
        .bind(&record.tool)
        .bind(record.state.as_str())
        .bind(record.effect.map(|e| e.as_str()))
        .bind(record.request_id.map(|i| i as i64))
        .bind(record.args_bytes as i64)
        .bind(
            record
                .error
                .as_ref()
                .map(|e| serde_json::to_string(e).unwrap_or_default()),
        )
        .bind(record.exit.and_then(|e| e.code).map(i64::from))
        .bind(record.exit.and_then(|e| e.signal).map(i64::from))
        .bind(record.stderr.bytes_seen as i64)
        .bind(record.stderr.bytes_retained as i64)
        .bind(i64::from(record.stderr.truncated))
        .bind(super::connections::stream_end_str(record.stdout_end))
        .bind(super::connections::stream_end_str(record.stderr_end))
        .bind(record.received_at_ms)
        .bind(record.dispatched_at_ms)
        .bind(record.finished_at_ms)
        .execute(&mut *tx)
        .await
        .map_err(|e| Error::storage("recording a call", e))?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("recording a call", e))?;
    Ok(())
}

fn from_row(row: &sqlx::any::AnyRow) -> Result<CallRecord> {
    let state: String = row.try_get("state")?;
    let effect: Option<String> = row.try_get("effect")?;
    let error: Option<String> = row.try_get("error")?;
    let code: Option<i64> = row.try_get("exit_code")?;
    let signal: Option<i64> = row.try_get("exit_signal")?;
    let request_id: Option<i64> = row.try_get("request_id")?;
    let stdout_end: String = row.try_get("stdout_end")?;
    let stderr_end: String = row.try_get("stderr_end")?;
    Ok(CallRecord {
        call_id: row.try_get("call_id")?,
        connection_id: row.try_get("connection_id")?,
        tool: row.try_get("tool")?,
        state: CallState::parse(&state)
            .ok_or_else(|| Error::storage("reading a call", format!("bad state {state}")))?,
        effect: effect.map(|e| {
            if e == "read_only" {
                EffectClass::ReadOnly
            } else {
                EffectClass::MayWrite
            }
        }),
        request_id: request_id.map(|i| i as u64),
        args_bytes: row.try_get::<i64, _>("args_bytes")? as u64,
        error: error.and_then(|e| serde_json::from_str(&e).ok()),
        exit: (code.is_some() || signal.is_some()).then(|| ExitInfo {
            code: code.map(|c| c as i32),
            signal: signal.map(|s| s as i32),
        }),
        stderr: StderrCounters {
            bytes_seen: row.try_get::<i64, _>("stderr_bytes_seen")? as u64,
            bytes_retained: row.try_get::<i64, _>("stderr_bytes_retained")? as u64,
            truncated: row.try_get::<i64, _>("stderr_truncated")? != 0,
        },
        stdout_end: super::connections::parse_stream_end(&stdout_end),
        stderr_end: super::connections::parse_stream_end(&stderr_end),
        received_at_ms: row.try_get("received_at")?,
        dispatched_at_ms: row.try_get("dispatched_at")?,
        finished_at_ms: row.try_get("finished_at")?,
    })
}

pub async fn get(store: &Store, call_id: &str) -> Result<Option<CallRecord>> {
    let sql = &format!("SELECT {COLUMNS} FROM mcp_calls WHERE call_id = $1");
    let row = store
        .read("looking up a call", |pool| async move {
            sqlx::query(sql).bind(call_id).fetch_optional(&pool).await
        })
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// Calls of one connection run, oldest first.
pub async fn list_for_connection(store: &Store, connection_id: &str) -> Result<Vec<CallRecord>> {
    let sql = &format!(
        "SELECT {COLUMNS} FROM mcp_calls WHERE connection_id = $1 ORDER BY received_at, call_id"
    );
    let rows = store
        .read("listing calls", |pool| async move {
            sqlx::query(sql).bind(connection_id).fetch_all(&pool).await
        })
        .await?;
    rows.iter().map(from_row).collect()
}

/// Closes the run of a child whose host was killed (matched by the child's PID
/// and a start time within a minute of its spawn) and every call of it left
/// unfinished, as `outcome_unknown` with `error` (JSON): one transaction.
/// Returns the call ids closed.
pub async fn close_killed_run(
    store: &Store,
    pid: i64,
    spawned_at_ms: i64,
    error: &str,
    now_ms: i64,
) -> Result<Vec<String>> {
    let ctx = "closing the records of a killed run";
    let mut tx = store.begin_write().await?;
    let runs: Vec<String> = sqlx::query(
        "SELECT connection_id FROM mcp_connection_runs WHERE pid = $1 AND ended_at IS NULL \
         AND started_at >= $2 AND started_at <= $3",
    )
    .bind(pid)
    .bind(spawned_at_ms - 60_000)
    .bind(spawned_at_ms + 60_000)
    .fetch_all(&mut *tx)
    .await
    .map_err(|e| Error::storage(ctx, e))?
    .iter()
    .map(|r| r.try_get::<String, _>("connection_id"))
    .collect::<std::result::Result<_, _>>()
    .map_err(|e| Error::storage(ctx, e))?;
    let mut closed = Vec::new();
    for id in &runs {
        let calls: Vec<String> = sqlx::query(
            "SELECT call_id FROM mcp_calls WHERE connection_id = $1 \
             AND state IN ('received', 'validated', 'dispatched')",
        )
        .bind(id)
        .fetch_all(&mut *tx)
        .await
        .map_err(|e| Error::storage(ctx, e))?
        .iter()
        .map(|r| r.try_get::<String, _>("call_id"))
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| Error::storage(ctx, e))?;
        sqlx::query(
            "UPDATE mcp_calls SET state = 'outcome_unknown', error = $2, finished_at = $3 \
             WHERE connection_id = $1 AND state IN ('received', 'validated', 'dispatched')",
        )
        .bind(id)
        .bind(error)
        .bind(now_ms)
        .execute(&mut *tx)
        .await
        .map_err(|e| Error::storage(ctx, e))?;
        sqlx::query(
            "UPDATE mcp_connection_runs SET end_reason = 'host_killed', ended_at = $2 \
             WHERE connection_id = $1",
        )
        .bind(id)
        .bind(now_ms)
        .execute(&mut *tx)
        .await
        .map_err(|e| Error::storage(ctx, e))?;
        closed.extend(calls);
    }
    tx.commit().await.map_err(|e| Error::storage(ctx, e))?;
    Ok(closed)
}
