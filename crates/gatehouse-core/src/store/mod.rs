//! All SQL lives here. Business logic calls these functions and never writes SQL.
//!
//! One code path for both backends: sqlx's `Any` driver, runtime queries with
//! `$n` placeholders (understood by SQLite and PostgreSQL alike) and only portable
//! column types (BIGINT, TEXT, BLOB/BYTEA). Where the dialects truly differ (the
//! full-text index) the function branches on [`Backend`]. Migrations are embedded
//! per backend and run on open.
//!
//! Every write transaction starts with [`Store::begin_write`], whose first
//! statement updates the single `audit_head` row: on SQLite that takes the write
//! lock up front (no deferred-transaction upgrade failures), on PostgreSQL a row
//! lock, so writers — and audit appends — are serialised across processes.

pub mod audit;
pub mod content;
pub mod keys;
pub mod media;
pub mod site_config;
pub mod users;

use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Executor};

use crate::error::{Error, Result, codes};
use crate::redact::redact_urls;

pub type Tx = sqlx::Transaction<'static, sqlx::Any>;

/// Which database a store talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A connection pool to one site's database.
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend)
            .finish()
    }
}

static SQLITE_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

impl Store {
    /// Opens (creating a SQLite file if needed) and migrates the database at `url`.
    pub async fn open(url: &str) -> Result<Store> {
        sqlx::any::install_default_drivers();
        let backend = backend_of(url)?;
        let shown = redact_urls(url);
        let options: AnyConnectOptions = url.parse().map_err(|e: sqlx::Error| {
            tracing::debug!(error = %redact_urls(&e.to_string()), "bad database url");
            Error::invalid(
                codes::DATABASE_URL_INVALID,
                format!("cannot parse database URL {shown}"),
                "use sqlite:///path/to/file.db or postgres://user@host:5432/dbname",
            )
        })?;
        let pool = AnyPoolOptions::new()
            .max_connections(if backend == Backend::Sqlite { 4 } else { 8 })
            .acquire_timeout(Duration::from_secs(15))
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if backend == Backend::Sqlite {
                        conn.execute("PRAGMA journal_mode = WAL").await?;
                        conn.execute("PRAGMA busy_timeout = 15000").await?;
                        conn.execute("PRAGMA foreign_keys = ON").await?;
                        conn.execute("PRAGMA synchronous = NORMAL").await?;
                    }
                    Ok(())
                })
            })
            .connect_with(options)
            .await
            .map_err(|e| {
                tracing::warn!(url = %shown, error = %redact_urls(&e.to_string()), "database connect failed");
                Error::new(codes::DATABASE_UNREACHABLE, format!("cannot connect to {shown}: {}", short_reason(&e)))
                    .hint("check that the database server is running and the URL, user and password are right")
            })?;
        let migrator = match backend {
            Backend::Sqlite => &SQLITE_MIGRATOR,
            Backend::Postgres => &POSTGRES_MIGRATOR,
        };
        migrator.run(&pool).await.map_err(|e| {
            tracing::error!(url = %shown, error = %redact_urls(&e.to_string()), "migration failed");
            Error::new(
                codes::STORAGE,
                format!("migrating {shown} failed; see the log"),
            )
            .hint("the database may belong to a newer Gatehouse, or be damaged")
        })?;
        Ok(Store { pool, backend })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Begins a transaction that holds the store's write lock (see the module doc).
    pub async fn begin_write(&self) -> Result<Tx> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| Error::storage("starting a transaction", e))?;
        sqlx::query("UPDATE audit_head SET seq = seq WHERE id = 1")
            .execute(&mut *tx)
            .await
            .map_err(|e| Error::storage("taking the write lock", e))?;
        Ok(tx)
    }

    /// Closes the pool, so SQLite checkpoints its WAL before the process exits.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

fn backend_of(url: &str) -> Result<Backend> {
    if url.starts_with("sqlite:") {
        Ok(Backend::Sqlite)
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Backend::Postgres)
    } else {
        Err(Error::invalid(
            codes::DATABASE_URL_INVALID,
            format!("unsupported database URL {}", redact_urls(url)),
            "Gatehouse supports sqlite:// and postgres:// URLs",
        ))
    }
}

/// A short, secret-free reason for a connection failure.
fn short_reason(err: &sqlx::Error) -> String {
    let text = match err {
        sqlx::Error::Io(io) => io.to_string(),
        sqlx::Error::PoolTimedOut => "timed out".to_string(),
        sqlx::Error::Database(db) => db.message().to_string(),
        other => other.to_string(),
    };
    redact_urls(&text)
}

/// The SQLite URL of a database file, percent-encoding what a URL cannot hold.
pub fn sqlite_url(path: &std::path::Path) -> String {
    let mut out = String::from("sqlite://");
    for b in path.to_string_lossy().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out.push_str("?mode=rwc");
    out
}

/// Milliseconds since the Unix epoch: the one time format in the store.
pub fn now_ms() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp_nanos() as i64 / 1_000_000
}

/// Whether an error is a unique-constraint violation (on either backend).
pub(crate) fn is_unique_violation(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => {
            db.is_unique_violation()
                || db
                    .code()
                    .is_some_and(|c| c == "2067" || c == "1555" || c == "23505")
        }
        _ => false,
    }
}
