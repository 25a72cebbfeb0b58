//! One error shape for every caller: a stable `SCREAMING_CASE` code, a message
//! for a person, and a hint saying what to do next.
//!
//! The CLI prints it to stderr (stdout stays clean), the MCP server turns it into
//! a tool error, and the desktop app sends it over IPC as `{code, message, hint}`.
//! Internals (SQL text, OS errors) go to the log, never into `message`.

use serde::Serialize;

/// The error type of every fallible function in `gatehouse-core`.
#[derive(Debug, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Error {
    /// Stable identifier scripts and the UI match on.
    pub code: &'static str,
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
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct ErrorBody {
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
}

impl Error {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
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
    pub fn storage(context: &str, err: impl std::fmt::Display) -> Self {
        tracing::error!(context, error = %crate::redact::redact_urls(&err.to_string()), "storage error");
        Self::new(codes::STORAGE, format!("storage error while {context}; see the log"))
            .hint("check that the site's database is reachable and not corrupted; run with GATEHOUSE_LOG=debug for detail")
    }

    /// Invalid input from a caller.
    pub fn invalid(
        code: &'static str,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        Self::new(code, message).hint(hint)
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            code: self.code.to_string(),
            message: self.message.clone(),
            hint: self.hint.clone(),
            detail: self.detail.clone(),
        }
    }
}

impl From<sqlx::Error> for Error {
    fn from(err: sqlx::Error) -> Self {
        Error::storage("talking to the database", err)
    }
}

