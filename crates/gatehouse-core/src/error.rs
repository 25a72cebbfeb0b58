//! One error shape for every caller: a stable `SCREAMING_CASE` code, a message
//! for a person, and a hint saying what to do next.
//!
//! The CLI prints it to stderr (stdout stays clean), the MCP server turns it into
//! a tool error, and the desktop app sends it over IPC as `{code, message, hint}`.
//! Internals (SQL text, OS errors) go to the log, never into `message`.

use serde::{Deserialize, Serialize};

/// The error type of every fallible function in `gatehouse-core`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Error {
    /// Stable identifier scripts and the UI match on.
    pub code: Code,
    /// What went wrong, for a person; never carries a secret.
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
    /// Machine-readable detail (for example `{"reason": "revoked"}`).
    pub detail: Option<serde_json::Value>,
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The serialisable form that crosses process and IPC boundaries.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct ErrorBody {
    pub code: Code,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub hint: Option<String>,
    /// Machine-readable detail; its shape depends on the code.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "unknown")]
    pub detail: Option<serde_json::Value>,
}

impl Error {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            hint: None,
            detail: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn detail(mut self, detail: serde_json::Value) -> Self {
        self.detail = Some(detail);
        self
    }

    /// A storage failure: the detail goes to the log, the user sees the code.
    /// Causes a person can act on (locked, disk full, read-only, connection
    /// lost) get their own code and hint, read from the driver's typed error
    /// ([`DriverError::cause`]); anything else is `STORAGE_ERROR`.
    pub fn storage(context: &str, err: impl DriverError) -> Self {
        let text = crate::redact::redact_urls(&err.to_string());
        tracing::error!(context, error = %text, "storage error");
        if let Some(cause) = err.cause() {
            return cause.error(context);
        }
        Self::new(codes::STORAGE_ERROR, format!("storage error while {context}; see the log"))
            .hint("check that the site's database is reachable and not corrupted; run with GATEHOUSE_LOG=debug for detail")
    }

    /// Invalid input from a caller.
    pub fn invalid(code: Code, message: impl Into<String>, hint: impl Into<String>) -> Self {
        Self::new(code, message).hint(hint)
    }

    /// The error as a client of the server may see it: a database failure
    /// keeps its code and hint but not where the database is (its URL, in
    /// the message and the detail), which is the operator's business.
    pub fn for_client(&self) -> Error {
        let database = matches!(
            self.code,
            codes::STORAGE_ERROR
                | codes::DATABASE_URL_INVALID
                | codes::DATABASE_UNREACHABLE
                | codes::DATABASE_AUTH_FAILED
                | codes::DATABASE_LOCKED
                | codes::DATABASE_READONLY
        );
        if !database {
            return self.clone();
        }
        let mut message = String::with_capacity(self.message.len());
        for word in self.message.split_inclusive(' ') {
            if word.contains("://") {
                message.push_str("the site's database");
                if word.ends_with(' ') {
                    message.push(' ');
                }
            } else {
                message.push_str(word);
            }
        }
        let mut e = self.clone();
        e.message = message;
        if let Some(serde_json::Value::Object(d)) = &mut e.detail {
            d.remove("url");
        }
        e
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            code: self.code,
            message: self.message.clone(),
            hint: self.hint.clone(),
            detail: self.detail.clone(),
        }
    }
}

/// The cause of a storage failure a person can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageCause {
    Locked,
    DiskFull,
    ReadOnly,
    Unreachable,
}

/// Whether a PostgreSQL SQLSTATE says the session is gone while the server
/// may well take a new one: class 08 (connection exceptions), shut down,
/// crashed, starting (57P01–03), a session ended as idle (57P05: a managed
/// server's `idle_session_timeout`, a pooler's) or idle in a transaction
/// (25P03). One list for the cause shown and the retry of a read
/// (`store::failure::is_connection_lost`).
pub(crate) fn postgres_connection_lost(state: &str) -> bool {
    state.starts_with("08") || matches!(state, "57P01" | "57P02" | "57P03" | "57P05" | "25P03")
}

