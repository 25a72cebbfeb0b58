//! SQL for the site's key/value config.

use sqlx::Row;

use super::{Store, Tx};
use crate::error::{Error, Result};

pub async fn all(store: &Store) -> Result<Vec<(String, String)>> {
    let rows = store
        .read("reading site config", |pool| async move {
            sqlx::query("SELECT key, value FROM site_config ORDER BY key")
                .fetch_all(&pool)
                .await
        })
        .await?;
    rows.iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect()
}

pub async fn get(store: &Store, key: &str) -> Result<Option<String>> {
    let row = store
        .read("reading site config", |pool| async move {
            sqlx::query("SELECT value FROM site_config WHERE key = $1")
                .bind(key)
                .fetch_optional(&pool)
                .await
        })
        .await?;
    Ok(row.map(|r| r.try_get(0)).transpose()?)
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
