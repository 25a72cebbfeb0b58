//! SQL for tool pins (see [`crate::connections::pin`]): per stored connection,
//! the approved tool list with its hash and the definition hash it came from,
//! and a change waiting for approval.

use super::{Store, Tx};
use crate::error::{Error, Result};

/// One pin row; `tools` and `pending_tools` are JSON lists. Serialised as it
/// is in a site export (`pins`).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinRow {
    pub name: String,
    pub definition_sha256: String,
    pub tools_sha256: String,
    pub tools: String,
    pub pending_tools: Option<String>,
    pub pending_reason: Option<String>,
    pub pinned_at: i64,
    pub updated_at: i64,
}

pub(super) const COLUMNS: &str = "name, definition_sha256, tools_sha256, tools, pending_tools, pending_reason, pinned_at, updated_at";

pub async fn get(store: &Store, name: &str) -> Result<Option<PinRow>> {
    store
        .read("reading a tool pin", |pool| async move {
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM mcp_tool_pins WHERE name = $1"
            )))
            .bind(name)
            .fetch_optional(&pool)
            .await
        })
        .await
}

/// Inserts a first pin; false when one exists already.
pub async fn insert_in(tx: &mut Tx, row: &PinRow) -> Result<bool> {
    let done = sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO mcp_tool_pins ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (name) DO NOTHING"
    )))
    .bind(&row.name)
    .bind(&row.definition_sha256)
    .bind(&row.tools_sha256)
    .bind(&row.tools)
    .bind(&row.pending_tools)
    .bind(&row.pending_reason)
    .bind(row.pinned_at)
    .bind(row.updated_at)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("pinning a connection's tools", e))?;
    Ok(done.rows_affected() == 1)
}

/// Replaces the pin (an approval).
pub async fn replace_in(tx: &mut Tx, row: &PinRow) -> Result<()> {
    delete_in(tx, &row.name).await?;
    insert_in(tx, row).await.map(|_| ())
}

/// Marks a change as waiting for approval.
pub async fn set_pending_in(
    tx: &mut Tx,
    name: &str,
    pending_tools: Option<&str>,
    reason: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "UPDATE mcp_tool_pins SET pending_tools = $2, pending_reason = $3, updated_at = $4 WHERE name = $1",
    )
    .bind(name)
    .bind(pending_tools)
    .bind(reason)
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("recording a tool list change", e))?;
    Ok(())
}

/// Ends a hold, keeping the pinned list as it is.
pub async fn clear_pending_in(tx: &mut Tx, name: &str, now: i64) -> Result<()> {
    sqlx::query(
        "UPDATE mcp_tool_pins SET pending_tools = NULL, pending_reason = NULL, updated_at = $1 WHERE name = $2",
    )
    .bind(now)
    .bind(name)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("ending a tool hold", e))?;
    Ok(())
}

pub async fn delete_in(tx: &mut Tx, name: &str) -> Result<()> {
    sqlx::query("DELETE FROM mcp_tool_pins WHERE name = $1")
        .bind(name)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("removing a tool pin", e))?;
    Ok(())
}
