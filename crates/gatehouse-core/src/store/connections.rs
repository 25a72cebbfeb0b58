//! SQL for MCP connections: stored definitions (what to run) and runs (what
//! happened: negotiated revision, exit observed, stderr counters).

use sqlx::Row;

use super::{Store, Tx};
use crate::error::{Error, Result};
use crate::mcp::client::lifecycle::{ConnectionRecord, StderrCounters, StreamEnd};
use crate::sandbox::ExitInfo;

/// A stored connection definition. `spec` and `limits` are JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionRow {
    pub name: String,
    pub spec: String,
    pub limits: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// Inserts a definition; false when the name is taken.
pub async fn insert_definition(store: &Store, row: &DefinitionRow) -> Result<bool> {
    let mut tx = store.begin_write().await?;
    let done = insert_definition_in(&mut tx, row).await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("storing a connection", e))?;
    Ok(done)
}

/// [`insert_definition`] inside the caller's write transaction (so its audit
/// entry commits with it).
pub async fn insert_definition_in(tx: &mut Tx, row: &DefinitionRow) -> Result<bool> {
    let done = sqlx::query(
        "INSERT INTO mcp_connections (name, spec, limits, created_at, updated_at) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (name) DO NOTHING",
    )
    .bind(&row.name)
    .bind(&row.spec)
    .bind(&row.limits)
    .bind(row.created_at)
    .bind(row.updated_at)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("storing a connection", e))?;
    Ok(done.rows_affected() == 1)
}

/// Removes a definition; false when there was none.
pub async fn delete_definition(store: &Store, name: &str) -> Result<bool> {
    let mut tx = store.begin_write().await?;
    let done = delete_definition_in(&mut tx, name).await?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("removing a connection", e))?;
    Ok(done)
}

/// [`delete_definition`] inside the caller's write transaction.
pub async fn delete_definition_in(tx: &mut Tx, name: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM mcp_connections WHERE name = $1")
        .bind(name)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("removing a connection", e))?;
    Ok(done.rows_affected() == 1)
}

