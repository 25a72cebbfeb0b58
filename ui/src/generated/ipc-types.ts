// Generated from the Rust types by src-tauri/src/ipc_types.rs (ts-rs).
// Do not edit: run `bash scripts/ipc-types.sh` after changing a type.
// Field names are snake_case, as in the CLI's --json and MCP results;
// times are RFC 3339 strings.

/**
 * Every stable code, in one place: scripts and the UI match on these strings
 * (`SCREAMING_SNAKE_CASE` of the variant name), and the page's TypeScript union
 * of codes is generated from this enum.
 */
export type Code = "STORAGE_ERROR" | "IO_ERROR" | "SITE_NOT_FOUND" | "SITE_EXISTS" | "SITE_CONFIG_INVALID" | "DATABASE_URL_INVALID" | "DATABASE_UNREACHABLE" | "DATABASE_AUTH_FAILED" | "IMPORT_INVALID" | "IMPORT_VERSION_UNSUPPORTED" | "IMPORT_TARGET_NOT_EMPTY" | "ROLE_UNKNOWN" | "ROLES_EMPTY" | "EMAIL_INVALID" | "USER_EXISTS" | "USER_NOT_FOUND" | "KEY_NOT_FOUND" | "KEY_ALREADY_REVOKED" | "LABEL_INVALID" | "EXPIRY_INVALID" | "DURATION_INVALID" | "ACTOR_API_KEY_INVALID" | "ACTOR_EMAIL_UNKNOWN" | "ACTOR_ROLE_NOT_SCRATCH" | "ACTOR_FLAGS_CONFLICT" | "KEY_VERIFY_FAILED" | "PERMISSION_DENIED" | "AUDIT_CHAIN_BROKEN" | "CONTENT_NOT_FOUND" | "SLUG_INVALID" | "SLUG_TAKEN" | "MEDIA_NOT_FOUND" | "INPUT_INVALID" | "ENV_INVALID" | "ENV_HOST_VAR_MISSING" | "SPAWN_FAILED" | "CLIENT_UNKNOWN" | "CONFIG_SECRET_REF_UNSUPPORTED" | "CONFIG_NAME_INVALID" | "CONFIG_PATH_INVALID" | "CONFIG_VALIDATION_FAILED" | "CALL_INVALID" | "CALL_TIMEOUT" | "CALL_CANCELLED" | "SERVER_EXITED" | "RESOURCE_LIMIT" | "PROTOCOL_VIOLATION" | "PROTOCOL_UNSUPPORTED" | "REMOTE_ERROR" | "CONNECTION_CLOSED" | "INPUT_REQUIRED_UNSUPPORTED" | "SITE_NOT_OPEN" | "CLI_BINARY_NOT_FOUND" | "KEY_SECRET_UNAVAILABLE" | "CONNECTION_NOT_OPEN" | "MEDIA_FILENAME_INVALID" | "MEDIA_TOO_LARGE" | "MEDIA_BASE64_INVALID" | "MEDIA_TYPE_UNSUPPORTED" | "MEDIA_TYPE_MISMATCH" | "HTTP_FETCH_URL_INVALID" | "HTTP_FETCH_BLOCKED" | "HTTP_FETCH_FAILED" | "HTTP_FETCH_TIMEOUT" | "HTTP_FETCH_TOO_MANY_REDIRECTS" | "TOOL_ARGUMENTS_INVALID" | "CONNECTION_NAME_INVALID" | "CONNECTION_EXISTS" | "CONNECTION_NOT_FOUND" | "IMPORT_TAMPERED" | "AUDIT_CHECKPOINT_INVALID" | "AUDIT_KEY_INVALID" | "DATABASE_LOCKED" | "DISK_FULL" | "DATABASE_READONLY" | "SITE_CONFIG_KEY_INVALID" | "SITE_CONFIG_KEY_NOT_FOUND" | "DISPLAY_NAME_INVALID" | "SCRATCH_UNSAFE" | "SANDBOX_UNAVAILABLE" | "HOST_KILLED" | "CONFIG_FILE_UNPARSABLE" | "CONFIG_INSTALL_UNSUPPORTED" | "CONFIG_SCOPE_UNSUPPORTED" | "CONFIG_KEY_IN_PROJECT" | "CONFIG_HOME_UNKNOWN" | "CONFIG_DOCTOR_PROBLEMS" | "COMMAND_NOT_FOUND" | "KEY_EXPIRING" | "CONFIG_PROJECT_REQUIRED";

/**
 * The serialisable form that crosses process and IPC boundaries.
 */
export type ErrorBody = { code: Code, message: string, hint?: string, 
/**
 * Machine-readable detail; its shape depends on the code.
 */
detail?: unknown, };

