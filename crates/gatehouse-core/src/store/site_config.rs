//! SQL for the site's key/value config.

use super::{Store, Tx};
use crate::error::{Error, Result};
use sqlx::Row;

pub async fn all(store: &Store) -> Result<Vec<(String, String)>> {
    store
        .read("reading site config", |pool| async move {
            sqlx::query_as("SELECT key, value FROM site_config ORDER BY key")
                .fetch_all(&pool)
                .await
        })
        .await
}

pub async fn get(store: &Store, key: &str) -> Result<Option<String>> {
    store
        .read("reading site config", |pool| async move {
            sqlx::query_scalar("SELECT value FROM site_config WHERE key = $1")
                .bind(key)
                .fetch_optional(&pool)
                .await
        })
        .await
}

pub async fn set(tx: &mut Tx, key: &str, value: &str, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO site_config (key, value, updated_at) VALUES ($1, $2, $3)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
    )
    .bind(key)
    .bind(value)
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("writing site config", e))?;
    Ok(())
}

/// One config row with its `secret` flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlaggedRow {
    pub key: String,
    pub value: String,
    pub secret: bool,
    pub updated_at: i64,
}

fn flagged(r: &sqlx::any::AnyRow) -> Result<FlaggedRow> {
    Ok(FlaggedRow {
        key: r.try_get(0)?,
        value: r.try_get(1)?,
        secret: r.try_get::<i64, _>(2)? != 0,
        updated_at: r.try_get(3)?,
    })
}

/// Whether `key` is set and marked secret (`None`: not set), inside `tx`.
pub async fn secret_in(tx: &mut Tx, key: &str) -> Result<Option<bool>> {
    let flag: Option<i64> = sqlx::query_scalar("SELECT secret FROM site_config WHERE key = $1")
        .bind(key)
        .fetch_optional(&mut **tx)
        .await
        .map_err(|e| Error::storage("reading site config", e))?;
    Ok(flag.map(|f| f != 0))
}

/// Every entry with its flag, by key.
pub async fn all_flagged(store: &Store) -> Result<Vec<FlaggedRow>> {
    let rows = store
        .read("reading site config", |pool| async move {
            sqlx::query("SELECT key, value, secret, updated_at FROM site_config ORDER BY key")
                .fetch_all(&pool)
                .await
        })
        .await?;
    rows.iter().map(flagged).collect()
}

/// Sets a value and its flag (an upsert).
pub async fn set_flagged(
    tx: &mut Tx,
    key: &str,
    value: &str,
    secret: bool,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO site_config (key, value, secret, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, secret = excluded.secret,
             updated_at = excluded.updated_at",
    )
    .bind(key)
    .bind(value)
    .bind(i64::from(secret))
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("writing site config", e))?;
    Ok(())
}

/// Removes an entry; false when there was none.
pub async fn unset(tx: &mut Tx, key: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM site_config WHERE key = $1")
        .bind(key)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("removing site config", e))?;
    Ok(done.rows_affected() > 0)
}
