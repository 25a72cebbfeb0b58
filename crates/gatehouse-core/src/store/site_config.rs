//! SQL for the site's key/value config.

use super::{Store, Tx};
use crate::error::{Error, Result};

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