impl StorageCause {
    pub fn code(self) -> Code {
        match self {
            StorageCause::Locked => codes::DATABASE_LOCKED,
            StorageCause::DiskFull => codes::DISK_FULL,
            StorageCause::ReadOnly => codes::DATABASE_READONLY,
            StorageCause::Unreachable => codes::DATABASE_UNREACHABLE,
        }
    }

    /// The error a person sees: what happened while doing `context`, and what to do.
    pub fn error(self, context: &str) -> Error {
        let (what, hint) = match self {
            StorageCause::Locked => (
                "the database is locked by another process",
                "another program holds a long write transaction on the site's database (an open sqlite3 shell, a backup tool); finish it and retry",
            ),
            StorageCause::DiskFull => (
                "the disk holding the database is full",
                "free space on the disk that holds the site's database, then retry; nothing was half-written",
            ),
            StorageCause::ReadOnly => (
                "the database can only be read",
                "make the database file and its folder writable by this user (or connect to a writable PostgreSQL server), then retry",
            ),
            StorageCause::Unreachable => (
                "lost the connection to the database",
                "check that the database server is running; writes are not retried, so re-run the command once it is back",
            ),
        };
        Error::new(self.code(), format!("{what} while {context}")).hint(hint)
    }

    /// From an SQLite result code (extended codes included).
    fn of_sqlite(code: i32) -> Option<Self> {
        const SQLITE_IOERR_SHMSIZE: i32 = 4874;
        match code & 0xff {
            5 | 6 => Some(StorageCause::Locked), // BUSY, LOCKED
            13 => Some(StorageCause::DiskFull),  // FULL
            8 => Some(StorageCause::ReadOnly),   // READONLY
            // The -shm file could not grow: opening a WAL database on a full
            // disk fails with it before any write.
            10 if code == SQLITE_IOERR_SHMSIZE => Some(StorageCause::DiskFull),
            _ => None,
        }
    }

    /// From a PostgreSQL SQLSTATE.
    fn of_sqlstate(state: &str) -> Option<Self> {
        match state {
            "55P03" => Some(StorageCause::Locked),   // lock_not_available
            "53100" => Some(StorageCause::DiskFull), // disk_full
            "25006" => Some(StorageCause::ReadOnly), // read_only_sql_transaction
            s if postgres_connection_lost(s) => Some(StorageCause::Unreachable),
            _ => None,
        }
    }

    /// From an I/O error's kind.
    fn of_io(err: &std::io::Error) -> Option<Self> {
        use std::io::ErrorKind::*;
        match err.kind() {
            StorageFull => Some(StorageCause::DiskFull),
            ReadOnlyFilesystem => Some(StorageCause::ReadOnly),
            ConnectionReset | ConnectionAborted | ConnectionRefused | NotConnected | BrokenPipe
            | UnexpectedEof => Some(StorageCause::Unreachable),
            _ => None,
        }
    }

    /// The fallback for errors that arrive only as text (a driver's error
    /// without a code, a message relayed from elsewhere): SQLite's and
    /// PostgreSQL's wordings.
    pub fn of_text(text: &str) -> Option<Self> {
        let t = text.to_ascii_lowercase();
        let has = |needles: &[&str]| needles.iter().any(|n| t.contains(n));
        if has(&[
            "database is locked",
            "database table is locked",
            "lock timeout",
        ]) {
            Some(StorageCause::Locked)
        } else if has(&[
            "database or disk is full",
            "no space left on device",
            "could not extend file",
        ]) {
            Some(StorageCause::DiskFull)
        } else if has(&[
            "attempt to write a readonly database",
            "read-only transaction",
            "read-only file system",
        ]) {
            Some(StorageCause::ReadOnly)
        } else if has(&[
            "connection reset",
            "broken pipe",
            "unexpected end of file",
            "terminating connection",
            "connection refused",
            "server closed the connection",
        ]) {
            Some(StorageCause::Unreachable)
        } else {
            None
        }
    }
}

/// An error from a storage driver (or one relayed as text), classified by its
/// type where it carries one: the driver's database code (SQLite extended
/// result codes, PostgreSQL SQLSTATE), an I/O error's kind, a pool timeout.
/// The text is read only when there is no type to read.
pub trait DriverError: std::fmt::Display {
    fn cause(&self) -> Option<StorageCause> {
        StorageCause::of_text(&self.to_string())
    }
}