/** Every code, in the order of `gatehouse_core::error::Code`. */
export const CODES: readonly Code[] = [
  "STORAGE_ERROR",
  "IO_ERROR",
  "SITE_NOT_FOUND",
  "SITE_EXISTS",
  "SITE_CONFIG_INVALID",
  "DATABASE_URL_INVALID",
  "DATABASE_UNREACHABLE",
  "DATABASE_AUTH_FAILED",
  "IMPORT_INVALID",
  "IMPORT_VERSION_UNSUPPORTED",
  "IMPORT_TARGET_NOT_EMPTY",
  "ROLE_UNKNOWN",
  "ROLES_EMPTY",
  "EMAIL_INVALID",
  "USER_EXISTS",
  "USER_NOT_FOUND",
  "KEY_NOT_FOUND",
  "KEY_ALREADY_REVOKED",
  "LABEL_INVALID",
  "EXPIRY_INVALID",
  "DURATION_INVALID",
  "ACTOR_API_KEY_INVALID",
  "ACTOR_EMAIL_UNKNOWN",
  "ACTOR_ROLE_NOT_SCRATCH",
  "ACTOR_FLAGS_CONFLICT",
  "KEY_VERIFY_FAILED",
  "PERMISSION_DENIED",
  "AUDIT_CHAIN_BROKEN",
  "CONTENT_NOT_FOUND",
  "SLUG_INVALID",
  "SLUG_TAKEN",
  "MEDIA_NOT_FOUND",
  "INPUT_INVALID",
  "ENV_INVALID",
  "ENV_HOST_VAR_MISSING",
  "SPAWN_FAILED",
  "CLIENT_UNKNOWN",
  "CONFIG_SECRET_REF_UNSUPPORTED",
  "CONFIG_NAME_INVALID",
  "CONFIG_PATH_INVALID",
  "CONFIG_VALIDATION_FAILED",
  "CALL_INVALID",
  "CALL_TIMEOUT",
  "CALL_CANCELLED",
  "SERVER_EXITED",
  "RESOURCE_LIMIT",
  "PROTOCOL_VIOLATION",
  "PROTOCOL_UNSUPPORTED",
  "REMOTE_ERROR",
  "CONNECTION_CLOSED",
  "INPUT_REQUIRED_UNSUPPORTED",
  "SITE_NOT_OPEN",
  "CLI_BINARY_NOT_FOUND",
  "KEY_SECRET_UNAVAILABLE",
  "CONNECTION_NOT_OPEN",
  "MEDIA_FILENAME_INVALID",
  "MEDIA_TOO_LARGE",
  "MEDIA_BASE64_INVALID",
  "MEDIA_TYPE_UNSUPPORTED",
  "MEDIA_TYPE_MISMATCH",
  "HTTP_FETCH_URL_INVALID",
  "HTTP_FETCH_BLOCKED",
  "HTTP_FETCH_FAILED",
  "HTTP_FETCH_TIMEOUT",
  "HTTP_FETCH_TOO_MANY_REDIRECTS",
  "TOOL_ARGUMENTS_INVALID",
  "CONNECTION_NAME_INVALID",
  "CONNECTION_EXISTS",
  "CONNECTION_NOT_FOUND",
  "IMPORT_TAMPERED",
  "AUDIT_CHECKPOINT_INVALID",
  "AUDIT_KEY_INVALID",
  "DATABASE_LOCKED",
  "DISK_FULL",
  "DATABASE_READONLY",
  "SITE_CONFIG_KEY_INVALID",
  "SITE_CONFIG_KEY_NOT_FOUND",
  "DISPLAY_NAME_INVALID",
  "SCRATCH_UNSAFE",
  "SANDBOX_UNAVAILABLE",
  "HOST_KILLED",
  "CONFIG_FILE_UNPARSABLE",
  "CONFIG_INSTALL_UNSUPPORTED",
  "CONFIG_SCOPE_UNSUPPORTED",
  "CONFIG_KEY_IN_PROJECT",
  "CONFIG_HOME_UNKNOWN",
  "CONFIG_DOCTOR_PROBLEMS",
  "COMMAND_NOT_FOUND",
  "KEY_EXPIRING",
  "CONFIG_PROJECT_REQUIRED",
];

/**
 * Who is running: shown in the header so a screenshot names the version, and
 * in the About view with the commit and the CLI that configs will name.
 */
export type AppInfo = { name: string, 
/**
 * The version of `gatehouse-core`, which holds all the logic.
 */
version: string, 
/**
 * The git commit the app was built from (`unknown` without git).
 */
commit: string, license: string, 
/**
 * The `gatehouse` CLI generated configs start…
 */
cli: string | null, 
/**
 * …or why there is none.
 */
cli_error: string | null, };

/**
 * What the page shows about the open site.
 */
export type SiteSummary = { path: string, name: string, scratch: boolean, };

/**
 * A role. `Public` is the anonymous actor's role and cannot be granted.
 */
export type Role = "public" | "viewer" | "author" | "editor" | "admin";

/**
 * Whether a key works, at the time it was read.
 */
export type KeyStatus = "active" | "revoked" | "expired";

/**
 * A key as shown in lists: everything but the secret. Times are Unix
 * milliseconds here and RFC 3339 text when serialized.
 */
export type KeyInfo = { id: string, label: string, roles: Array<Role>, created_at: string, expires_at: string | null, last_used_at: string | null, revoked_at: string | null, replaced_by: string | null, 
/**
 * At the time of listing.
 */
status: KeyStatus, };

