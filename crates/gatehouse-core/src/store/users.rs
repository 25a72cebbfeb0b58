//! SQL for users. Emails are unique case-insensitively through `email_norm`.

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
}

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
            sqlx::query_as(
                "SELECT id, email, roles, created_at, updated_at FROM users WHERE email_norm = $1",
            )
            .bind(norm)
            .fetch_optional(&pool)
            .await
        })
        .await
}

pub async fn list(store: &Store) -> Result<Vec<UserRow>> {
    store
        .read("listing users", |pool| async move {
            sqlx::query_as(
                "SELECT id, email, roles, created_at, updated_at FROM users ORDER BY email_norm",
            )
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
    let norm = &email.trim().to_lowercase();
    let row = store
        .read("looking up a display name", |pool| async move {
            sqlx::query("SELECT display_name FROM users WHERE email_norm = $1")
                .bind(norm)
                .fetch_optional(&pool)
                .await
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