impl DriverError for sqlx::Error {
    fn cause(&self) -> Option<StorageCause> {
        match self {
            sqlx::Error::Database(db) => {
                if let Some(e) = db.try_downcast_ref::<sqlx::sqlite::SqliteError>() {
                    sqlx::error::DatabaseError::code(e)
                        .and_then(|c| c.parse().ok())
                        .and_then(StorageCause::of_sqlite)
                } else if let Some(e) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
                    StorageCause::of_sqlstate(e.code())
                } else {
                    StorageCause::of_text(db.message())
                }
            }
            sqlx::Error::Io(e) => StorageCause::of_io(e),
            sqlx::Error::PoolTimedOut => Some(StorageCause::Unreachable),
            sqlx::Error::Migrate(m) => m.cause(),
            other => StorageCause::of_text(&other.to_string()),
        }
    }
}

impl DriverError for sqlx::migrate::MigrateError {
    fn cause(&self) -> Option<StorageCause> {
        match self {
            sqlx::migrate::MigrateError::Execute(e)
            | sqlx::migrate::MigrateError::ExecuteMigration(e, _) => e.cause(),
            other => StorageCause::of_text(&other.to_string()),
        }
    }
}

impl DriverError for rusqlite::Error {
    fn cause(&self) -> Option<StorageCause> {
        match self {
            rusqlite::Error::SqliteFailure(e, _) => StorageCause::of_sqlite(e.extended_code),
            other => StorageCause::of_text(&other.to_string()),
        }
    }
}

impl DriverError for std::io::Error {
    fn cause(&self) -> Option<StorageCause> {
        StorageCause::of_io(self)
    }
}

/// A blocking task that panicked or was cancelled: never a cause a person can act on.
impl DriverError for tokio::task::JoinError {
    fn cause(&self) -> Option<StorageCause> {
        None
    }
}

/// A row that did not decode: never a cause a person can act on.
impl DriverError for serde_json::Error {
    fn cause(&self) -> Option<StorageCause> {
        None
    }
}

impl DriverError for str {}
impl DriverError for String {}
impl<T: DriverError + ?Sized> DriverError for &T {
    fn cause(&self) -> Option<StorageCause> {
        (**self).cause()
    }
}

impl From<sqlx::Error> for Error {
    fn from(err: sqlx::Error) -> Self {
        Error::storage("talking to the database", err)
    }
}

/// Every stable code, declared once: the variant's name *is* the string scripts
/// and the UI match on, so one grep finds the code's declaration, every use and
/// the page's handling of it. The page's TypeScript union of codes (and its
/// `CODES` list, in this order) is generated from this enum. Codes are grouped
/// by the domain that raises them.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::Display,
    strum::EnumString,
    strum::EnumIter,
    strum::IntoStaticStr,
    ts_rs::TS,
)]
#[allow(non_camel_case_types)]
pub enum Code {
    // Storage: the site's database and files.
    STORAGE_ERROR,
    IO_ERROR,
    DATABASE_URL_INVALID,
    DATABASE_UNREACHABLE,
    DATABASE_AUTH_FAILED,
    DATABASE_LOCKED,
    DISK_FULL,
    DATABASE_READONLY,
    /// A stored word (an audit action, an end reason, a protocol era) that
    /// this build does not know: written by a newer build, or edited in.
    STORED_VALUE_UNKNOWN,

    // Site folder, settings, export and import.
    SITE_NOT_FOUND,
    SITE_EXISTS,
    SITE_CONFIG_INVALID,
    SITE_CONFIG_KEY_INVALID,
    SITE_CONFIG_KEY_NOT_FOUND,
    IMPORT_INVALID,
    IMPORT_VERSION_UNSUPPORTED,
    IMPORT_TARGET_NOT_EMPTY,
    IMPORT_TAMPERED,

