//! SQL for signed audit checkpoints. Signing and checking are in
//! `crate::site::checkpoint`.

use super::Store;
use crate::error::{Error, Result, codes};

/// One stored checkpoint: the chain head (`seq`, `hash`) at `ts`, signed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, sqlx::FromRow)]
pub struct CheckpointRow {
    pub seq: i64,
    pub hash: String,
    pub ts: i64,
    /// Hex of the ed25519 public key that signed it.
    pub public_key: String,
    /// Hex of the ed25519 signature.
    pub signature: String,
}

/// Stores a checkpoint; one already stored for the same entry and key is kept.
pub async fn insert(store: &Store, row: &CheckpointRow) -> Result<()> {
    // Through the write gate like every write (see `store::Tx`): without it
    // this insert met the server's group commit at SQLite's lock, and one of
    // the two slept in the busy handler (a busy server signs up to four a second).
    let _gate = store.write_gate().await;
    let sql = "INSERT INTO audit_checkpoints (seq, hash, ts, public_key, signature)
               VALUES ($1, $2, $3, $4, $5) ON CONFLICT (seq, public_key) DO NOTHING";
    let context = "storing an audit checkpoint";
    // On a SQLite file, on the direct writer's connection, which never copies
    // the WAL into the database inside a commit: a pool connection did (an
    // fsync) while holding the gate every call's audit entry waits for. In
    // place, as the group commit does: a hand-off to a blocking thread here
    // kept the gate shut for as long as that thread took to be scheduled.
    //
    // There, too, the `audit_head` row moves up to the last entry, as a
    // server's commits move it within `direct::HEAD_LAG` (`direct::MOVE_HEAD`,
    // the one statement that moves it there): a head signed here is never
    // ahead of the one `audit verify` holds the chain to reach. Elsewhere
    // every append moves the row.
    if let Some(direct) = store.direct_shared() {
        let insert = move |tx: &rusqlite::Connection, row: &CheckpointRow| {
            tx.prepare_cached(sql)?.execute(rusqlite::params![
                row.seq,
                row.hash,
                row.ts,
                row.public_key,
                row.signature
            ])?;
            tx.prepare_cached(super::direct::MOVE_HEAD)?.execute([])
        };
        if direct
            .write(context, false, |tx| insert(tx, row))?
            .is_some()
        {
            return Ok(());
        }
        // Another process holds the write lock: wait for it off the runtime.
        let row = row.clone();
        return tokio::task::spawn_blocking(move || {
            direct.write(context, true, |tx| insert(tx, &row))
        })
        .await
        .map_err(|e| Error::new(codes::IO_ERROR, format!("{context}: {e}")))?
        .map(drop);
    }
    sqlx::query(sql)
        .bind(row.seq)
        .bind(&row.hash)
        .bind(row.ts)
        .bind(&row.public_key)
        .bind(&row.signature)
        .execute(store.writer())
        .await
        .map_err(|e| store.error(context, e))?;
    Ok(())
}

/// Every stored checkpoint, oldest entry first.
pub async fn all(store: &Store) -> Result<Vec<CheckpointRow>> {
    store
        .read("reading the audit checkpoints", |pool| async move {
            sqlx::query_as(
                "SELECT seq, hash, ts, public_key, signature FROM audit_checkpoints ORDER BY seq",
            )
            .fetch_all(&pool)
            .await
        })
        .await
}

/// The stored hash of entry `seq`, if there is one.
pub async fn entry_hash(store: &Store, seq: i64) -> Result<Option<String>> {
    let sql = "SELECT hash FROM audit_log WHERE seq = $1";
    if let Some(direct) = store.direct() {
        return direct.stored_hash(sql, seq);
    }
    store
        .read("reading the audit log", |pool| async move {
            sqlx::query_scalar(sql)
                .bind(seq)
                .fetch_optional(&pool)
                .await
        })
        .await
}
