//! SQL for consents to spawn stored connections: one row per connection name
//! holding the hash of the exact definition an admin agreed to run.

use super::{Store, Tx};
use crate::error::{Error, Result};

/// A stored consent, column for column.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ConsentRow {
    pub name: String,
    pub definition_sha256: String,
    pub granted_by: String,
    pub granted_at: i64,
}

/// Records `row` in the caller's write transaction, replacing an older consent
/// for the same name (so its audit entry commits with it).
pub async fn upsert_in(tx: &mut Tx, row: &ConsentRow) -> Result<()> {
    sqlx::query(
        "INSERT INTO mcp_connection_consents (name, definition_sha256, granted_by, granted_at) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO UPDATE SET definition_sha256 = $2, \
         granted_by = $3, granted_at = $4",
    )
    .bind(&row.name)
    .bind(&row.definition_sha256)
    .bind(&row.granted_by)
    .bind(row.granted_at)
    .execute(&mut **tx)
    .await
    .map_err(|e| Error::storage("recording a consent", e))?;
    Ok(())
}

/// Forgets the consent for `name` (the definition was removed or renamed).
pub async fn delete_in(tx: &mut Tx, name: &str) -> Result<()> {
    sqlx::query("DELETE FROM mcp_connection_consents WHERE name = $1")
        .bind(name)
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("removing a consent", e))?;
    Ok(())
}

pub async fn get(store: &Store, name: &str) -> Result<Option<ConsentRow>> {
    store
        .read("looking up a consent", |pool| async move {
            sqlx::query_as(
                "SELECT name, definition_sha256, granted_by, granted_at \
                 FROM mcp_connection_consents WHERE name = $1",
            )
            .bind(name)
            .fetch_optional(&pool)
            .await
        })
        .await
}