    // Content and media.
    CONTENT_NOT_FOUND,
    SLUG_INVALID,
    SLUG_TAKEN,
    MEDIA_NOT_FOUND,
    MEDIA_FILENAME_INVALID,
    MEDIA_TOO_LARGE,
    MEDIA_BASE64_INVALID,
    MEDIA_TYPE_UNSUPPORTED,
    MEDIA_TYPE_MISMATCH,

    // Access: users, roles, keys, actors and permissions.
    ROLE_UNKNOWN,
    ROLES_EMPTY,
    EMAIL_INVALID,
    DISPLAY_NAME_INVALID,
    USER_EXISTS,
    USER_NOT_FOUND,
    USER_DISABLED,
    KEY_NOT_FOUND,
    KEY_ALREADY_REVOKED,
    KEY_VERIFY_FAILED,
    LABEL_INVALID,
    EXPIRY_INVALID,
    DURATION_INVALID,
    ACTOR_API_KEY_INVALID,
    ACTOR_EMAIL_UNKNOWN,
    ACTOR_ROLE_NOT_SCRATCH,
    ACTOR_FLAGS_CONFLICT,
    PERMISSION_DENIED,
    // Key restrictions: each refusal names the restriction that refused.
    /// A restriction given to `keys mint` or `keys restrict` cannot be read.
    KEY_RESTRICTION_INVALID,
    /// The tool is not on the key's tool allowlist.
    KEY_TOOL_NOT_ALLOWED,
    /// The key is read-only and the tool's effect class is not read.
    KEY_READ_ONLY,
    /// The entry (or media) is outside the key's content scope.
    KEY_SCOPE_CONTENT,
    /// The key made more calls than its rate allows; retry after the hint's delay.
    KEY_RATE_LIMITED,
    /// `gatehouse serve`: the key is not accepted from the client's network.
    KEY_NETWORK_NOT_ALLOWED,

    // Approvals: calls held until a person says yes.
    /// The client's user declined the call when asked.
    APPROVAL_DECLINED,
    /// The site owner denied the held call.
    APPROVAL_DENIED,
    /// Nobody decided before the policy's timeout.
    APPROVAL_TIMEOUT,
    /// No held call has this id on this site.
    APPROVAL_NOT_FOUND,
    /// The held call was decided already (or ended otherwise).
    APPROVAL_ALREADY_DECIDED,
    /// The held call's timeout passed before this decision.
    APPROVAL_EXPIRED,
    /// The server holding the call is gone, or is shutting down (then its
    /// caller is answered with this, `detail.reason` `server_stopping`): the
    /// call was recorded as not run.
    APPROVAL_HOLDER_GONE,
    /// The actor whose call is held cannot decide it.
    APPROVAL_SELF_DECISION,
    /// Only a person (the terminal's owner or an admin user) decides held calls, never a key.
    APPROVAL_DECIDER_INVALID,
    /// The call is being asked of the client's user, not queued for the owner.
    APPROVAL_NOT_QUEUED,
    /// What the approval was shown (the arguments or the entry) changed since.
    APPROVAL_STALE,
    /// Too many of the caller's calls already wait for a decision; nothing was held.
    APPROVAL_QUEUE_FULL,

    // Audit chain and its checkpoints.
    AUDIT_CHAIN_BROKEN,
    AUDIT_CHECKPOINT_INVALID,
    AUDIT_KEY_INVALID,
    /// This machine's audit anchor was signed with another key than the one
    /// it holds now (replaced or lost): the log is not blamed.
    AUDIT_KEY_CHANGED,

    // Secrets at rest (the system's credential store, or owner-only files).
    /// The credential store holding (or chosen for) a secret does not answer or refused.
    SECRET_STORE_UNAVAILABLE,
    /// A stored secret is not what Gatehouse stored: a file others can read, an entry replaced or gone.
    SECRET_STORE_INVALID,

    // Any caller's input that fits no narrower code.
    INPUT_INVALID,

