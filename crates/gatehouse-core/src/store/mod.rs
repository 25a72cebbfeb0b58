//! All SQL lives here. Business logic calls these functions and never writes SQL.
//!
//! One code path for both backends: sqlx's `Any` driver, runtime queries with
//! `$n` placeholders (understood by SQLite and PostgreSQL alike) and only portable
//! column types (BIGINT, TEXT, BLOB/BYTEA). Where the dialects truly differ (the
//! full-text index) the function branches on [`DatabaseKind`]. Migrations are embedded
//! per backend and run on open.
//!
//! Every write transaction starts with [`Store::begin_write`], whose first
//! statement updates the single `audit_head` row: on SQLite that takes the write
//! lock up front (no deferred-transaction upgrade failures), on PostgreSQL a row
//! lock, so writers — and audit appends — are serialised across processes.
//!
//! On SQLite one connection does all of a process's writing (the writer pool
//! holds one connection; writers queue for it in order), so writers of the
//! same process never meet SQLite's busy handler; only another process can
//! make one wait. Reads use their own pool and, in WAL mode, never block on
//! the writer. Audit entries recorded alone share transactions through a group
//! commit ([`audit::record`]).
//!
//! Map of the store itself: [`Store`] and its accessors here; opening it in
//! `open.rs`, the schema in `migrate.rs`, transactions and retried reads in
//! `tx.rs`, how failures are reported in `failure.rs`; one file per table
//! group below.

pub mod access;
pub mod audit;
pub mod calls;
pub mod checkpoints;
pub mod connections;
pub mod consents;
pub mod content;
pub mod content_pending;
mod direct;
mod failure;
pub mod held_calls;
pub mod keys;
pub mod media;
mod migrate;
pub mod oauth;
mod open;
pub mod portable;
pub mod site_config;
pub mod tool_pins;
mod tx;
pub mod usage;
pub mod users;

use std::sync::Arc;

use sqlx::AnyPool;

pub(crate) use failure::is_unique_violation;
pub(crate) use open::backend_of;
pub use open::sqlite_url;
pub use tx::Tx;

/// Which database a store talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatabaseKind {
    Sqlite,
    Postgres,
}

/// A connection pool to one site's database.
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    /// Where writes go: on SQLite a pool of one connection, on PostgreSQL
    /// the same pool as reads.
    writer: AnyPool,
    /// The audit log's group commit (one committer per opened store).
    group: Arc<audit::GroupCommit>,
    /// The highest audit seq this process's group commits wrote: a head
    /// below it means the log was cut under the process, which must not
    /// sign it (`site::checkpoint`).
    committed: Arc<std::sync::atomic::AtomicI64>,
    /// The hour of `ts` whose `audit_hours` row this process's group commits
    /// wrote or found (`audit::RECORD_HOUR`): rows there are never removed,
    /// so a group commit in the same hour skips the statement.
    recorded_hour: Arc<std::sync::atomic::AtomicI64>,
    /// The hot path's statements in place on a SQLite file (`direct`), and
    /// that file's write gate.
    direct: Option<Arc<direct::Direct>>,
    backend: DatabaseKind,
    /// The database URL with any password replaced by `***`: the only form
    /// that may appear in errors and logs.
    shown: Arc<str>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend)
            .field("url", &self.shown)
            .finish()
    }
}

impl Store {
    /// See the field: 0 before the first group commit.
    pub fn highest_committed(&self) -> i64 {
        self.committed.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn backend(&self) -> DatabaseKind {
        self.backend
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// The pool writes go through (see the module doc).
    pub fn writer(&self) -> &AnyPool {
        &self.writer
    }

    /// The hot path's direct SQLite connections, on a SQLite file.
    pub(crate) fn direct(&self) -> Option<&Arc<direct::Direct>> {
        self.direct.as_ref()
    }

    /// For a server that calls [`Store::arrived`] for every request it
    /// reads on behalf of: reads on its hot path between two arrivals share
    /// one snapshot on a SQLite file (`direct::Direct::share_reads_between_arrivals`).
    pub(crate) fn share_reads_between_arrivals(&self) {
        if let Some(direct) = &self.direct {
            direct.share_reads_between_arrivals();
        }
    }

    /// A request arrived: what is read on its behalf is read after this.
    pub(crate) fn arrived(&self) {
        if let Some(direct) = &self.direct {
            direct.arrived();
        }
    }

    /// [`Store::direct`], for work moved to a blocking thread.
    pub(crate) fn direct_shared(&self) -> Option<Arc<direct::Direct>> {
        self.direct.clone()
    }

    /// Whether the database answers and, on a SQLite file, the path still
    /// names the file this store opened (for `/readyz`): a file renamed or
    /// deleted under the server had left it "ready" while nothing new could
    /// open it.
    pub async fn ready(&self) -> crate::error::Result<()> {
        if let Some(direct) = &self.direct
            && !direct.still_the_file()
        {
            return Err(crate::error::Error::new(
                crate::error::codes::DATABASE_UNREACHABLE,
                format!(
                    "the database file {} was moved or deleted under the server",
                    self.shown_url()
                ),
            )
            .hint("put the file back, or restart the server on the site's database"));
        }
        access::generation(self).await.map(|_| ())
    }

    /// How many audit group commits found the SQLite file locked by another
    /// process and waited for it (always 0 on PostgreSQL). Writers of this
    /// process never make each other wait: they share a write gate.
    pub fn lock_waits(&self) -> u64 {
        self.direct.as_ref().map_or(0, |d| {
            d.lock_waits.load(std::sync::atomic::Ordering::Relaxed)
        })
    }

    /// The database URL with its password redacted.
    pub fn shown_url(&self) -> &str {
        &self.shown
    }

    /// Closes the pool, so SQLite checkpoints its WAL before the process exits.
    pub async fn close(&self) {
        if let Some(direct) = &self.direct {
            // The `audit_head` row up to this process's last commit, whether
            // or not a checkpoint was signed (`direct::HEAD_LAG`).
            let _held = direct.write_gate().await;
            direct.move_head();
            direct.close();
        }
        self.writer.close().await;
        self.pool.close().await;
    }
}