/**
 * A freshly minted key, shown once. No `Debug`: it holds the raw key.
 */
export type MintedKey = { key: string, info: KeyInfo, };

/**
 * The MCP clients Gatehouse can write configuration for.
 */
export type Client = "claude-desktop" | "claude-code" | "cursor" | "vscode" | "windsurf" | "zed" | "codex" | "continue" | "gemini" | "cline" | "roo-code" | "jetbrains" | "goose" | "opencode" | "kiro" | "copilot" | "lm-studio";

/**
 * One entry of the client picker.
 */
export type ClientChoice = { id: Client, name: string, 
/**
 * Whether the client can reference the key instead of holding it.
 */
secret_ref: boolean, };

/**
 * The syntax of a [`Snippet`].
 */
export type Format = "json" | "toml" | "yaml" | "shell";

/**
 * Where a client reads its configuration from.
 */
export type Location = { 
/**
 * `project` (inside the repository or workspace), `user` (all projects) or
 * `local` (this project, kept outside it: Claude Code).
 */
scope: "project" | "user" | "local", 
/**
 * Set when the path differs per operating system or installer.
 */
os?: string, path: string, };

/**
 * One piece of text to paste, with where it goes and what to do with it.
 */
export type Snippet = { format: Format, 
/**
 * Empty for a command line.
 */
locations: Array<Location>, text: string, 
/**
 * One or two sentences for the person pasting it.
 */
instructions: string, 
/**
 * True when `text` holds a raw API key: the UI should warn and not log it.
 */
contains_secret: boolean, };

/**
 * The result of [`generate`]: the main snippet first (the one `install`
 * writes), then alternatives such as a client's own `mcp add` command line.
 */
export type GeneratedConfig = { client: Client, client_name: string, server_name: string, snippets: Array<Snippet>, };

/**
 * Which of a client's files: every project (`user`), this project's
 * (`project`, usually committed), or this project's kept outside it (`local`,
 * Claude Code only).
 */
export type Scope = "user" | "project" | "local";

/**
 * What an install did (or, in a dry run, would do).
 */
export type InstallOutcome = { client: Client, client_name: string, server_name: string, scope: Scope, path: string, 
/**
 * Whether the file existed before.
 */
existed: boolean, 
/**
 * Whether the file's text differs from what it was.
 */
changed: boolean, 
/**
 * Whether anything was written (false in a dry run or when unchanged).
 */
written: boolean, dry_run: boolean, 
/**
 * A unified diff of the file, any raw key replaced by a marker.
 */
diff: string, 
/**
 * The copy of the previous file, when one was written.
 */
backup?: string, 
/**
 * What to do next in the client (restart, approve, trust).
 */
instructions: string, };

/**
 * A check's outcome: `warn` (a key about to expire) counts as a problem.
 */
export type Status = "pass" | "warn" | "fail" | "skip";

/**
 * One check's result, with the error code when it failed on one.
 */
export type Check = { 
/**
 * `command`, `site`, `key` or `actor`.
 */
name: string, status: Status, message: string, code?: Code, };

/**
 * One Gatehouse entry and its checks.
 */
export type EntryReport = { name: string, command: string, site?: string, checks: Array<Check>, ok: boolean, };

/**
 * One client file that exists.
 */
export type FileReport = { client: Client, client_name: string, scope: Scope, path: string, 
/**
 * Set when the file could not be read or parsed (any key in it masked).
 */
error?: string, entries: Array<EntryReport>, };

/**
 * Everything the doctor found.
 */
export type DoctorReport = { files: Array<FileReport>, 
/**
 * True when every check passed or was skipped.
 */
ok: boolean, };

/**
 * A tail's byte counters at one moment.
 */
export type TailCounters = { bytes_seen: number, bytes_retained: number, truncated: boolean, };

/**
 * One message on a tail stream, as the page receives it.
 */
export type TailMessage = { "kind": "snapshot", before: Array<string>, marker: string | null, after: Array<string>, counters: TailCounters, } | { "kind": "lines", lines: Array<string>, counters: TailCounters, } | { "kind": "missed", lines: number, bytes: number, counters: TailCounters, } | { "kind": "end", counters: TailCounters, };

/**
 * How a child ended, as observed (never invented).
 */
export type ExitInfo = { 
/**
 * The exit code, when it exited by itself.
 */
code: number | null, 
/**
 * The signal that ended it, when one did.
 */
signal: number | null, };

/**
 * Where a registered connection is.
 */
export type LiveState = "connected" | "exited" | "closed";

/**
 * What this window knows of a connection it started.
 */
export type LiveView = { id: string, pid: number, state: LiveState, server_name: string | null, server_version: string | null, protocol_version: string, exit: ExitInfo | null, end_reason: string | null, counters: TailCounters, };

/**
 * A connection as the list shows it. Env values are never included: a
 * stored connection may name host variables that hold secrets.
 */
export type ConnectionView = { name: string, program: string, args: Array<string>, live: LiveView | null, };
