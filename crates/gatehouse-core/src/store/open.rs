//! Opening a store: the URL, the first connection (its failure reported with
//! its step), the migrations, then the read and write pools.

use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyConnection, ConnectOptions, Connection, Executor};

use super::failure::connect_error;
use super::{DatabaseKind, Store, direct, migrate};
use crate::error::{Error, Result, codes};
use crate::redact::redact_urls;

/// How long one connection attempt may take before it is reported as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings every connection gets, the pool's and the one that migrates.
pub(super) async fn prepare(
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

/// [`prepare`], and for the pool's PostgreSQL connections a bound on lock
/// waits: a lock held elsewhere (a long transaction, `LOCK TABLE` by hand)
/// ends a statement after the time SQLite's busy handler waits, as
/// `DATABASE_LOCKED`, where it had held a call, a key check or a CLI command
/// for as long as the lock stood. Not on the migrating connection, which may
/// wait that long for another process's migration.
async fn prepare_pooled(
    conn: &mut AnyConnection,
    backend: DatabaseKind,
) -> std::result::Result<(), sqlx::Error> {
    prepare(conn, backend).await?;
    if backend == DatabaseKind::Postgres {
        conn.execute("SET lock_timeout = '15s'").await?;
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
        Store::open_with(url, true).await
    }

    /// Opens the database at `url` only if it already holds this build's
    /// schema: nothing is created, migrated or set on it first, and no
    /// password of this host's (`PGPASSWORD`) is sent. For a check of a
    /// site that someone else's file names (`config doctor` reading a
    /// cloned project): opened as usual, such a site's `database_url` had
    /// turned any SQLite file of the user's into a Gatehouse database.
    pub async fn open_as_is(url: &str) -> Result<Store> {
        Store::open_with(url, false).await
    }

    async fn open_with(url: &str, own: bool) -> Result<Store> {
        sqlx::any::install_default_drivers();
        let backend = backend_of(url)?;
        let shown: Arc<str> = crate::redact::database_url(url).into();
        let url: std::borrow::Cow<'_, str> = if own {
            with_host_password(url, backend)
        } else {
            url.into()
        };
        if !own
            && backend == DatabaseKind::Sqlite
            && !url
                .parse::<sqlx::sqlite::SqliteConnectOptions>()
                .is_ok_and(|o| o.get_filename().is_file())
        {
            return Err(Error::new(
                codes::STORAGE_ERROR,
                format!("there is no database file at {shown}"),
            )
            .hint("a check never creates a database; open the site with `gatehouse --site DIR` once if it is yours")
            .detail(serde_json::json!({"step": "open", "url": &*shown})));
        }
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
        if own {
            let migrated = migrate::run(&mut conn, backend).await;
            let _ = conn.close().await;
            migrated.map_err(|e| migrate::failed(&e, &options, &shown))?;
        } else {
            let current = migrate::is_current(&mut conn, backend).await;
            let _ = conn.close().await;
            if !current {
                return Err(Error::new(
                    codes::STORAGE_ERROR,
                    format!("{shown} is not a Gatehouse database of this version"),
                )
                .hint("it was left as it is (a check never creates or migrates a database); open the site with `gatehouse --site DIR` once if it is yours")
                .detail(serde_json::json!({"step": "migrate", "url": &*shown})));
            }
        }
        // Past the first connection (which may create the file, and migrates
        // it), no connection creates a SQLite file: with the file renamed or
        // deleted under a running server, the next pool connection had made
        // an empty one at its path, resetting the WAL the old one left, and
        // acknowledged calls were lost.
        let options: AnyConnectOptions = match backend {
            DatabaseKind::Sqlite => url
                .replace("mode=rwc", "mode=rw")
                .parse()
                .unwrap_or(options),
            DatabaseKind::Postgres => options,
        };
        let pool_of = |size: u32| {
            AnyPoolOptions::new()
                .max_connections(size)
                .acquire_timeout(CONNECT_TIMEOUT)
                // No ping before each use: a connection that died idle fails its first
                // statement instead, which `read` retries and `begin_write` reopens.
                .test_before_acquire(false)
                .after_connect(move |conn, _| Box::pin(prepare_pooled(conn, backend)))
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
            committed: Arc::default(),
            recorded_hour: Arc::new(i64::MIN.into()),
            direct,
            backend,
            shown,
        })
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

/// Which backend `url` names (`DATABASE_URL_INVALID` for any other scheme).
pub(crate) fn backend_of(url: &str) -> Result<DatabaseKind> {
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
