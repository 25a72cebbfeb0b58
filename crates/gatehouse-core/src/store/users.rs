//! SQL for users. Emails are unique case-insensitively through `email_norm`.

use sqlx::AssertSqlSafe;

use super::{Store, Tx, is_unique_violation};
use crate::error::{Error, Result, codes};
use sqlx::Row;

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct UserRow {
    pub id: i64,
    pub email: String,
    pub roles: String,
    pub created_at: i64,
    pub updated_at: i64,
    /// When an admin disabled the user; `None` while enabled.
    pub disabled_at: Option<i64>,
}

const COLUMNS: &str = "id, email, roles, created_at, updated_at, disabled_at";

pub async fn insert(tx: &mut Tx, email: &str, roles: &str, now: i64) -> Result<i64> {
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO users (email, email_norm, roles, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) RETURNING id",
    )
    .bind(email)
    .bind(email.to_lowercase())
    .bind(roles)
    .bind(now)
    .fetch_one(&mut **tx)
    .await
    .map_err(|e| {
        if is_unique_violation(&e) {
            Error::new(codes::USER_EXISTS, format!("a user with email {email} already exists"))
                .hint("emails are compared case-insensitively; change the existing user's roles with `gatehouse users update`")
        } else {
            Error::storage("creating a user", e)
        }
    })?;
    super::access::bump(tx).await?;
    Ok(id)
}

pub async fn by_email(store: &Store, email: &str) -> Result<Option<UserRow>> {
    let norm = &email.trim().to_lowercase();
    store
        .read("looking up a user", |pool| async move {
            sqlx::query_as(AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM users WHERE email_norm = $1"
            )))
            .bind(norm)
            .fetch_optional(&pool)
            .await
        })
        .await
}

pub async fn list(store: &Store) -> Result<Vec<UserRow>> {
    store
        .read("listing users", |pool| async move {
            sqlx::query_as(AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM users ORDER BY email_norm"
            )))
            .fetch_all(&pool)
            .await
        })
        .await
}

/// Sets a user's roles; false when no such user.
pub async fn set_roles(tx: &mut Tx, email: &str, roles: &str, now: i64) -> Result<bool> {
    super::access::bump(tx).await?;
    let done = sqlx::query("UPDATE users SET roles = $1, updated_at = $2 WHERE email_norm = $3")
        .bind(roles)
        .bind(now)
        .bind(email.trim().to_lowercase())
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("changing a user's roles", e))?;
    Ok(done.rows_affected() == 1)
}

/// Disables (`Some(at)`) or enables (`None`) a user; false when no such user
/// or it already was in that state.
pub async fn set_disabled(tx: &mut Tx, email: &str, at: Option<i64>, now: i64) -> Result<bool> {
    super::access::bump(tx).await?;
    let sql = if at.is_some() {
        "UPDATE users SET disabled_at = $1, updated_at = $2 WHERE email_norm = $3 AND disabled_at IS NULL"
    } else {
        "UPDATE users SET disabled_at = $1, updated_at = $2 WHERE email_norm = $3 AND disabled_at IS NOT NULL"
    };
    let done = sqlx::query(sql)
        .bind(at)
        .bind(now)
        .bind(email.trim().to_lowercase())
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("disabling or enabling a user", e))?;
    Ok(done.rows_affected() == 1)
}

pub async fn delete(tx: &mut Tx, email: &str) -> Result<bool> {
    super::access::bump(tx).await?;
    let done = sqlx::query("DELETE FROM users WHERE email_norm = $1")
        .bind(email.trim().to_lowercase())
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("removing a user", e))?;
    Ok(done.rows_affected() == 1)
}

/// A user's public display name (None when unset or no such user).
pub async fn display_name(store: &Store, email: &str) -> Result<Option<String>> {
    const SQL: &str = "SELECT display_name FROM users WHERE email_norm = $1";
    let norm = &email.trim().to_lowercase();
    // Every anonymous read of an entry names its author: on SQLite the
    // lookup runs in place, not as a round trip to sqlx's worker thread.
    if let Some(direct) = store.direct() {
        return direct.optional_text("looking up a display name", SQL, norm);
    }
    let row = store
        .read("looking up a display name", |pool| async move {
            sqlx::query(SQL).bind(norm).fetch_optional(&pool).await
        })
        .await?;
    Ok(row
        .map(|r| r.try_get::<Option<String>, _>(0))
        .transpose()?
        .flatten())
}

/// Sets (or clears) a user's display name; false when no such user.
pub async fn set_display_name(
    tx: &mut Tx,
    email: &str,
    name: Option<&str>,
    now: i64,
) -> Result<bool> {
    let done =
        sqlx::query("UPDATE users SET display_name = $1, updated_at = $2 WHERE email_norm = $3")
            .bind(name)
            .bind(now)
            .bind(email.trim().to_lowercase())
            .execute(&mut **tx)
            .await
            .map_err(|e| Error::storage("changing a user's display name", e))?;
    Ok(done.rows_affected() == 1)
}
