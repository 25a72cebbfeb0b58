//! SQL for held calls (see [`crate::access::approvals`]): one row per call the
//! approval policy held, its state and who decided it.

use sqlx::AssertSqlSafe;

use super::{Store, Tx};
use crate::error::{Error, Result};

/// One held call as stored; `status` is one of `access::approvals::Status`.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct HeldRow {
    pub id: String,
    pub actor: String,
    pub tool: String,
    pub summary: String,
    pub arguments: String,
    pub args_sha256: String,
    pub diff: Option<String>,
    pub base_sha256: Option<String>,
    pub decider: String,
    pub status: String,
    pub holder: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub heartbeat_at: i64,
    pub decided_at: Option<i64>,
    pub decided_by: Option<String>,
}

const COLUMNS: &str = "id, actor, tool, summary, arguments, args_sha256, diff, base_sha256, decider, status, holder, created_at, expires_at, heartbeat_at, decided_at, decided_by";

/// How many of `actor`'s calls wait now (the waiting rows are few: the
/// status index finds them).
pub async fn waiting_of_in(tx: &mut Tx, actor: &str) -> Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM held_calls WHERE status = 'waiting' AND actor = $1")
        .bind(actor)
        .fetch_one(&mut **tx)
        .await
        .map_err(|e| Error::storage("counting a caller's held calls", e))
}

pub async fn insert_in(tx: &mut Tx, row: &HeldRow) -> Result<()> {
    sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO held_calls ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)"
    )))
    .bind(&row.id)
    .bind(&row.actor)
    .bind(&row.tool)
    .bind(&row.summary)
    .bind(&row.arguments)
    .bind(&row.args_sha256)
    .bind(&row.diff)
    .bind(&row.base_sha256)
    .bind(&row.decider)
    .bind(&row.status)
    .bind(&row.holder)
    .bind(row.created_at)
    .bind(row.expires_at)
    .bind(row.heartbeat_at)
    .bind(row.decided_at)
    .bind(&row.decided_by)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("recording a held call", e))?;
    Ok(())
}

pub async fn get(store: &Store, id: &str) -> Result<Option<HeldRow>> {
    store
        .read("reading a held call", |pool| async move {
            sqlx::query_as(AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM held_calls WHERE id = $1"
            )))
            .bind(id)
            .fetch_optional(&pool)
            .await
        })
        .await
}

pub async fn get_in(tx: &mut Tx, id: &str) -> Result<Option<HeldRow>> {
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM held_calls WHERE id = $1"
    )))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await
    .map_err(|e| Error::storage("reading a held call", e))
}

/// Held calls, newest first: only those in `status` when given.
pub async fn list(store: &Store, status: Option<&str>, limit: i64) -> Result<Vec<HeldRow>> {
    // Two statements, not `$1 IS NULL`: PostgreSQL cannot type an untyped NULL parameter.
    let sql = match status {
        Some(_) => format!(
            "SELECT {COLUMNS} FROM held_calls WHERE status = $1 ORDER BY created_at DESC, id LIMIT $2"
        ),
        None => format!("SELECT {COLUMNS} FROM held_calls ORDER BY created_at DESC, id LIMIT $1"),
    };
    let sql = &sql;
    store
        .read("listing held calls", |pool| async move {
            let q = sqlx::query_as(AssertSqlSafe(sql.as_str()));
            match status {
                Some(s) => q.bind(s).bind(limit),
                None => q.bind(limit),
            }
            .fetch_all(&pool)
            .await
        })
        .await
}

/// Ends a waiting hold: true when this update did it (a hold ends once).
pub async fn conclude_in(
    tx: &mut Tx,
    id: &str,
    status: &str,
    decided_by: &str,
    now: i64,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE held_calls SET status = $2, decided_by = $3, decided_at = $4 WHERE id = $1 AND status = 'waiting'",
    )
    .bind(id)
    .bind(status)
    .bind(decided_by)
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("deciding a held call", e))?;
    Ok(done.rows_affected() == 1)
}

/// The waiting server says it still waits.
pub async fn heartbeat_in(tx: &mut Tx, id: &str, now: i64) -> Result<()> {
    sqlx::query("UPDATE held_calls SET heartbeat_at = $2 WHERE id = $1 AND status = 'waiting'")
        .bind(id)
        .bind(now)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("renewing a held call", e))?;
    Ok(())
}

/// The waiting server takes an approved hold to run it: true when this
/// update did (the sweep had not recorded it as not run first).
pub async fn take_in(tx: &mut Tx, id: &str, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE held_calls SET taken_at = $2 WHERE id = $1 AND status = 'approved' AND taken_at IS NULL",
    )
    .bind(id)
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("taking an approved held call", e))?;
    Ok(done.rows_affected() == 1)
}

/// Approved holds of the owner's queue that no server took, approved and
/// last renewed before `before` (a live server takes its yes within a poll;
/// one whose renewals had just been late is given the same time as any).
pub async fn untaken_in(tx: &mut Tx, before: i64) -> Result<Vec<HeldRow>> {
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM held_calls WHERE status = 'approved' AND decider = 'owner' AND taken_at IS NULL AND heartbeat_at < $1 AND decided_at < $1 ORDER BY created_at"
    )))
    .bind(before)
    .fetch_all(&mut **tx)
    .await
    .map_err(|e| Error::storage("finding approved held calls no server took", e))
}

/// Ends an approved hold no server took as abandoned: true when this update did.
pub async fn abandon_untaken_in(tx: &mut Tx, id: &str) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE held_calls SET status = 'abandoned' WHERE id = $1 AND status = 'approved' AND taken_at IS NULL",
    )
    .bind(id)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("recording an approved held call as not run", e))?;
    Ok(done.rows_affected() == 1)
}

/// Waiting holds whose server stopped saying it waits before `before`.
pub async fn stale_in(tx: &mut Tx, before: i64) -> Result<Vec<HeldRow>> {
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM held_calls WHERE status = 'waiting' AND heartbeat_at < $1 ORDER BY created_at"
    )))
    .bind(before)
    .fetch_all(&mut **tx)
    .await
    .map_err(|e| Error::storage("finding abandoned held calls", e))
}
