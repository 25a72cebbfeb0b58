//! SQL for media items (bytes stored inline: sites are small).

use sqlx::AssertSqlSafe;

use super::{Store, Tx, is_unique_violation};
use crate::error::{Error, Result, codes};

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, sqlx::FromRow)]
pub struct MediaInfo {
    pub id: i64,
    pub filename: String,
    pub mime_type: String,
    pub size: i64,
    pub sha256: String,
    pub uploaded_by: String,
    pub created_at: i64,
}

const INFO: &str = "id, filename, mime_type, size, sha256, uploaded_by, created_at";

/// A media item with its bytes.
#[derive(sqlx::FromRow)]
struct WithBytes {
    #[sqlx(flatten)]
    info: MediaInfo,
    bytes: Vec<u8>,
}

pub struct NewMedia<'a> {
    pub filename: &'a str,
    pub mime_type: &'a str,
    pub sha256: &'a str,
    pub bytes: &'a [u8],
    pub uploaded_by: &'a str,
}

/// The stored name equal to `filename` but for letter case, if one exists:
/// two such names are one file on a case-insensitive disk.
pub async fn same_name_in(tx: &mut Tx, filename: &str) -> Result<Option<String>> {
    sqlx::query_scalar("SELECT filename FROM media WHERE lower(filename) = lower($1)")
        .bind(filename)
        .fetch_optional(&mut **tx)
        .await
        .map_err(|e| Error::storage("reading media", e))
}

pub async fn insert(tx: &mut Tx, m: &NewMedia<'_>, now: i64) -> Result<MediaInfo> {
    sqlx::query_as(AssertSqlSafe(format!(
        "INSERT INTO media (filename, mime_type, size, sha256, bytes, uploaded_by, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {INFO}"
    )))
    .bind(m.filename)
    .bind(m.mime_type)
    .bind(m.bytes.len() as i64)
    .bind(m.sha256)
    .bind(m.bytes.to_vec())
    .bind(m.uploaded_by)
    .bind(now)
    .fetch_one(&mut **tx)
    .await
    .map_err(|e| {
        if is_unique_violation(&e) {
            Error::new(
                codes::INPUT_INVALID,
                format!("a media item named {} already exists", m.filename),
            )
            .hint("choose another filename")
        } else {
            Error::storage("storing media", e)
        }
    })
}

pub async fn list(store: &Store) -> Result<Vec<MediaInfo>> {
    let sql = &format!("SELECT {INFO} FROM media ORDER BY filename");
    store
        .read("listing media", |pool| async move {
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .fetch_all(&pool)
                .await
        })
        .await
}

pub async fn read(store: &Store, filename: &str) -> Result<Option<(MediaInfo, Vec<u8>)>> {
    let sql = &format!("SELECT {INFO}, bytes FROM media WHERE filename = $1");
    let row: Option<WithBytes> = store
        .read("reading media", |pool| async move {
            sqlx::query_as(AssertSqlSafe(sql.as_str()))
                .bind(filename)
                .fetch_optional(&pool)
                .await
        })
        .await?;
    Ok(row.map(|r| (r.info, r.bytes)))
}

pub async fn delete(tx: &mut Tx, filename: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM media WHERE filename = $1")
        .bind(filename)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("deleting media", e))?;
    Ok(done.rows_affected() == 1)
}