    // MCP server over HTTP (`gatehouse serve`).
    /// `--require-key`: a request without `Authorization: Bearer`.
    ACTOR_API_KEY_REQUIRED,
    /// An API key in the URL (it is in logs and history already).
    API_KEY_IN_URL,
    /// Over the key's (or the address's) request rate.
    RATE_LIMITED,
    /// A `Host` outside the allowlist (DNS rebinding).
    HOST_NOT_ALLOWED,
    /// A browser `Origin` outside the allowlist.
    ORIGIN_NOT_ALLOWED,
    /// Listening beyond loopback without TLS or a trusted proxy.
    LISTEN_UNSAFE,
    /// The TLS certificate or key cannot be read or used.
    TLS_INVALID,
    /// A setting of `gatehouse serve` (a flag, `[serve]` in gatehouse.toml,
    /// the Serve form) looks like a secret; these settings are kept in clear text.
    SERVE_SETTING_SECRET,
    /// The desktop's `gatehouse serve` is running already.
    SERVE_ALREADY_RUNNING,
    /// The desktop's `gatehouse serve` is not running.
    SERVE_NOT_RUNNING,
    /// The desktop's `gatehouse serve` exited or did not answer while starting.
    SERVE_START_FAILED,

    // OAuth on `gatehouse serve` (access::oauth).
    /// A scope name that does not exist.
    OAUTH_SCOPE_INVALID,
    /// A token's scopes do not cover the action.
    OAUTH_SCOPE_INSUFFICIENT,
    /// An unknown client, bad client metadata, or failed client authentication.
    OAUTH_CLIENT_INVALID,
    /// A redirect URI that is not registered or may not be.
    OAUTH_REDIRECT_INVALID,
    /// A malformed authorization or token request.
    OAUTH_REQUEST_INVALID,
    /// An authorization code or refresh token that is unknown, expired, spent or mismatched.
    OAUTH_GRANT_INVALID,
    /// An access token that is unknown, expired, revoked or for another resource.
    OAUTH_TOKEN_INVALID,
    /// No such grant (or already revoked).
    OAUTH_GRANT_NOT_FOUND,
    /// Too many client registrations.
    OAUTH_REGISTRATION_LIMITED,
    /// A consent form without its CSRF token, or for a request that expired or was answered.
    OAUTH_CONSENT_INVALID,
    /// `oauth approve` without a yes: it showed what the code asks for and
    /// approved nothing.
    OAUTH_PAIRING_UNCONFIRMED,

    // MCP server: built-in tools.
    TOOL_ARGUMENTS_INVALID,
    HTTP_FETCH_URL_INVALID,
    HTTP_FETCH_BLOCKED,
    HTTP_FETCH_FAILED,
    HTTP_FETCH_TIMEOUT,
    HTTP_FETCH_TOO_MANY_REDIRECTS,

    // Sandbox: starting a child server.
    ENV_INVALID,
    ENV_HOST_VAR_MISSING,
    SPAWN_FAILED,
    SCRATCH_UNSAFE,
    SANDBOX_UNAVAILABLE,
    SANDBOX_PROFILE_INVALID,

    // MCP client: the protocol and a call's outcome.
    CALL_INVALID,
    CALL_TIMEOUT,
    CALL_CANCELLED,
    /// The server exited under a call. `gatehouse mcp` and `serve` answer a
    /// call they cut short when they stop with it too (`detail.reason`
    /// `server_stopping`; `detail.outcome` `failed` for a read, else
    /// `outcome_unknown`).
    SERVER_EXITED,
    RESOURCE_LIMIT,
    HOST_KILLED,
    PROTOCOL_VIOLATION,
    PROTOCOL_UNSUPPORTED,
    REMOTE_ERROR,
    CONNECTION_CLOSED,
    INPUT_REQUIRED_UNSUPPORTED,

    // Stored connections: definitions, consent, pinned tools, kept results.
    CONNECTION_NAME_INVALID,
    CONNECTION_EXISTS,
    CONNECTION_NOT_FOUND,
    CONNECTION_TOOLS_CHANGED,
    CONNECTION_NOTHING_TO_APPROVE,
    CONSENT_REQUIRED,
    CONSENT_STALE,
    CALL_RESULT_NOT_KEPT,

