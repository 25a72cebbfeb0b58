//! Transactions: the write transaction that takes the store's lock first,
//! read transactions, and reads retried when their connection drops.

use std::future::Future;
use std::time::Duration;

use sqlx::{AnyConnection, AnyPool};

use super::Store;
use super::failure::is_connection_lost;
use crate::error::Result;
use crate::redact::redact_urls;

/// Attempts of a read (the first one included) when its connection drops:
/// more than the PostgreSQL pool holds, since after a server restart every
/// pooled connection is dead and each fails once (five had left the first
/// calls after a restart failing with the server up).
const READ_ATTEMPTS: u32 = 10;
/// The first pause before a retry; it doubles each time (10, 20, 40 ms…)
/// up to [`RETRY_BACKOFF_MAX`]: dead pooled connections fail at once, so
/// the first retries come quickly; a server that is down gets longer pauses.
const RETRY_BACKOFF: Duration = Duration::from_millis(10);
const RETRY_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// A transaction; one from [`Store::begin_write`] on a SQLite file also holds
/// the process's write gate until it commits or is dropped, so the direct
/// group commit (`direct`) never meets it at SQLite's busy handler.
pub struct Tx {
    inner: sqlx::Transaction<'static, sqlx::Any>,
    _gate: Option<super::direct::WriteGate>,
    pub(crate) backend: super::DatabaseKind,
}

impl std::ops::Deref for Tx {
    type Target = AnyConnection;
    fn deref(&self) -> &AnyConnection {
        &self.inner
    }
}

impl std::ops::DerefMut for Tx {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        &mut self.inner
    }
}

impl Tx {
    /// Commits, then opens the gate.
    pub async fn commit(self) -> std::result::Result<(), sqlx::Error> {
        self.inner.commit().await
    }

    pub async fn rollback(self) -> std::result::Result<(), sqlx::Error> {
        self.inner.rollback().await
    }
}

impl Store {
    /// Begins a transaction that holds the store's write lock (see the module doc).
    ///
    /// Opening it is retried when the connection turns out to be dead, because
    /// nothing of the caller's has been sent yet; the caller's statements and
    /// its commit are never retried.
    pub async fn begin_write(&self) -> Result<Tx> {
        Ok(self.begin_locked(false).await?.0)
    }

    /// [`Store::begin_write`], also returning the chain's head (`seq`,
    /// `hash`): on PostgreSQL as the locking statement found the `audit_head`
    /// row, which every append there moves; on SQLite, whose server appends
    /// leave that row behind, as `audit::CHAIN_HEAD` finds it.
    pub(crate) async fn begin_write_returning_head(&self) -> Result<(Tx, (i64, String))> {
        self.begin_locked(true).await
    }

    async fn begin_locked(&self, with_head: bool) -> Result<(Tx, (i64, String))> {
        let gate = self.write_gate().await;
        let mut attempt = 1;
        loop {
            let started = async {
                let mut tx = Tx {
                    inner: self.writer.begin().await?,
                    _gate: None,
                    backend: self.backend(),
                };
                let mut head: (i64, String) = sqlx::query_as(
                    "UPDATE audit_head SET seq = seq WHERE id = 1 RETURNING seq, hash",
                )
                .fetch_one(&mut *tx)
                .await?;
                if with_head && self.backend() == super::DatabaseKind::Sqlite {
                    head = sqlx::query_as(super::audit::CHAIN_HEAD)
                        .fetch_one(&mut *tx)
                        .await?;
                }
                Ok::<_, sqlx::Error>((tx, head))
            }
            .await;
            match started {
                Ok((mut tx, head)) => {
                    tx._gate = gate;
                    return Ok((tx, head));
                }
                Err(e) if attempt < READ_ATTEMPTS && is_connection_lost(&e) => {
                    self.backoff("taking the write lock", attempt, &e).await;
                    attempt += 1;
                }
                Err(e) => return Err(self.error("taking the write lock", e)),
            }
        }
    }

    /// Waits for this process's write gate on a SQLite file (see [`Tx`]).
    pub(crate) async fn write_gate(&self) -> Option<super::direct::WriteGate> {
        match &self.direct {
            Some(direct) => Some(direct.write_gate().await),
            None => None,
        }
    }

    /// A read transaction on the read pool (one snapshot of every table).
    pub(crate) async fn begin_read(&self) -> std::result::Result<Tx, sqlx::Error> {
        Ok(Tx {
            inner: self.pool.begin().await?,
            _gate: None,
            backend: self.backend(),
        })
    }

    /// Runs a statement that changes nothing, retrying with backoff when the
    /// connection dropped. Only read functions use it: a write is never replayed,
    /// since a dropped connection cannot tell whether it was applied.
    pub(crate) async fn read<T, F, Fut>(&self, context: &str, mut run: F) -> Result<T>
    where
        F: FnMut(AnyPool) -> Fut,
        Fut: Future<Output = std::result::Result<T, sqlx::Error>>,
    {
        let mut attempt = 1;
        loop {
            match run(self.pool.clone()).await {
                Ok(value) => return Ok(value),
                Err(e) if attempt < READ_ATTEMPTS && is_connection_lost(&e) => {
                    self.backoff(context, attempt, &e).await;
                    attempt += 1;
                }
                Err(e) => return Err(self.error(context, e)),
            }
        }
    }

    async fn backoff(&self, context: &str, attempt: u32, err: &sqlx::Error) {
        let delay = (RETRY_BACKOFF * 2u32.pow(attempt - 1)).min(RETRY_BACKOFF_MAX);
        tracing::warn!(
            context,
            attempt,
            delay_ms = delay.as_millis() as u64,
            url = %self.shown,
            error = %redact_urls(&err.to_string()),
            "database connection lost; retrying"
        );
        tokio::time::sleep(delay).await;
    }
}
