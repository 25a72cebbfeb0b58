//! SQL for the hash-chained audit log. The chaining itself is in `crate::access::audit`.

use sqlx::Row;

use super::{Store, Tx};
use crate::error::{Error, Result};

/// One stored audit entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuditRow {
    pub seq: i64,
    pub ts: i64,
    pub actor: String,
    pub action: String,
    pub subject: String,
    pub detail: String,
    pub prev_hash: String,
    pub hash: String,
}

/// Reads the chain head inside a write transaction (already locked by `begin_write`).
pub async fn head(tx: &mut Tx) -> Result<(i64, String)> {
    let row = sqlx::query("SELECT seq, hash FROM audit_head WHERE id = 1")
        .fetch_one(&mut **tx)
        .await
        .map_err(|e| Error::storage("reading the audit head", e))?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}

pub async fn insert(tx: &mut Tx, row: &AuditRow) -> Result<()> {
    sqlx::query(
        "INSERT INTO audit_log (seq, ts, actor, action, subject, detail, prev_hash, hash)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(row.seq)
    .bind(row.ts)
    .bind(&row.actor)
    .bind(&row.action)
    .bind(&row.subject)
    .bind(&row.detail)
    .bind(&row.prev_hash)
    .bind(&row.hash)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("appending to the audit log", e))?;
    sqlx::query("UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1")
        .bind(row.seq)
        .bind(&row.hash)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("moving the audit head", e))?;
    Ok(())
}

fn from_row(row: &sqlx::any::AnyRow) -> Result<AuditRow> {
    Ok(AuditRow {
        seq: row.try_get("seq")?,
        ts: row.try_get("ts")?,
        actor: row.try_get("actor")?,
        action: row.try_get("action")?,
        subject: row.try_get("subject")?,
        detail: row.try_get("detail")?,
        prev_hash: row.try_get("prev_hash")?,
        hash: row.try_get("hash")?,
    })
}

const COLUMNS: &str = "seq, ts, actor, action, subject, detail, prev_hash, hash";

/// Entries in chain order, starting after `after_seq`, at most `limit`.
pub async fn page(store: &Store, after_seq: i64, limit: i64) -> Result<Vec<AuditRow>> {
    let sql = &format!("SELECT {COLUMNS} FROM audit_log WHERE seq > $1 ORDER BY seq LIMIT $2");
    let rows = store
        .read("reading the audit log", |pool| async move {
            sqlx::query(sql)
                .bind(after_seq)
                .bind(limit)
                .fetch_all(&pool)
                .await
        })
        .await?;
    rows.iter().map(from_row).collect()
}

/// The newest `limit` entries, newest last.
pub async fn latest(store: &Store, limit: i64) -> Result<Vec<AuditRow>> {
    let sql = &format!("SELECT {COLUMNS} FROM audit_log ORDER BY seq DESC LIMIT $1");
    let rows = store
        .read("reading the audit log", |pool| async move {
            sqlx::query(sql).bind(limit).fetch_all(&pool).await
        })
        .await?;
    let mut out = rows.iter().map(from_row).collect::<Result<Vec<_>>>()?;
    out.reverse();
    Ok(out)
}

/// The head as committed (outside any transaction), for verification.
pub async fn committed_head(store: &Store) -> Result<(i64, String)> {
    let row = store
        .read("reading the audit head", |pool| async move {
            sqlx::query("SELECT seq, hash FROM audit_head WHERE id = 1")
                .fetch_one(&pool)
                .await
        })
        .await?;
    Ok((row.try_get(0)?, row.try_get(1)?))
}