    // Client configuration: render, install, doctor.
    CLIENT_UNKNOWN,
    CONFIG_SECRET_REF_UNSUPPORTED,
    CONFIG_NAME_INVALID,
    CONFIG_PATH_INVALID,
    CONFIG_VALIDATION_FAILED,
    CONFIG_FILE_UNPARSABLE,
    CONFIG_INSTALL_UNSUPPORTED,
    CONFIG_SCOPE_UNSUPPORTED,
    CONFIG_KEY_IN_PROJECT,
    CONFIG_HOME_UNKNOWN,
    /// `config install`: a project or local scope without a project folder.
    CONFIG_PROJECT_REQUIRED,
    /// `config doctor`: the installed client reads another file than this one.
    CONFIG_FILE_IGNORED,
    /// `config install`: the file changed between the previewed diff and the write.
    CONFIG_FILE_CHANGED,
    /// `config --url`: the client cannot reach a remote server with a key.
    CONFIG_REMOTE_UNSUPPORTED,
    /// `config --url`: the URL is not one a key may be sent to.
    CONFIG_URL_INVALID,
    /// `config doctor`: a remote entry's server is unreachable or refused it.
    CONFIG_REMOTE_FAILED,
    CONFIG_DOCTOR_PROBLEMS,
    /// `config doctor`: the command a client entry starts does not exist.
    COMMAND_NOT_FOUND,
    /// `config doctor`: the command a client entry starts is not executable.
    COMMAND_NOT_EXECUTABLE,
    /// `config doctor`: the entry's key expires within 7 days.
    KEY_EXPIRING,

    // Desktop app.
    SITE_NOT_OPEN,
    CLI_BINARY_NOT_FOUND,
    KEY_SECRET_UNAVAILABLE,
    CONNECTION_NOT_OPEN,
}

impl Code {
    /// The stable string, e.g. `"SITE_NOT_FOUND"`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Every code, in declaration order.
    pub fn all() -> impl Iterator<Item = Code> {
        <Code as strum::IntoEnumIterator>::iter()
    }
}

/// Lets tests and scripts compare with the stable string: `err.code == "SITE_NOT_FOUND"`.
impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The codes by their bare names (`codes::SITE_NOT_FOUND`), for call sites
/// that `use crate::error::codes` rather than spelling `Code::` each time.
/// Re-exports of the variants, not a second list.
pub mod codes {
    pub use super::Code::*;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// serde, strum and `Display` must agree, or the CLI, the log and the page
    /// would show different strings for one code; and the name in the source must
    /// be the wire string, so a grep for what a script saw finds the code.
    #[test]
    fn every_code_is_named_as_its_unique_wire_string() {
        let mut seen = HashSet::new();
        for code in Code::all() {
            let s = code.as_str();
            assert_eq!(format!("{code:?}"), s, "the variant is named as its string");
            assert!(
                s.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
                "{s}"
            );
            assert_eq!(serde_json::to_value(code).unwrap(), s);
            assert_eq!(code.to_string(), s);
            assert_eq!(s.parse::<Code>().unwrap(), code);
            assert_eq!(serde_json::from_value::<Code>(s.into()).unwrap(), code);
            assert!(seen.insert(s), "duplicate {s}");
        }
        // `codes::X` is the variant itself, not a second list that could disagree.
        assert_eq!(codes::STORAGE_ERROR, Code::STORAGE_ERROR);
        assert_eq!(codes::IO_ERROR.as_str(), "IO_ERROR");
    }

    #[test]
    fn body_carries_the_code_as_its_string() {
        let body = Error::new(codes::SITE_NOT_FOUND, "gone")
            .hint("look")
            .body();
        assert_eq!(
            serde_json::to_value(&body).unwrap(),
            serde_json::json!({"code": "SITE_NOT_FOUND", "message": "gone", "hint": "look"})
        );
    }

    async fn sqlite(path: &std::path::Path, mode: &str) -> sqlx::AnyConnection {
        use sqlx::Connection;
        sqlx::any::install_default_drivers();
        let url = format!("sqlite://{}?mode={mode}", path.display());
        sqlx::AnyConnection::connect(&url).await.unwrap()
    }

    async fn run(conn: &mut sqlx::AnyConnection, sql: &str) -> Result<(), sqlx::Error> {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(conn)
            .await
            .map(|_| ())
    }

