//! One error shape for every caller: a stable `SCREAMING_CASE` code, a message
//! for a person, and a hint saying what to do next.
//!
//! The CLI prints it to stderr (stdout stays clean), the MCP server turns it into
//! a tool error, and the desktop app sends it over IPC as `{code, message, hint}`.
//! Internals (SQL text, OS errors) go to the log, never into `message`.

use serde::{Deserialize, Serialize};

/// The error type of every fallible function in `gatehouse-core`.
#[derive(Debug, thiserror::Error)]
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
    /// lost) get their own code and hint; anything else is `STORAGE_ERROR`.
    pub fn storage(context: &str, err: impl std::fmt::Display) -> Self {
        let text = crate::redact::redact_urls(&err.to_string());
        tracing::error!(context, error = %text, "storage error");
        if let Some((code, what, hint)) = storage_cause(&text) {
            return Self::new(code, format!("{what} while {context}")).hint(hint);
        }
        Self::new(codes::STORAGE, format!("storage error while {context}; see the log"))
            .hint("check that the site's database is reachable and not corrupted; run with GATEHOUSE_LOG=debug for detail")
    }

    /// Invalid input from a caller.
    pub fn invalid(code: Code, message: impl Into<String>, hint: impl Into<String>) -> Self {
        Self::new(code, message).hint(hint)
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

/// The cause of a storage failure a person can act on, read from the
/// driver's error text (SQLite and PostgreSQL wordings and codes).
pub(crate) fn storage_cause(text: &str) -> Option<(Code, &'static str, &'static str)> {
    let t = text.to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| t.contains(n));
    if has(&[
        "database is locked",
        "database table is locked",
        "(code: 5)",
        "(code: 6)",
        "lock timeout",
        "55p03",
    ]) {
        Some((
            codes::DATABASE_LOCKED,
            "the database is locked by another process",
            "another program holds a long write transaction on the site's database (an open sqlite3 shell, a backup tool); finish it and retry",
        ))
    } else if has(&[
        "database or disk is full",
        "disk is full",
        "no space left on device",
        "could not extend file",
        "53100",
        "(code: 13)",
        // SQLITE_IOERR_SHMSIZE: the -shm file could not grow, so opening a
        // WAL database on a full disk fails with it before any write.
        "(code: 4874)",
    ]) {
        Some((
            codes::DISK_FULL,
            "the disk holding the database is full",
            "free space on the disk that holds the site's database, then retry; nothing was half-written",
        ))
    } else if has(&[
        "readonly database",
        "read-only",
        "read only",
        "25006",
        "(code: 8)",
    ]) {
        Some((
            codes::DATABASE_READONLY,
            "the database can only be read",
            "make the database file and its folder writable by this user (or connect to a writable PostgreSQL server), then retry",
        ))
    } else if has(&[
        "connection reset",
        "broken pipe",
        "unexpected end of file",
        "unexpected eof",
        "terminating connection",
        "connection closed",
        "connection refused",
        "pool timed out",
        "server closed the connection",
    ]) {
        Some((
            codes::DATABASE_UNREACHABLE,
            "lost the connection to the database",
            "check that the database server is running; writes are not retried, so re-run the command once it is back",
        ))
    } else {
        None
    }
}

impl From<sqlx::Error> for Error {
    fn from(err: sqlx::Error) -> Self {
        Error::storage("talking to the database", err)
    }
}

