//! SQL for the access generation: a counter that every write changing what an
//! actor may do moves, so a long-running server re-reads its actor only then.

use super::{Store, Tx};
use crate::error::{Error, Result};

/// Moves the generation inside a write transaction (keys, users, import).
pub async fn bump(tx: &mut Tx) -> Result<()> {
    sqlx::query("UPDATE access_generation SET gen = gen + 1 WHERE id = 1")
        .execute(&mut **tx)
        .await
        .map_err(|e| Error::storage("moving the access generation", e))?;
    Ok(())
}

/// The committed generation: one single-row read by primary key.
pub async fn generation(store: &Store) -> Result<i64> {
    if let Some(direct) = store.direct() {
        return direct.generation();
    }
    store
        .read("reading the access generation", |pool| async move {
            sqlx::query_scalar("SELECT gen FROM access_generation WHERE id = 1")
                .fetch_one(&pool)
                .await
        })
        .await
}
