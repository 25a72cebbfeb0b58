//! SQL for pending revisions: an edit of a published entry waits here (one
//! per entry) while the published text stays live, until the entry is published.

use super::{Store, Tx};
use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, sqlx::FromRow)]
pub struct Pending {
    pub title: String,
    pub body: String,
    pub author: String,
    pub created_at: i64,
    pub updated_at: i64,
}

const SELECT: &str =
    "SELECT title, body, author, created_at, updated_at FROM content_pending WHERE content_id = $1";

pub async fn get(store: &Store, content_id: i64) -> Result<Option<Pending>> {
    store
        .read("reading a pending revision", |pool| async move {
            sqlx::query_as(SELECT)
                .bind(content_id)
                .fetch_optional(&pool)
                .await
        })
        .await
}

pub async fn get_in(tx: &mut Tx, content_id: i64) -> Result<Option<Pending>> {
    sqlx::query_as(SELECT)
        .bind(content_id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(|e| Error::storage("reading a pending revision", e))
}

/// Creates or replaces the entry's pending revision.
pub async fn put(
    tx: &mut Tx,
    content_id: i64,
    title: &str,
    body: &str,
    author: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO content_pending (content_id, title, body, author, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $5)
         ON CONFLICT (content_id) DO UPDATE SET title = excluded.title, body = excluded.body,
             author = excluded.author, updated_at = excluded.updated_at",
    )
    .bind(content_id)
    .bind(title)
    .bind(body)
    .bind(author)
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("saving a pending revision", e))?;
    Ok(())
}

pub async fn delete(tx: &mut Tx, content_id: i64) -> Result<()> {
    sqlx::query("DELETE FROM content_pending WHERE content_id = $1")
        .bind(content_id)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("removing a pending revision", e))?;
    Ok(())
}
