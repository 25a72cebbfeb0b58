//! SQL for API keys. Only argon2id hashes are stored, never a raw key.

use sqlx::AssertSqlSafe;

use super::{Store, Tx};
use crate::error::{Error, Result};

/// A stored key, without anything secret but its hash.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct KeyRow {
    pub id: String,
    pub label: String,
    pub roles: String,
    pub hash: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub replaced_by: Option<String>,
    /// `access::restrictions::Restrictions` as JSON; `None` restricts nothing.
    pub restrictions: Option<String>,
}

const COLUMNS: &str = "id, label, roles, hash, created_at, expires_at, last_used_at, revoked_at, replaced_by, restrictions";

pub async fn insert(tx: &mut Tx, key: &KeyRow) -> Result<()> {
    sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO api_keys ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    )))
    .bind(&key.id)
    .bind(&key.label)
    .bind(&key.roles)
    .bind(&key.hash)
    .bind(key.created_at)
    .bind(key.expires_at)
    .bind(key.last_used_at)
    .bind(key.revoked_at)
    .bind(&key.replaced_by)
    .bind(&key.restrictions)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("storing a key", e))?;
    super::access::bump(tx).await
}

pub async fn get(store: &Store, id: &str) -> Result<Option<KeyRow>> {
    let sql = &format!("SELECT {COLUMNS} FROM api_keys WHERE id = $1");
    store
        .read("looking up a key", |pool| async move {
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(id)
                .fetch_optional(&pool)
                .await
        })
        .await
}

pub async fn get_in(tx: &mut Tx, id: &str) -> Result<Option<KeyRow>> {
    sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM api_keys WHERE id = $1"
    )))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await
    .map_err(|e| Error::storage("looking up a key", e))
}

pub async fn list(store: &Store) -> Result<Vec<KeyRow>> {
    let sql = &format!("SELECT {COLUMNS} FROM api_keys ORDER BY created_at, id");
    store
        .read("listing keys", |pool| async move {
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .fetch_all(&pool)
                .await
        })
        .await
}

/// Marks a key revoked; false when it was unknown or already revoked.
pub async fn revoke(tx: &mut Tx, id: &str, at: i64) -> Result<bool> {
    let done =
        sqlx::query("UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(at)
            .bind(id)
            .execute(&mut **tx)
            .await
            .map_err(|e| Error::storage("revoking a key", e))?;
    super::access::bump(tx).await?;
    Ok(done.rows_affected() == 1)
}

/// Replaces a key's restrictions; false when the key is unknown.
pub async fn set_restrictions(tx: &mut Tx, id: &str, restrictions: Option<&str>) -> Result<bool> {
    let done = sqlx::query("UPDATE api_keys SET restrictions = $1 WHERE id = $2")
        .bind(restrictions)
        .bind(id)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("restricting a key", e))?;
    super::access::bump(tx).await?;
    Ok(done.rows_affected() == 1)
}

/// Sets the old key of a roll to expire at `expires_at` and names its successor.
pub async fn retire(tx: &mut Tx, id: &str, expires_at: i64, replaced_by: &str) -> Result<()> {
    sqlx::query("UPDATE api_keys SET expires_at = $1, replaced_by = $2 WHERE id = $3")
        .bind(expires_at)
        .bind(replaced_by)
        .bind(id)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("retiring a key", e))?;
    super::access::bump(tx).await
}

/// Records use, at most once a minute per key, to keep verification cheap.
pub async fn touch(store: &Store, id: &str, at: i64) -> Result<()> {
    // Through the write gate like every write (see `store::Tx`).
    let _gate = store.write_gate().await;
    sqlx::query("UPDATE api_keys SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $3)")
        .bind(at)
        .bind(id)
        .bind(at - 60_000)
        .execute(store.writer())
        .await
        .map_err(|e| store.error("recording key use", e))?;
    Ok(())
}

/// Inserts `count` inert filler keys (ids `f` + 11 digits from `first`, a hash
/// nothing verifies against) in batched multi-row inserts, one transaction.
/// Only the benchmark uses it, to measure lookups among a million stored keys.
pub async fn insert_filler(store: &Store, first: u64, count: u64, created_at: i64) -> Result<()> {
    const BATCH: u64 = 500;
    const FILLER_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$ZmlsbGVyZmlsbGVy$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let mut tx = store.begin_write().await?;
    let mut next = first;
    let end = first + count;
    while next < end {
        let n = BATCH.min(end - next);
        let values = (0..n)
            .map(|i| format!("(${}, 'filler', 'viewer', $1, $2)", i + 3))
            .collect::<Vec<_>>()
            .join(", ");
        let sql =
            format!("INSERT INTO api_keys (id, label, roles, hash, created_at) VALUES {values}");
        let mut q = sqlx::query(AssertSqlSafe(sql))
            .bind(FILLER_HASH)
            .bind(created_at);
        for i in next..next + n {
            q = q.bind(format!("f{i:011}"));
        }
        q.execute(&mut *tx)
            .await
            .map_err(|e| Error::storage("inserting filler keys", e))?;
        next += n;
    }
    tx.commit()
        .await
        .map_err(|e| Error::storage("committing filler keys", e))?;
    Ok(())
}