    fn storage(err: impl DriverError) -> Code {
        let e = Error::storage("testing", err);
        assert!(e.hint.is_some());
        assert!(!e.message.contains("(code"), "{}", e.message);
        e.code
    }

    /// Real errors from the real drivers (sqlx's SQLite behind `Any`, as the
    /// store uses it, and rusqlite), each classified by its code.
    #[tokio::test]
    async fn storage_failures_name_their_cause_from_the_drivers_codes() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let mut a = sqlite(&db, "rwc").await;
        run(&mut a, "PRAGMA journal_mode = WAL; CREATE TABLE t (v BLOB)")
            .await
            .unwrap();

        // Locked: another connection holds the write lock, this one does not wait.
        let mut b = sqlite(&db, "rw").await;
        run(&mut b, "PRAGMA busy_timeout = 0").await.unwrap();
        run(&mut a, "BEGIN IMMEDIATE").await.unwrap();
        let busy = run(&mut b, "INSERT INTO t VALUES (1)").await.unwrap_err();
        assert_eq!(storage(busy), codes::DATABASE_LOCKED);
        let direct = rusqlite::Connection::open(&db).unwrap();
        direct.busy_timeout(std::time::Duration::ZERO).unwrap();
        let busy = direct.execute("INSERT INTO t VALUES (1)", []).unwrap_err();
        assert_eq!(storage(busy), codes::DATABASE_LOCKED);
        run(&mut a, "ROLLBACK").await.unwrap();

        // Read-only: the file opened read-only.
        let mut ro = sqlite(&db, "ro").await;
        let readonly = run(&mut ro, "INSERT INTO t VALUES (1)").await.unwrap_err();
        assert_eq!(storage(readonly), codes::DATABASE_READONLY);
        let direct =
            rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        let readonly = direct.execute("INSERT INTO t VALUES (1)", []).unwrap_err();
        assert_eq!(storage(readonly), codes::DATABASE_READONLY);

        // Full: the database may not grow past its page limit (SQLITE_FULL).
        run(&mut a, "PRAGMA max_page_count = 8").await.unwrap();
        let full = run(&mut a, "INSERT INTO t VALUES (zeroblob(100000))")
            .await
            .unwrap_err();
        assert_eq!(storage(full), codes::DISK_FULL);
        run(&mut a, "PRAGMA max_page_count = 1000000")
            .await
            .unwrap();

        // A failure that only *reads* like one: a trigger's message is text
        // anyone can write. The text scan alone would call it read-only.
        run(&mut a, "INSERT INTO t VALUES (1)").await.unwrap();
        run(
            &mut a,
            "CREATE TRIGGER no BEFORE DELETE ON t BEGIN \
             SELECT RAISE(ABORT, 'attempt to write a readonly database: database is locked'); END",
        )
        .await
        .unwrap();
        let hostile = run(&mut a, "DELETE FROM t").await.unwrap_err();
        assert!(
            StorageCause::of_text(&hostile.to_string()).is_some(),
            "{hostile}"
        );
        assert_eq!(storage(hostile), codes::STORAGE_ERROR);

        // Unreachable: nothing listens on the port (an I/O error), and a pool
        // whose only connection is taken.
        use sqlx::Connection;
        let refused = sqlx::AnyConnection::connect("postgres://u:p@127.0.0.1:1/db")
            .await
            .unwrap_err();
        assert!(matches!(refused, sqlx::Error::Io(_)), "{refused:?}");
        assert_eq!(storage(refused), codes::DATABASE_UNREACHABLE);
        let pool = sqlx::any::AnyPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(std::time::Duration::from_millis(50))
            .connect(&format!("sqlite://{}?mode=rw", db.display()))
            .await
            .unwrap();
        let _held = pool.acquire().await.unwrap();
        let timed_out = pool.acquire().await.unwrap_err();
        assert_eq!(storage(timed_out), codes::DATABASE_UNREACHABLE);

