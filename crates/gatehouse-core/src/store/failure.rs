//! How storage failures reach the user: a lost connection, a failed first
//! connection with its step, a read-only SQLite file, a unique violation.

use sqlx::any::AnyConnectOptions;

use super::{DatabaseKind, Store};
use crate::error::{Error, codes};
use crate::redact::redact_urls;

impl Store {
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
}

/// Whether a failed statement lost its connection (so nothing was applied by
/// it in a read, and a fresh connection may succeed).
pub(crate) fn is_connection_lost(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Io(_) | sqlx::Error::WorkerCrashed => true,
        // The next connection may well work.
        sqlx::Error::Database(db) => db
            .code()
            .is_some_and(|c| crate::error::postgres_connection_lost(&c)),
        _ => false,
    }
}

/// A clear error for a failed first connection, with its step and a hint.
pub(super) fn connect_error(shown: &str, backend: DatabaseKind, err: &sqlx::Error) -> Error {
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
pub(super) fn sqlite_readonly(options: &AnyConnectOptions, shown: &str) -> Option<Error> {
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