fn definition_from_row(row: &sqlx::any::AnyRow) -> Result<DefinitionRow> {
    Ok(DefinitionRow {
        name: row.try_get("name")?,
        spec: row.try_get("spec")?,
        limits: row.try_get("limits")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

pub async fn get_definition(store: &Store, name: &str) -> Result<Option<DefinitionRow>> {
    let row = store
        .read("looking up a connection", |pool| async move {
            sqlx::query("SELECT name, spec, limits, created_at, updated_at FROM mcp_connections WHERE name = $1")
                .bind(name)
                .fetch_optional(&pool)
                .await
        })
        .await?;
    row.as_ref().map(definition_from_row).transpose()
}

pub async fn list_definitions(store: &Store) -> Result<Vec<DefinitionRow>> {
    let rows = store
        .read("listing connections", |pool| async move {
            sqlx::query("SELECT name, spec, limits, created_at, updated_at FROM mcp_connections ORDER BY name")
                .fetch_all(&pool)
                .await
        })
        .await?;
    rows.iter().map(definition_from_row).collect()
}

pub(crate) fn stream_end_str(end: StreamEnd) -> &'static str {
    match end {
        StreamEnd::Open => "open",
        StreamEnd::Eof => "eof",
        StreamEnd::FrameTooLarge => "frame_too_large",
        StreamEnd::ReadError => "read_error",
    }
}

pub(crate) fn parse_stream_end(s: &str) -> StreamEnd {
    match s {
        "eof" => StreamEnd::Eof,
        "frame_too_large" => StreamEnd::FrameTooLarge,
        "read_error" => StreamEnd::ReadError,
        _ => StreamEnd::Open,
    }
}

const RUN_COLUMNS: &str = "connection_id, name, program, pid, era, protocol_version, server_name, server_version, \
     end_reason, exit_code, exit_signal, stderr_bytes_seen, stderr_bytes_retained, stderr_truncated, \
     stderr_excerpt, stdout_end, stderr_end, protocol_violations, started_at, ended_at";

/// Writes a run record, replacing the run's previous row.
pub async fn upsert_run(store: &Store, r: &ConnectionRecord) -> Result<()> {
    let mut tx = store.begin_write().await?;
    let sql = format!(
        "INSERT INTO mcp_connection_runs ({RUN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20) \
         ON CONFLICT (connection_id) DO UPDATE SET era = $5, protocol_version = $6, server_name = $7, \
         server_version = $8, end_reason = $9, exit_code = $10, exit_signal = $11, stderr_bytes_seen = $12, \
         stderr_bytes_retained = $13, stderr_truncated = $14, stderr_excerpt = $15, stdout_end = $16, \
         stderr_end = $17, protocol_violations = $18, ended_at = $20"
    );
    sqlx::query(&sql)
        .bind(&r.connection_id)
        .bind(&r.name)
        .bind(&r.program)
        .bind(r.pid.map(i64::from))
        .bind(&r.era)
        .bind(&r.protocol_version)
        .bind(&r.server_name)
        .bind(&r.server_version)
        .bind(&r.end_reason)
        .bind(r.exit.and_then(|e| e.code).map(i64::from))
        .bind(r.exit.and_then(|e| e.signal).map(i64::from))
        .bind(r.stderr.bytes_seen as i64)
        .bind(r.stderr.bytes_retained as i64)
        .bind(i64::from(r.stderr.truncated))
        .bind(&r.stderr_excerpt)
        .bind(stream_end_str(r.stdout_end))
        .bind(stream_end_str(r.stderr_end))
        .bind(r.protocol_violations as i64)
        .bind(r.started_at_ms)
        .bind(r.ended_at_ms)
        .execute(&mut *tx)
        .await
        .map_err(|e| Error::storage("recording a connection", e))?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("recording a connection", e))?;
    Ok(())
}

pub async fn get_run(store: &Store, connection_id: &str) -> Result<Option<ConnectionRecord>> {
    let sql = &format!("SELECT {RUN_COLUMNS} FROM mcp_connection_runs WHERE connection_id = $1");
    let row = store
        .read("looking up a connection run", |pool| async move {
            sqlx::query(sql)
                .bind(connection_id)
                .fetch_optional(&pool)
                .await
        })
        .await?;
    let Some(row) = row else { return Ok(None) };
    let code: Option<i64> = row.try_get("exit_code")?;
    let signal: Option<i64> = row.try_get("exit_signal")?;
    let stdout_end: String = row.try_get("stdout_end")?;
    let stderr_end: String = row.try_get("stderr_end")?;
    let pid: Option<i64> = row.try_get("pid")?;
    Ok(Some(ConnectionRecord {
        connection_id: row.try_get("connection_id")?,
        name: row.try_get("name")?,
        program: row.try_get("program")?,
        pid: pid.map(|p| p as i32),
        era: row.try_get("era")?,
        protocol_version: row.try_get("protocol_version")?,
        server_name: row.try_get("server_name")?,
        server_version: row.try_get("server_version")?,
        end_reason: row.try_get("end_reason")?,
        exit: (code.is_some() || signal.is_some()).then(|| ExitInfo {
            code: code.map(|c| c as i32),
            signal: signal.map(|s| s as i32),
        }),
        stderr: StderrCounters {
            bytes_seen: row.try_get::<i64, _>("stderr_bytes_seen")? as u64,
            bytes_retained: row.try_get::<i64, _>("stderr_bytes_retained")? as u64,
            truncated: row.try_get::<i64, _>("stderr_truncated")? != 0,
        },
        stderr_excerpt: row.try_get("stderr_excerpt")?,
        stdout_end: parse_stream_end(&stdout_end),
        stderr_end: parse_stream_end(&stderr_end),
        protocol_violations: row.try_get::<i64, _>("protocol_violations")? as u64,
        started_at_ms: row.try_get("started_at")?,
        ended_at_ms: row.try_get("ended_at")?,
    }))
}