/// Every stable code in one place, so the docs and the UI can list them.
pub mod codes {
    pub const STORAGE: &str = "STORAGE_ERROR";
    pub const IO: &str = "IO_ERROR";
    pub const SITE_NOT_FOUND: &str = "SITE_NOT_FOUND";
    pub const SITE_EXISTS: &str = "SITE_EXISTS";
    pub const SITE_CONFIG_INVALID: &str = "SITE_CONFIG_INVALID";
    pub const DATABASE_URL_INVALID: &str = "DATABASE_URL_INVALID";
    pub const DATABASE_UNREACHABLE: &str = "DATABASE_UNREACHABLE";
    pub const DATABASE_AUTH_FAILED: &str = "DATABASE_AUTH_FAILED";
    pub const IMPORT_INVALID: &str = "IMPORT_INVALID";
    pub const IMPORT_VERSION_UNSUPPORTED: &str = "IMPORT_VERSION_UNSUPPORTED";
    pub const IMPORT_TARGET_NOT_EMPTY: &str = "IMPORT_TARGET_NOT_EMPTY";
    pub const ROLE_UNKNOWN: &str = "ROLE_UNKNOWN";
    pub const ROLES_EMPTY: &str = "ROLES_EMPTY";
    pub const EMAIL_INVALID: &str = "EMAIL_INVALID";
    pub const USER_EXISTS: &str = "USER_EXISTS";
    pub const USER_NOT_FOUND: &str = "USER_NOT_FOUND";
    pub const KEY_NOT_FOUND: &str = "KEY_NOT_FOUND";
    pub const KEY_ALREADY_REVOKED: &str = "KEY_ALREADY_REVOKED";
    pub const LABEL_INVALID: &str = "LABEL_INVALID";
    pub const EXPIRY_INVALID: &str = "EXPIRY_INVALID";
    pub const DURATION_INVALID: &str = "DURATION_INVALID";
    pub const ACTOR_API_KEY_INVALID: &str = "ACTOR_API_KEY_INVALID";
    pub const ACTOR_EMAIL_UNKNOWN: &str = "ACTOR_EMAIL_UNKNOWN";
    pub const ACTOR_ROLE_NOT_SCRATCH: &str = "ACTOR_ROLE_NOT_SCRATCH";
    pub const ACTOR_FLAGS_CONFLICT: &str = "ACTOR_FLAGS_CONFLICT";
    pub const KEY_VERIFY_FAILED: &str = "KEY_VERIFY_FAILED";
    pub const PERMISSION_DENIED: &str = "PERMISSION_DENIED";
    pub const AUDIT_CHAIN_BROKEN: &str = "AUDIT_CHAIN_BROKEN";
    pub const CONTENT_NOT_FOUND: &str = "CONTENT_NOT_FOUND";
    pub const SLUG_INVALID: &str = "SLUG_INVALID";
    pub const SLUG_TAKEN: &str = "SLUG_TAKEN";
    pub const MEDIA_NOT_FOUND: &str = "MEDIA_NOT_FOUND";
    pub const INPUT_INVALID: &str = "INPUT_INVALID";
    // MCP client (issue 4).
    pub const ENV_INVALID: &str = "ENV_INVALID";
    pub const ENV_HOST_VAR_MISSING: &str = "ENV_HOST_VAR_MISSING";
    pub const SPAWN_FAILED: &str = "SPAWN_FAILED";
    // Client config generation (issue 3).
    pub const CLIENT_UNKNOWN: &str = "CLIENT_UNKNOWN";
    pub const CONFIG_SECRET_REF_UNSUPPORTED: &str = "CONFIG_SECRET_REF_UNSUPPORTED";
    pub const CONFIG_NAME_INVALID: &str = "CONFIG_NAME_INVALID";
    pub const CONFIG_PATH_INVALID: &str = "CONFIG_PATH_INVALID";
    pub const CONFIG_VALIDATION_FAILED: &str = "CONFIG_VALIDATION_FAILED";
    // Client config install, doctor and bundle (issue 13).
    pub const CONFIG_FILE_UNPARSABLE: &str = "CONFIG_FILE_UNPARSABLE";
    pub const CONFIG_INSTALL_UNSUPPORTED: &str = "CONFIG_INSTALL_UNSUPPORTED";
    pub const CONFIG_SCOPE_UNSUPPORTED: &str = "CONFIG_SCOPE_UNSUPPORTED";
    pub const CONFIG_KEY_IN_PROJECT: &str = "CONFIG_KEY_IN_PROJECT";
    pub const CONFIG_HOME_UNKNOWN: &str = "CONFIG_HOME_UNKNOWN";
    pub const CONFIG_DOCTOR_PROBLEMS: &str = "CONFIG_DOCTOR_PROBLEMS";
    // MCP client calls (issue 4).
    pub const CALL_INVALID: &str = "CALL_INVALID";
    pub const CALL_TIMEOUT: &str = "CALL_TIMEOUT";
    pub const CALL_CANCELLED: &str = "CALL_CANCELLED";
    pub const SERVER_EXITED: &str = "SERVER_EXITED";
    pub const RESOURCE_LIMIT: &str = "RESOURCE_LIMIT";
    pub const PROTOCOL_VIOLATION: &str = "PROTOCOL_VIOLATION";
    pub const PROTOCOL_UNSUPPORTED: &str = "PROTOCOL_UNSUPPORTED";
    pub const REMOTE_ERROR: &str = "REMOTE_ERROR";
    pub const CONNECTION_CLOSED: &str = "CONNECTION_CLOSED";
    pub const INPUT_REQUIRED_UNSUPPORTED: &str = "INPUT_REQUIRED_UNSUPPORTED";
    // Desktop app.
    pub const SITE_NOT_OPEN: &str = "SITE_NOT_OPEN";
    pub const CLI_BINARY_NOT_FOUND: &str = "CLI_BINARY_NOT_FOUND";
    pub const KEY_SECRET_UNAVAILABLE: &str = "KEY_SECRET_UNAVAILABLE";
    pub const CONNECTION_NOT_OPEN: &str = "CONNECTION_NOT_OPEN";
    // MCP server tools (issue 3).
    pub const MEDIA_FILENAME_INVALID: &str = "MEDIA_FILENAME_INVALID";
    pub const MEDIA_TOO_LARGE: &str = "MEDIA_TOO_LARGE";
    pub const MEDIA_BASE64_INVALID: &str = "MEDIA_BASE64_INVALID";
    pub const MEDIA_TYPE_UNSUPPORTED: &str = "MEDIA_TYPE_UNSUPPORTED";
    pub const MEDIA_TYPE_MISMATCH: &str = "MEDIA_TYPE_MISMATCH";
    pub const HTTP_FETCH_URL_INVALID: &str = "HTTP_FETCH_URL_INVALID";
    pub const HTTP_FETCH_BLOCKED: &str = "HTTP_FETCH_BLOCKED";
    pub const HTTP_FETCH_FAILED: &str = "HTTP_FETCH_FAILED";
    pub const HTTP_FETCH_TIMEOUT: &str = "HTTP_FETCH_TIMEOUT";
    pub const HTTP_FETCH_TOO_MANY_REDIRECTS: &str = "HTTP_FETCH_TOO_MANY_REDIRECTS";
    pub const TOOL_ARGUMENTS_INVALID: &str = "TOOL_ARGUMENTS_INVALID";
    // MCP client connections (issue 4).
    pub const CONNECTION_NAME_INVALID: &str = "CONNECTION_NAME_INVALID";
    pub const CONNECTION_EXISTS: &str = "CONNECTION_EXISTS";
    pub const CONNECTION_NOT_FOUND: &str = "CONNECTION_NOT_FOUND";
}