        // A real UNIQUE violation: typed as one (the store turns it into
        // SLUG_TAKEN and the like), and no storage cause a person must act on.
        run(&mut a, "CREATE UNIQUE INDEX one_v ON t (v)")
            .await
            .unwrap();
        let dup = run(&mut a, "INSERT INTO t VALUES (1)").await.unwrap_err();
        assert!(crate::store::is_unique_violation(&dup), "{dup:?}");
        assert_eq!(storage(dup), codes::STORAGE_ERROR);

        // Text with no type behind it still names its cause.
        assert_eq!(storage("database or disk is full"), codes::DISK_FULL);
        assert_eq!(storage("no audit head row"), codes::STORAGE_ERROR);
    }

    /// PostgreSQL's SQLSTATEs, from a real server when one is configured:
    /// a read-only transaction, a lock wait that gives up, a unique violation
    /// (not a storage cause: the store turns it into the domain's code), and
    /// a connection the server terminates.
    #[tokio::test]
    async fn postgres_failures_name_their_cause_from_the_sqlstate() {
        use sqlx::Connection;
        let Some(base) = gatehouse_test_pg::base_url_or_skip() else {
            return;
        };
        sqlx::any::install_default_drivers();
        let url = format!("{base}/postgres");
        let mut a = sqlx::AnyConnection::connect(&url).await.unwrap();
        let mut b = sqlx::AnyConnection::connect(&url).await.unwrap();
        // A real table: PostgreSQL lets a read-only transaction write temp tables.
        let table = format!("storage_cause_probe_{}", std::process::id());
        run(
            &mut a,
            &format!("DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (v INT UNIQUE)"),
        )
        .await
        .unwrap();
        let readonly = run(
            &mut a,
            &format!("BEGIN READ ONLY; INSERT INTO {table} VALUES (1)"),
        )
        .await
        .unwrap_err();
        run(&mut a, "ROLLBACK").await.unwrap();
        assert_eq!(storage(readonly), codes::DATABASE_READONLY);

        run(&mut a, &format!("INSERT INTO {table} VALUES (1)"))
            .await
            .unwrap();
        let dup = run(&mut a, &format!("INSERT INTO {table} VALUES (1)"))
            .await
            .unwrap_err();
        assert!(crate::store::is_unique_violation(&dup), "{dup:?}");
        assert_eq!(storage(dup), codes::STORAGE_ERROR);

        run(&mut a, &format!("BEGIN; LOCK TABLE {table}"))
            .await
            .unwrap();
        let locked = run(
            &mut b,
            &format!("SET lock_timeout = '20ms'; SELECT * FROM {table}"),
        )
        .await
        .unwrap_err();
        run(&mut a, &format!("ROLLBACK; DROP TABLE {table}"))
            .await
            .unwrap();
        assert_eq!(storage(locked), codes::DATABASE_LOCKED);

        // The server ends b's session (as an administrator or a restart would).
        let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&mut b)
            .await
            .unwrap();
        sqlx::query("SELECT pg_terminate_backend($1)")
            .bind(pid)
            .execute(&mut a)
            .await
            .unwrap();
        let gone = run(&mut b, "SELECT 1").await.unwrap_err();
        assert_eq!(storage(&gone), codes::DATABASE_UNREACHABLE, "{gone:?}");
    }

    /// A client of the server learns a database failure's code and hint,
    /// not where the database is: its URL, user and host had been sent to
    /// every key holder (with a password the URL scan missed, that too).
    #[test]
    fn a_client_sees_no_database_location() {
        let e = Error::new(
            codes::DATABASE_UNREACHABLE,
            "lost the connection to the database at postgres://app:***@db.internal:5432/site while reading",
        )
        .hint("check that the database server is running")
        .detail(serde_json::json!({"step": "connect", "url": "postgres://app:***@db.internal:5432/site"}));
        let c = e.for_client();
        assert_eq!(c.code, codes::DATABASE_UNREACHABLE);
        assert!(!c.message.contains("db.internal"), "{}", c.message);
        assert!(c.message.contains("the site's database"), "{}", c.message);
        assert_eq!(c.detail, Some(serde_json::json!({"step": "connect"})));
        assert_eq!(c.hint, e.hint);
        let other = Error::new(codes::CONTENT_NOT_FOUND, "see https://example.org/x");
        assert_eq!(other.for_client().message, other.message);
    }
}