/// Every stable code, in one place: scripts and the UI match on these strings
/// (`SCREAMING_SNAKE_CASE` of the variant name), and the page's TypeScript union
/// of codes is generated from this enum.
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
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum Code {
    StorageError,
    IoError,
    SiteNotFound,
    SiteExists,
    SiteConfigInvalid,
    DatabaseUrlInvalid,
    DatabaseUnreachable,
    DatabaseAuthFailed,
    ImportInvalid,
    ImportVersionUnsupported,
    ImportTargetNotEmpty,
    RoleUnknown,
    RolesEmpty,
    EmailInvalid,
    UserExists,
    UserNotFound,
    UserDisabled,
    KeyNotFound,
    KeyAlreadyRevoked,
    LabelInvalid,
    ExpiryInvalid,
    DurationInvalid,
    ActorApiKeyInvalid,
    ActorEmailUnknown,
    ActorRoleNotScratch,
    ActorFlagsConflict,
    KeyVerifyFailed,
    PermissionDenied,
    AuditChainBroken,
    ContentNotFound,
    SlugInvalid,
    SlugTaken,
    MediaNotFound,
    InputInvalid,
    // MCP client (issue 4).
    EnvInvalid,
    EnvHostVarMissing,
    SpawnFailed,
    // Client config generation (issue 3).
    ClientUnknown,
    ConfigSecretRefUnsupported,
    ConfigNameInvalid,
    ConfigPathInvalid,
    ConfigValidationFailed,
    // MCP client calls (issue 4).
    CallInvalid,
    CallTimeout,
    CallCancelled,
    ServerExited,
    ResourceLimit,
    ProtocolViolation,
    ProtocolUnsupported,
    RemoteError,
    ConnectionClosed,
    InputRequiredUnsupported,
    // Desktop app.
    SiteNotOpen,
    CliBinaryNotFound,
    KeySecretUnavailable,
    ConnectionNotOpen,
    // MCP server tools (issue 3).
    MediaFilenameInvalid,
    MediaTooLarge,
    MediaBase64Invalid,
    MediaTypeUnsupported,
    MediaTypeMismatch,
    HttpFetchUrlInvalid,
    HttpFetchBlocked,
    HttpFetchFailed,
    HttpFetchTimeout,
    HttpFetchTooManyRedirects,
    ToolArgumentsInvalid,
    // MCP client connections (issue 4).
    ConnectionNameInvalid,
    ConnectionExists,
    ConnectionNotFound,
    ImportTampered,
    AuditCheckpointInvalid,
    AuditKeyInvalid,
    DatabaseLocked,
    DiskFull,
    DatabaseReadonly,
    SiteConfigKeyInvalid,
    SiteConfigKeyNotFound,
    DisplayNameInvalid,
    ScratchUnsafe,
    SandboxUnavailable,
    HostKilled,
    ConnectionToolsChanged,
    ConnectionNothingToApprove,
    SandboxProfileInvalid,
    ConfigFileUnparsable,
    ConfigInstallUnsupported,
    ConfigScopeUnsupported,
    ConfigKeyInProject,
    ConfigHomeUnknown,
    ConfigDoctorProblems,
    /// `config doctor`: the command a client entry starts does not exist.
    CommandNotFound,
    /// `config doctor`: the entry's key expires within 7 days.
    KeyExpiring,
    // Desktop Connections and Actor preview screens (issue 12).
    ConsentRequired,
    ConsentStale,
    CallResultNotKept,
    /// `config install`: a project or local scope without a project folder.
    ConfigProjectRequired,
    /// `config doctor`: the command a client entry starts is not executable.
    CommandNotExecutable,
    /// `config doctor`: the installed client reads another file than this one.
    ConfigFileIgnored,
    /// `config install`: the file changed between the previewed diff and the write.
    ConfigFileChanged,
    /// `config --url`: the client cannot reach a remote server with a key.
    ConfigRemoteUnsupported,
    /// `config --url`: the URL is not one a key may be sent to.
    ConfigUrlInvalid,
    /// `config doctor`: a remote entry's server is unreachable or refused it.
    ConfigRemoteFailed,
    /// `gatehouse serve --require-key`: a request without `Authorization: Bearer`.
    ActorApiKeyRequired,
    /// `gatehouse serve`: an API key in the URL (it is in logs and history already).
    ApiKeyInUrl,
    /// `gatehouse serve`: over the key's (or the address's) request rate.
    RateLimited,
    /// `gatehouse serve`: a `Host` outside the allowlist (DNS rebinding).
    HostNotAllowed,
    /// `gatehouse serve`: a browser `Origin` outside the allowlist.
    OriginNotAllowed,
    /// `gatehouse serve`: listening beyond loopback without TLS or a trusted proxy.
    ListenUnsafe,
    /// `gatehouse serve`: the TLS certificate or key cannot be read or used.
    TlsInvalid,
    // Key restrictions: each refusal names the restriction that refused.
    /// A restriction given to `keys mint` or `keys restrict` cannot be read.
    KeyRestrictionInvalid,
    /// The tool is not on the key's tool allowlist.
    KeyToolNotAllowed,
    /// The key is read-only and the tool's effect class is not read.
    KeyReadOnly,
    /// The entry (or media) is outside the key's content scope.
    KeyScopeContent,
    /// The key made more calls than its rate allows; retry after the hint's delay.
    KeyRateLimited,
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

/// The historic constant names (`codes::STORAGE`, …), kept so call sites read
/// as before; each is just a [`Code`] variant.
pub mod codes {
    use super::Code;

    pub const STORAGE: Code = Code::StorageError;
    pub const IO: Code = Code::IoError;
    pub const SITE_NOT_FOUND: Code = Code::SiteNotFound;
    pub const SITE_EXISTS: Code = Code::SiteExists;
    pub const SITE_CONFIG_INVALID: Code = Code::SiteConfigInvalid;
    pub const DATABASE_URL_INVALID: Code = Code::DatabaseUrlInvalid;
    pub const DATABASE_UNREACHABLE: Code = Code::DatabaseUnreachable;
    pub const DATABASE_AUTH_FAILED: Code = Code::DatabaseAuthFailed;
    pub const IMPORT_INVALID: Code = Code::ImportInvalid;
    pub const IMPORT_VERSION_UNSUPPORTED: Code = Code::ImportVersionUnsupported;
    pub const IMPORT_TARGET_NOT_EMPTY: Code = Code::ImportTargetNotEmpty;
    pub const ROLE_UNKNOWN: Code = Code::RoleUnknown;
    pub const ROLES_EMPTY: Code = Code::RolesEmpty;
    pub const EMAIL_INVALID: Code = Code::EmailInvalid;
    pub const USER_EXISTS: Code = Code::UserExists;
    pub const USER_NOT_FOUND: Code = Code::UserNotFound;
    pub const USER_DISABLED: Code = Code::UserDisabled;
    pub const KEY_NOT_FOUND: Code = Code::KeyNotFound;
    pub const KEY_ALREADY_REVOKED: Code = Code::KeyAlreadyRevoked;
    pub const LABEL_INVALID: Code = Code::LabelInvalid;
    pub const EXPIRY_INVALID: Code = Code::ExpiryInvalid;
    pub const DURATION_INVALID: Code = Code::DurationInvalid;
    pub const ACTOR_API_KEY_INVALID: Code = Code::ActorApiKeyInvalid;
    pub const ACTOR_EMAIL_UNKNOWN: Code = Code::ActorEmailUnknown;
    pub const ACTOR_ROLE_NOT_SCRATCH: Code = Code::ActorRoleNotScratch;
    pub const ACTOR_FLAGS_CONFLICT: Code = Code::ActorFlagsConflict;
    pub const KEY_VERIFY_FAILED: Code = Code::KeyVerifyFailed;
    pub const PERMISSION_DENIED: Code = Code::PermissionDenied;
    pub const AUDIT_CHAIN_BROKEN: Code = Code::AuditChainBroken;
    pub const CONTENT_NOT_FOUND: Code = Code::ContentNotFound;
    pub const SLUG_INVALID: Code = Code::SlugInvalid;
    pub const SLUG_TAKEN: Code = Code::SlugTaken;
    pub const MEDIA_NOT_FOUND: Code = Code::MediaNotFound;
    pub const INPUT_INVALID: Code = Code::InputInvalid;
    // MCP client (issue 4).
    pub const ENV_INVALID: Code = Code::EnvInvalid;
    pub const ENV_HOST_VAR_MISSING: Code = Code::EnvHostVarMissing;
    pub const SPAWN_FAILED: Code = Code::SpawnFailed;
    // Client config generation (issue 3).
    pub const CLIENT_UNKNOWN: Code = Code::ClientUnknown;
    pub const CONFIG_SECRET_REF_UNSUPPORTED: Code = Code::ConfigSecretRefUnsupported;
    pub const CONFIG_NAME_INVALID: Code = Code::ConfigNameInvalid;
    pub const CONFIG_PATH_INVALID: Code = Code::ConfigPathInvalid;
    pub const CONFIG_VALIDATION_FAILED: Code = Code::ConfigValidationFailed;
    // MCP client calls (issue 4).
    pub const CALL_INVALID: Code = Code::CallInvalid;
    pub const CALL_TIMEOUT: Code = Code::CallTimeout;
    pub const CALL_CANCELLED: Code = Code::CallCancelled;
    pub const SERVER_EXITED: Code = Code::ServerExited;
    pub const RESOURCE_LIMIT: Code = Code::ResourceLimit;
    pub const PROTOCOL_VIOLATION: Code = Code::ProtocolViolation;
    pub const PROTOCOL_UNSUPPORTED: Code = Code::ProtocolUnsupported;
    pub const REMOTE_ERROR: Code = Code::RemoteError;
    pub const CONNECTION_CLOSED: Code = Code::ConnectionClosed;
    pub const INPUT_REQUIRED_UNSUPPORTED: Code = Code::InputRequiredUnsupported;
    // Desktop app.
    pub const SITE_NOT_OPEN: Code = Code::SiteNotOpen;
    pub const CLI_BINARY_NOT_FOUND: Code = Code::CliBinaryNotFound;
    pub const KEY_SECRET_UNAVAILABLE: Code = Code::KeySecretUnavailable;
    pub const CONNECTION_NOT_OPEN: Code = Code::ConnectionNotOpen;
    // MCP server tools (issue 3).
    pub const MEDIA_FILENAME_INVALID: Code = Code::MediaFilenameInvalid;
    pub const MEDIA_TOO_LARGE: Code = Code::MediaTooLarge;
    pub const MEDIA_BASE64_INVALID: Code = Code::MediaBase64Invalid;
    pub const MEDIA_TYPE_UNSUPPORTED: Code = Code::MediaTypeUnsupported;
    pub const MEDIA_TYPE_MISMATCH: Code = Code::MediaTypeMismatch;
    pub const HTTP_FETCH_URL_INVALID: Code = Code::HttpFetchUrlInvalid;
    pub const HTTP_FETCH_BLOCKED: Code = Code::HttpFetchBlocked;
    pub const HTTP_FETCH_FAILED: Code = Code::HttpFetchFailed;
    pub const HTTP_FETCH_TIMEOUT: Code = Code::HttpFetchTimeout;
    pub const HTTP_FETCH_TOO_MANY_REDIRECTS: Code = Code::HttpFetchTooManyRedirects;
    pub const TOOL_ARGUMENTS_INVALID: Code = Code::ToolArgumentsInvalid;
    // MCP client connections (issue 4).
    pub const CONNECTION_NAME_INVALID: Code = Code::ConnectionNameInvalid;
    pub const CONNECTION_EXISTS: Code = Code::ConnectionExists;
    pub const CONNECTION_NOT_FOUND: Code = Code::ConnectionNotFound;
    pub const IMPORT_TAMPERED: Code = Code::ImportTampered;
    pub const AUDIT_CHECKPOINT_INVALID: Code = Code::AuditCheckpointInvalid;
    pub const AUDIT_KEY_INVALID: Code = Code::AuditKeyInvalid;
    pub const DATABASE_LOCKED: Code = Code::DatabaseLocked;
    pub const DISK_FULL: Code = Code::DiskFull;
    pub const DATABASE_READONLY: Code = Code::DatabaseReadonly;
    pub const SITE_CONFIG_KEY_INVALID: Code = Code::SiteConfigKeyInvalid;
    pub const SITE_CONFIG_KEY_NOT_FOUND: Code = Code::SiteConfigKeyNotFound;
    pub const DISPLAY_NAME_INVALID: Code = Code::DisplayNameInvalid;
    pub const SCRATCH_UNSAFE: Code = Code::ScratchUnsafe;
    pub const SANDBOX_UNAVAILABLE: Code = Code::SandboxUnavailable;
    pub const HOST_KILLED: Code = Code::HostKilled;
    pub const CONNECTION_TOOLS_CHANGED: Code = Code::ConnectionToolsChanged;
    pub const CONNECTION_NOTHING_TO_APPROVE: Code = Code::ConnectionNothingToApprove;
    pub const SANDBOX_PROFILE_INVALID: Code = Code::SandboxProfileInvalid;
    pub const CONFIG_FILE_UNPARSABLE: Code = Code::ConfigFileUnparsable;
    pub const CONFIG_INSTALL_UNSUPPORTED: Code = Code::ConfigInstallUnsupported;
    pub const CONFIG_SCOPE_UNSUPPORTED: Code = Code::ConfigScopeUnsupported;
    pub const CONFIG_KEY_IN_PROJECT: Code = Code::ConfigKeyInProject;
    pub const CONFIG_HOME_UNKNOWN: Code = Code::ConfigHomeUnknown;
    pub const CONFIG_DOCTOR_PROBLEMS: Code = Code::ConfigDoctorProblems;
    pub const COMMAND_NOT_FOUND: Code = Code::CommandNotFound;
    pub const KEY_EXPIRING: Code = Code::KeyExpiring;
    // Desktop Connections and Actor preview screens (issue 12).
    pub const CONSENT_REQUIRED: Code = Code::ConsentRequired;
    pub const CONSENT_STALE: Code = Code::ConsentStale;
    pub const CALL_RESULT_NOT_KEPT: Code = Code::CallResultNotKept;
    pub const CONFIG_PROJECT_REQUIRED: Code = Code::ConfigProjectRequired;
    pub const COMMAND_NOT_EXECUTABLE: Code = Code::CommandNotExecutable;
    pub const CONFIG_FILE_IGNORED: Code = Code::ConfigFileIgnored;
    pub const CONFIG_FILE_CHANGED: Code = Code::ConfigFileChanged;
    pub const CONFIG_REMOTE_UNSUPPORTED: Code = Code::ConfigRemoteUnsupported;
    pub const CONFIG_URL_INVALID: Code = Code::ConfigUrlInvalid;
    pub const CONFIG_REMOTE_FAILED: Code = Code::ConfigRemoteFailed;
    pub const ACTOR_API_KEY_REQUIRED: Code = Code::ActorApiKeyRequired;
    pub const API_KEY_IN_URL: Code = Code::ApiKeyInUrl;
    pub const RATE_LIMITED: Code = Code::RateLimited;
    pub const HOST_NOT_ALLOWED: Code = Code::HostNotAllowed;
    pub const ORIGIN_NOT_ALLOWED: Code = Code::OriginNotAllowed;
    pub const LISTEN_UNSAFE: Code = Code::ListenUnsafe;
    pub const TLS_INVALID: Code = Code::TlsInvalid;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// serde, strum and `Display` must agree, or the CLI, the log and the page
    /// would show different strings for one code.
    #[test]
    fn every_code_has_one_stable_screaming_case_string() {
        let mut seen = HashSet::new();
        for code in Code::all() {
            let s = code.as_str();
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
        assert_eq!(codes::STORAGE.as_str(), "STORAGE_ERROR");
        assert_eq!(codes::MEDIA_BASE64_INVALID.as_str(), "MEDIA_BASE64_INVALID");
        assert_eq!(
            codes::HTTP_FETCH_TOO_MANY_REDIRECTS.as_str(),
            "HTTP_FETCH_TOO_MANY_REDIRECTS"
        );
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

    #[test]
    fn storage_failures_name_their_cause() {
        for (text, code) in [
            (
                "error returned from database: (code: 5) database is locked",
                codes::DATABASE_LOCKED,
            ),
            (
                "error returned from database: (code: 13) database or disk is full",
                codes::DISK_FULL,
            ),
            (
                "error returned from database: (code: 4874) disk I/O error",
                codes::DISK_FULL,
            ),
            (
                "error returned from database: (code: 8) attempt to write a readonly database",
                codes::DATABASE_READONLY,
            ),
            (
                "error returned from database: cannot execute INSERT in a read-only transaction",
                codes::DATABASE_READONLY,
            ),
            (
                "error returned from database: could not extend file \"base/1/2\": No space left on device",
                codes::DISK_FULL,
            ),
            (
                "error communicating with database: Connection reset by peer (os error 104)",
                codes::DATABASE_UNREACHABLE,
            ),
            (
                "error returned from database: terminating connection due to administrator command",
                codes::DATABASE_UNREACHABLE,
            ),
            (
                "error returned from database: (code: 11) database disk image is malformed",
                codes::STORAGE,
            ),
        ] {
            let e = Error::storage("testing", text);
            assert_eq!(e.code, code, "{text}");
            assert!(e.hint.is_some());
            assert!(!e.message.contains("(code"), "{}", e.message);
        }
    }
}
