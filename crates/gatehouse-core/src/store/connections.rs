//! SQL for MCP connections: stored definitions (what to run) and runs (what
//! happened: negotiated revision, exit observed, stderr counters).

use sqlx::AssertSqlSafe;

use super::{Store, Tx};
use crate::error::{Error, Result};

/// A stored connection definition. `spec` and `limits` are JSON. It is also
/// the record of a site dump (`site::portable`), hence the serde derives.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
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

/// Replaces definition `old_name` with `row` (which may carry a new name) in
/// the caller's write transaction; false when `old_name` does not exist.
/// `created_at` is kept; a rename onto a taken name is a storage conflict the
/// caller checks first.
pub async fn update_definition_in(
    tx: &mut Tx,
    old_name: &str,
    row: &DefinitionRow,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE mcp_connections SET name = $1, spec = $2, limits = $3, updated_at = $4 WHERE name = $5",
    )
    .bind(&row.name)
    .bind(&row.spec)
    .bind(&row.limits)
    .bind(row.updated_at)
    .bind(old_name)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("updating a connection", e))?;
    Ok(done.rows_affected() == 1)
}

/// Whether a definition named `name` exists, read in the caller's transaction.
pub async fn definition_exists_in(tx: &mut Tx, name: &str) -> Result<bool> {
    let found: Option<(String,)> =
        sqlx::query_as("SELECT name FROM mcp_connections WHERE name = $1")
            .bind(name)
            .fetch_optional(&mut **tx)
            .await
            .map_err(|e| Error::storage("looking up a connection", e))?;
    Ok(found.is_some())
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

pub async fn get_definition(store: &Store, name: &str) -> Result<Option<DefinitionRow>> {
    store
        .read("looking up a connection", |pool| async move {
            sqlx::query_as("SELECT name, spec, limits, created_at, updated_at FROM mcp_connections WHERE name = $1")
                .bind(name)
                .fetch_optional(&pool)
                .await
        })
        .await
}

pub async fn list_definitions(store: &Store) -> Result<Vec<DefinitionRow>> {
    store
        .read("listing connections", |pool| async move {
            sqlx::query_as("SELECT name, spec, limits, created_at, updated_at FROM mcp_connections ORDER BY name")
                .fetch_all(&pool)
                .await
        })
        .await
}

const RUN_COLUMNS: &str = "connection_id, name, program, pid, era, protocol_version, server_name, server_version, \
     end_reason, exit_code, exit_signal, stderr_bytes_seen, stderr_bytes_retained, stderr_truncated, \
     stderr_excerpt, stdout_end, stderr_end, protocol_violations, started_at, ended_at";

/// One stored connection run, column for column (`stderr_truncated` is 0 or 1).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RunRow {
    pub connection_id: String,
    pub name: Option<String>,
    pub program: String,
    pub pid: Option<i64>,
    pub era: Option<String>,
    pub protocol_version: Option<String>,
    pub server_name: Option<String>,
    pub server_version: Option<String>,
    pub end_reason: Option<String>,
    pub exit_code: Option<i64>,
    pub exit_signal: Option<i64>,
    pub stderr_bytes_seen: i64,
    pub stderr_bytes_retained: i64,
    pub stderr_truncated: i64,
    pub stderr_excerpt: Option<String>,
    pub stdout_end: String,
    pub stderr_end: String,
    pub protocol_violations: i64,
    pub started_at: i64,
    pub ended_at: Option<i64>,
}

/// Writes a run row, replacing the run's previous row.
pub async fn upsert_run(store: &Store, r: &RunRow) -> Result<()> {
    let mut tx = store.begin_write().await?;
    let sql = format!(
        "INSERT INTO mcp_connection_runs ({RUN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20) \
         ON CONFLICT (connection_id) DO UPDATE SET era = $5, protocol_version = $6, server_name = $7, \
         server_version = $8, end_reason = $9, exit_code = $10, exit_signal = $11, stderr_bytes_seen = $12, \
         stderr_bytes_retained = $13, stderr_truncated = $14, stderr_excerpt = $15, stdout_end = $16, \
         stderr_end = $17, protocol_violations = $18, ended_at = $20"
    );
    sqlx::query(AssertSqlSafe(sql))
        .bind(&r.connection_id)
        .bind(&r.name)
        .bind(&r.program)
        .bind(r.pid)
        .bind(&r.era)
        .bind(&r.protocol_version)
        .bind(&r.server_name)
        .bind(&r.server_version)
        .bind(&r.end_reason)
        .bind(r.exit_code)
        .bind(r.exit_signal)
        .bind(r.stderr_bytes_seen)
        .bind(r.stderr_bytes_retained)
        .bind(r.stderr_truncated)
        .bind(&r.stderr_excerpt)
        .bind(&r.stdout_end)
        .bind(&r.stderr_end)
        .bind(r.protocol_violations)
        .bind(r.started_at)
        .bind(r.ended_at)
        .execute(&mut *tx)
        .await
        .map_err(|e| Error::storage("recording a connection", e))?;
    tx.commit()
        .await
        .map_err(|e| Error::storage("recording a connection", e))?;
    Ok(())
}

pub async fn get_run(store: &Store, connection_id: &str) -> Result<Option<RunRow>> {
    let sql = &format!("SELECT {RUN_COLUMNS} FROM mcp_connection_runs WHERE connection_id = $1");
    store
        .read("looking up a connection run", |pool| async move {
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(connection_id)
                .fetch_optional(&pool)
                .await
        })
        .await
}
