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

pub mod access;
pub mod audit;
pub mod calls;
pub mod checkpoints;
pub mod connections;
pub mod consents;
pub mod content;
pub mod content_pending;
mod direct;
pub mod held_calls;
pub mod keys;
pub mod media;
pub mod oauth;
pub mod portable;
pub mod site_config;
pub mod tool_pins;
pub mod usage;
pub mod users;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyConnection, AnyPool, ConnectOptions, Connection, Executor};

use crate::error::{Error, Result, codes};
use crate::redact::redact_urls;

/// A transaction; one from [`Store::begin_write`] on a SQLite file also holds
/// the process's write gate until it commits or is dropped, so the direct
/// group commit (`direct`) never meets it at SQLite's busy handler.
pub struct Tx {
    inner: sqlx::Transaction<'static, sqlx::Any>,
    _gate: Option<tokio::sync::OwnedSemaphorePermit>,
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

static SQLITE_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// How long one connection attempt may take before it is reported as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Attempts of a read (the first one included) when its connection drops.
const READ_ATTEMPTS: u32 = 5;
/// The first pause before a retry; it doubles each time (50, 100, 200, 400 ms).
const RETRY_BACKOFF: Duration = Duration::from_millis(50);

/// Settings every connection gets, the pool's and the one that migrates.
async fn prepare(
    conn: &mut AnyConnection,
    backend: DatabaseKind,
) -> std::result::Result<(), sqlx::Error> {
    if backend == DatabaseKind::Sqlite {
        conn.execute("PRAGMA journal_mode = WAL").await?;
        conn.execute("PRAGMA busy_timeout = 15000").await?;
        conn.execute("PRAGMA foreign_keys = ON").await?;
        conn.execute("PRAGMA synchronous = NORMAL").await?;
    }
    Ok(())
}

impl Store {
    /// Opens (creating a SQLite file if needed) and migrates the database at `url`.
    ///
    /// The first connection is made directly, not through the pool, so a failure
    /// is reported at once with its step (`connect`, `authenticate`, `open`,
    /// `migrate`) instead of after the pool's retries time out.
    pub async fn open(url: &str) -> Result<Store> {
        sqlx::any::install_default_drivers();
        let backend = backend_of(url)?;
        let shown: Arc<str> = redact_urls(url).into();
        let url = with_host_password(url, backend);
        let options: AnyConnectOptions = url.parse().map_err(|e: sqlx::Error| {
            tracing::debug!(error = %redact_urls(&e.to_string()), "bad database url");
            Error::invalid(
                codes::DATABASE_URL_INVALID,
                format!("cannot parse database URL {shown}"),
                "use sqlite:///path/to/file.db or postgres://user@host:5432/dbname",
            )
            .detail(serde_json::json!({"step": "parse", "url": &*shown}))
        })?;
        let mut conn = match tokio::time::timeout(CONNECT_TIMEOUT, options.connect()).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => return Err(connect_error(&shown, backend, &e)),
            Err(_) => {
                tracing::debug!(url = %shown, "database connect timed out");
                return Err(Error::new(
                    codes::DATABASE_UNREACHABLE,
                    format!(
                        "cannot reach the database at {shown}: no answer within {}s",
                        CONNECT_TIMEOUT.as_secs()
                    ),
                )
                .hint("check the host and port in the database URL and that no firewall is in the way")
                .detail(serde_json::json!({"step": "connect", "url": &*shown})));
            }
        };
        let migrated = async {
            prepare(&mut conn, backend).await?;
            let migrator = match backend {
                DatabaseKind::Sqlite => &SQLITE_MIGRATOR,
                DatabaseKind::Postgres => &POSTGRES_MIGRATOR,
            };
            // `run_direct`, not `run`: `run` is generic over `Acquire<'a>`, which makes
            // this future unprovably `Send` for async hosts (see site.rs tests).
            migrator
                .run_direct(None, &mut conn, false)
                .await
                .map_err(sqlx::Error::from)
        }
        .await;
        let _ = conn.close().await;
        migrated.map_err(|e| {
            let text = redact_urls(&e.to_string());
            tracing::error!(url = %shown, error = %text, "migration failed");
            let detail = serde_json::json!({"step": "migrate", "url": &*shown});
            if let Some(err) = sqlite_readonly(&options, &shown) {
                return err.detail(serde_json::json!({"step": "open", "url": &*shown}));
            }
            // A full disk or a read-only server stops the first statement too;
            // those are not a damaged or newer database.
            if let Some(cause) = crate::error::DriverError::cause(&e) {
                return cause
                    .error(&format!("opening the database at {shown}"))
                    .detail(detail);
            }
            Error::new(
                codes::STORAGE_ERROR,
                format!("migrating the database at {shown} failed; see the log"),
            )
            .hint("the database may belong to a newer Gatehouse, or be damaged")
            .detail(detail)
        })?;
        let pool_of = |size: u32| {
            AnyPoolOptions::new()
                .max_connections(size)
                .acquire_timeout(CONNECT_TIMEOUT)
                // No ping before each use: a connection that died idle fails its first
                // statement instead, which `read` retries and `begin_write` reopens.
                .test_before_acquire(false)
                .after_connect(move |conn, _| Box::pin(prepare(conn, backend)))
                .connect_lazy_with(options.clone())
        };
        let direct = match backend {
            DatabaseKind::Sqlite => url
                .parse::<sqlx::sqlite::SqliteConnectOptions>()
                .ok()
                .and_then(|o| direct::Direct::for_file(o.get_filename())),
            DatabaseKind::Postgres => None,
        };
        let (pool, writer) = match backend {
            DatabaseKind::Sqlite => (pool_of(4), pool_of(1)),
            DatabaseKind::Postgres => {
                let pool = pool_of(8);
                (pool.clone(), pool)
            }
        };
        Ok(Store {
            pool,
            writer,
            group: Arc::default(),
            direct,
            backend,
            shown,
        })
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
    pub(crate) fn direct(&self) -> Option<&direct::Direct> {
        self.direct.as_deref()
    }

    /// [`Store::direct`], for work moved to a blocking thread.
    pub(crate) fn direct_shared(&self) -> Option<Arc<direct::Direct>> {
        self.direct.clone()
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

    /// Begins a transaction that holds the store's write lock (see the module doc).
    ///
    /// Opening it is retried when the connection turns out to be dead, because
    /// nothing of the caller's has been sent yet; the caller's statements and
    /// its commit are never retried.
    pub async fn begin_write(&self) -> Result<Tx> {
        Ok(self.begin_write_returning_head().await?.0)
    }

    /// [`Store::begin_write`], also returning the audit head (`seq`, `hash`)
    /// as the locking statement found it.
    pub(crate) async fn begin_write_returning_head(&self) -> Result<(Tx, (i64, String))> {
        let gate = self.write_gate().await;
        let mut attempt = 1;
        loop {
            let started = async {
                let mut tx = Tx {
                    inner: self.writer.begin().await?,
                    _gate: None,
                };
                let head = sqlx::query_as(
                    "UPDATE audit_head SET seq = seq WHERE id = 1 RETURNING seq, hash",
                )
                .fetch_one(&mut *tx)
                .await?;
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
    pub(crate) async fn write_gate(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
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
        let delay = RETRY_BACKOFF * 2u32.pow(attempt - 1);
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

    /// The error for a failed statement: a lost connection names the database,
    /// anything else is a storage error whose detail goes to the log.
    pub(crate) fn error(&self, context: &str, err: sqlx::Error) -> Error {
        if is_connection_lost(&err) || matches!(err, sqlx::Error::PoolTimedOut) {
            tracing::error!(context, url = %self.shown, error = %redact_urls(&err.to_string()), "database unreachable");
            return Error::new(
                codes::DATABASE_UNREACHABLE,
                format!("lost the connection to the database at {} while {context}", self.shown),
            )
            .hint("check that the database server is running; reads are retried, writes are not, so re-run the command once it is back")
            .detail(serde_json::json!({"step": "query", "url": &*self.shown}));
        }
        Error::storage(context, err)
    }

    /// Closes the pool, so SQLite checkpoints its WAL before the process exits.
    pub async fn close(&self) {
        if let Some(direct) = &self.direct {
            direct.close();
        }
        self.writer.close().await;
        self.pool.close().await;
    }
}

/// Whether a failed statement lost its connection (so nothing was applied by
/// it in a read, and a fresh connection may succeed).
pub(crate) fn is_connection_lost(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Io(_) | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|c| {
            // PostgreSQL class 08 (connection exception), admin/crash shutdown,
            // cannot connect now (starting up).
            c.starts_with("08") || c == "57P01" || c == "57P02" || c == "57P03"
        }),
        _ => false,
    }
}

/// `url` with libpq's `PGPASSWORD` when it names no password itself: the
/// variable was taken out of our environment at start
/// ([`crate::host_env::take_host_secrets`]), where the driver would look.
fn with_host_password(url: &str, backend: DatabaseKind) -> std::borrow::Cow<'_, str> {
    let password = (backend == DatabaseKind::Postgres)
        .then(|| crate::host_env::host_var("PGPASSWORD"))
        .flatten();
    if let (Some(password), Ok(mut parsed)) = (password, url::Url::parse(url))
        && parsed.password().is_none()
        && parsed.set_password(Some(&password)).is_ok()
    {
        return parsed.to_string().into();
    }
    url.into()
}

/// A clear error for a failed first connection, with its step and a hint.
fn connect_error(shown: &str, backend: DatabaseKind, err: &sqlx::Error) -> Error {
    // The user sees the error itself; the log keeps sqlx's full wording.
    tracing::debug!(url = %shown, error = %redact_urls(&err.to_string()), "database connect failed");
    let reason = short_reason(err);
    let code = match err {
        sqlx::Error::Database(db) => db.code().map(|c| c.into_owned()),
        _ => None,
    };
    let (code, step, message, hint) = match (backend, code.as_deref()) {
        (DatabaseKind::Postgres, Some("28P01" | "28000")) => (
            codes::DATABASE_AUTH_FAILED,
            "authenticate",
            format!("the database at {shown} refused the login: {reason}"),
            "check the user name and password in the database URL (--database-url, GATEHOUSE_DATABASE_URL or database_url in gatehouse.toml)",
        ),
        (DatabaseKind::Postgres, Some("3D000")) => (
            codes::DATABASE_UNREACHABLE,
            "connect",
            format!("cannot open the database at {shown}: {reason}"),
            "create it first (for example `createdb NAME`) or fix the database name at the end of the URL",
        ),
        (DatabaseKind::Postgres, _) => (
            codes::DATABASE_UNREACHABLE,
            "connect",
            format!("cannot reach the database at {shown}: {reason}"),
            "check that PostgreSQL is running and listening on that host and port, and that the URL is right",
        ),
        (DatabaseKind::Sqlite, _) => (
            codes::DATABASE_UNREACHABLE,
            "open",
            format!("cannot open the database file {shown}: {reason}"),
            "check that the site folder exists and is writable",
        ),
    };
    Error::new(code, message)
        .hint(hint)
        .detail(serde_json::json!({"step": step, "url": shown}))
}

/// `DATABASE_READONLY` when the SQLite file behind `options`, or its folder,
/// cannot be written (a read-only mount, or no permission), else `None`.
///
/// Opening such a database fails before any write: SQLite falls back to a
/// read-only open, then cannot create the `-shm` file WAL mode needs beside
/// it and reports only "unable to open database file" (code 14).
fn sqlite_readonly(options: &AnyConnectOptions, shown: &str) -> Option<Error> {
    let sqlite: sqlx::sqlite::SqliteConnectOptions = options.try_into().ok()?;
    let file = sqlite.get_filename();
    let folder = file.parent().filter(|p| !p.as_os_str().is_empty())?;
    #[cfg(unix)]
    let writable = |p: &std::path::Path| {
        !matches!(
            nix::unistd::access(p, nix::unistd::AccessFlags::W_OK),
            Err(nix::errno::Errno::EROFS | nix::errno::Errno::EACCES)
        )
    };
    // Windows has no access(2): the read-only attribute is what stops a write.
    #[cfg(not(unix))]
    let writable =
        |p: &std::path::Path| std::fs::metadata(p).map_or(true, |m| !m.permissions().readonly());
    if writable(folder) && writable(file) {
        return None;
    }
    Some(
        Error::new(
            codes::DATABASE_READONLY,
            format!("the database file {shown} or its folder cannot be written by this process"),
        )
        .hint("SQLite writes the database and creates its -wal and -shm files beside it: make the site folder writable by this user (or mount it read-write), then retry"),
    )
}

fn backend_of(url: &str) -> Result<DatabaseKind> {
    if url.starts_with("sqlite:") {
        Ok(DatabaseKind::Sqlite)
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(DatabaseKind::Postgres)
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

/// The SQLite URL of a database file.
///
/// The path is encoded by the `url` crate (`Url::from_file_path`), which escapes
/// `%` too; `SqliteConnectOptions::filename(..).to_url_lossy()` does not, so a
/// path holding `%41` would come back as `A` (see docs/decisions.md).
pub fn sqlite_url(path: &std::path::Path) -> String {
    match url::Url::from_file_path(path) {
        Ok(file) => format!("sqlite://{}?mode=rwc", file.path()),
        // Only a relative path fails; callers pass absolute ones.
        Err(()) => format!("sqlite://{}?mode=rwc", path.display()),
    }
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

#[cfg(test)]
mod migration_tests {
    use sqlx::{Connection, Row};

    use super::*;
    use crate::access::audit;

    async fn first_three(conn: &mut AnyConnection) -> Vec<sqlx::any::AnyRow> {
        sqlx::query("SELECT seq, ts, actor, action, subject, detail, prev_hash, hash FROM audit_log WHERE seq <= 3 ORDER BY seq")
            .fetch_all(conn)
            .await
            .unwrap()
    }

    /// Every column of `rows` as text.
    fn text(rows: Vec<sqlx::any::AnyRow>) -> Vec<Vec<String>> {
        rows.iter()
            .map(|r| {
                (0..8)
                    .map(|i| {
                        r.try_get::<String, _>(i)
                            .or_else(|_| r.try_get::<i64, _>(i).map(|n| n.to_string()))
                            .unwrap()
                    })
                    .collect()
            })
            .collect()
    }

    /// Migration 0017 rebuilds the SQLite audit log keyed by its rowid: every
    /// entry of an older database survives byte for byte (the chain still
    /// verifies), appends continue the chain, and `seq` has no index of its own.
    #[tokio::test]
    async fn audit_seq_becomes_the_rowid_and_every_entry_survives() {
        sqlx::any::install_default_drivers();
        let tmp = tempfile::tempdir().unwrap();
        let url = sqlite_url(&tmp.path().join("old.db"));
        // A database as migration 0016 left it, holding a valid chain.
        let mut conn = AnyConnection::connect(&url).await.unwrap();
        SQLITE_MIGRATOR
            .run_direct(Some(16), &mut conn, false)
            .await
            .unwrap();
        let mut prev = audit::GENESIS.to_string();
        for seq in 1..=3_i64 {
            let detail = format!("{{\"n\":{seq}}}");
            let hash =
                super::audit::entry_hash(seq, 1000 + seq, "cli", "test", "s", &detail, &prev);
            sqlx::query(
                "INSERT INTO audit_log (seq, ts, actor, action, subject, detail, prev_hash, hash) \
                 VALUES ($1, $2, 'cli', 'test', 's', $3, $4, $5)",
            )
            .bind(seq)
            .bind(1000 + seq)
            .bind(detail)
            .bind(&prev)
            .bind(&hash)
            .execute(&mut conn)
            .await
            .unwrap();
            prev = hash;
        }
        sqlx::query("UPDATE audit_head SET seq = 3, hash = $1 WHERE id = 1")
            .bind(&prev)
            .execute(&mut conn)
            .await
            .unwrap();
        let before = text(first_three(&mut conn).await);
        conn.close().await.unwrap();

        let store = Store::open(&url).await.unwrap();
        let report = audit::verify(&store).await.unwrap();
        assert!(report.ok && report.entries == 3, "{report:?}");
        let mut tx = store.begin_write().await.unwrap();
        let seq = audit::append(
            &mut tx,
            audit::AuditEntry {
                actor: "cli",
                action: audit::AuditAction::SiteConfigSet,
                subject: "after",
                detail: serde_json::json!({}),
            },
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(seq, 4);
        let report = audit::verify(&store).await.unwrap();
        assert!(report.ok && report.entries == 4, "{report:?}");
        store.close().await;

        let mut conn = AnyConnection::connect(&url).await.unwrap();
        assert_eq!(text(first_three(&mut conn).await), before);
        let indexes: Vec<String> = sqlx::query("SELECT name FROM pragma_index_list('audit_log')")
            .fetch_all(&mut conn)
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert!(
            !indexes.iter().any(|i| i.starts_with("sqlite_autoindex")),
            "seq still has an index beside the rowid: {indexes:?}"
        );
        let pk_type: String =
            sqlx::query("SELECT type FROM pragma_table_info('audit_log') WHERE pk = 1")
                .fetch_one(&mut conn)
                .await
                .unwrap()
                .get(0);
        assert_eq!(pk_type, "INTEGER");
        conn.close().await.unwrap();
    }
}
