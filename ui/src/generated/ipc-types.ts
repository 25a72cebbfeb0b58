// Generated from the Rust types by src-tauri/src/ipc_types.rs (ts-rs).
// Do not edit: run `bash scripts/ipc-types.sh` after changing a type.
// Field names are snake_case, as in the CLI's --json and MCP results;
// times are RFC 3339 strings.

/**
 * Every stable code, declared once: the variant's name *is* the string scripts
 * and the UI match on, so one grep finds the code's declaration, every use and
 * the page's handling of it. The page's TypeScript union of codes (and its
 * `CODES` list, in this order) is generated from this enum. Codes are grouped
 * by the domain that raises them.
 */
export type Code = "STORAGE_ERROR" | "IO_ERROR" | "DATABASE_URL_INVALID" | "DATABASE_UNREACHABLE" | "DATABASE_AUTH_FAILED" | "DATABASE_LOCKED" | "DISK_FULL" | "DATABASE_READONLY" | "STORED_VALUE_UNKNOWN" | "SITE_NOT_FOUND" | "SITE_EXISTS" | "SITE_CONFIG_INVALID" | "SITE_CONFIG_KEY_INVALID" | "SITE_CONFIG_KEY_NOT_FOUND" | "IMPORT_INVALID" | "IMPORT_VERSION_UNSUPPORTED" | "IMPORT_TARGET_NOT_EMPTY" | "IMPORT_TAMPERED" | "CONTENT_NOT_FOUND" | "SLUG_INVALID" | "SLUG_TAKEN" | "MEDIA_NOT_FOUND" | "MEDIA_FILENAME_INVALID" | "MEDIA_TOO_LARGE" | "MEDIA_BASE64_INVALID" | "MEDIA_TYPE_UNSUPPORTED" | "MEDIA_TYPE_MISMATCH" | "ROLE_UNKNOWN" | "ROLES_EMPTY" | "EMAIL_INVALID" | "DISPLAY_NAME_INVALID" | "USER_EXISTS" | "USER_NOT_FOUND" | "USER_DISABLED" | "KEY_NOT_FOUND" | "KEY_ALREADY_REVOKED" | "KEY_VERIFY_FAILED" | "LABEL_INVALID" | "EXPIRY_INVALID" | "DURATION_INVALID" | "ACTOR_API_KEY_INVALID" | "ACTOR_EMAIL_UNKNOWN" | "ACTOR_ROLE_NOT_SCRATCH" | "ACTOR_FLAGS_CONFLICT" | "PERMISSION_DENIED" | "KEY_RESTRICTION_INVALID" | "KEY_TOOL_NOT_ALLOWED" | "KEY_READ_ONLY" | "KEY_SCOPE_CONTENT" | "KEY_RATE_LIMITED" | "KEY_NETWORK_NOT_ALLOWED" | "APPROVAL_DECLINED" | "APPROVAL_DENIED" | "APPROVAL_TIMEOUT" | "APPROVAL_NOT_FOUND" | "APPROVAL_ALREADY_DECIDED" | "APPROVAL_EXPIRED" | "APPROVAL_HOLDER_GONE" | "APPROVAL_SELF_DECISION" | "APPROVAL_DECIDER_INVALID" | "APPROVAL_NOT_QUEUED" | "APPROVAL_STALE" | "APPROVAL_QUEUE_FULL" | "AUDIT_CHAIN_BROKEN" | "AUDIT_CHECKPOINT_INVALID" | "AUDIT_KEY_INVALID" | "AUDIT_KEY_CHANGED" | "SECRET_STORE_UNAVAILABLE" | "SECRET_STORE_INVALID" | "INPUT_INVALID" | "ACTOR_API_KEY_REQUIRED" | "API_KEY_IN_URL" | "RATE_LIMITED" | "HOST_NOT_ALLOWED" | "ORIGIN_NOT_ALLOWED" | "LISTEN_UNSAFE" | "TLS_INVALID" | "SERVE_SETTING_SECRET" | "SERVE_ALREADY_RUNNING" | "SERVE_NOT_RUNNING" | "SERVE_START_FAILED" | "OAUTH_SCOPE_INVALID" | "OAUTH_SCOPE_INSUFFICIENT" | "OAUTH_CLIENT_INVALID" | "OAUTH_REDIRECT_INVALID" | "OAUTH_REQUEST_INVALID" | "OAUTH_GRANT_INVALID" | "OAUTH_TOKEN_INVALID" | "OAUTH_GRANT_NOT_FOUND" | "OAUTH_REGISTRATION_LIMITED" | "OAUTH_CONSENT_INVALID" | "OAUTH_PAIRING_UNCONFIRMED" | "TOOL_ARGUMENTS_INVALID" | "HTTP_FETCH_URL_INVALID" | "HTTP_FETCH_BLOCKED" | "HTTP_FETCH_FAILED" | "HTTP_FETCH_TIMEOUT" | "HTTP_FETCH_TOO_MANY_REDIRECTS" | "ENV_INVALID" | "ENV_HOST_VAR_MISSING" | "SPAWN_FAILED" | "SCRATCH_UNSAFE" | "SANDBOX_UNAVAILABLE" | "SANDBOX_PROFILE_INVALID" | "CALL_INVALID" | "CALL_TIMEOUT" | "CALL_CANCELLED" | "SERVER_EXITED" | "RESOURCE_LIMIT" | "HOST_KILLED" | "PROTOCOL_VIOLATION" | "PROTOCOL_UNSUPPORTED" | "REMOTE_ERROR" | "CONNECTION_CLOSED" | "INPUT_REQUIRED_UNSUPPORTED" | "CONNECTION_NAME_INVALID" | "CONNECTION_EXISTS" | "CONNECTION_NOT_FOUND" | "CONNECTION_TOOLS_CHANGED" | "CONNECTION_NOTHING_TO_APPROVE" | "CONSENT_REQUIRED" | "CONSENT_STALE" | "CALL_RESULT_NOT_KEPT" | "CLIENT_UNKNOWN" | "CONFIG_SECRET_REF_UNSUPPORTED" | "CONFIG_NAME_INVALID" | "CONFIG_PATH_INVALID" | "CONFIG_VALIDATION_FAILED" | "CONFIG_FILE_UNPARSABLE" | "CONFIG_INSTALL_UNSUPPORTED" | "CONFIG_SCOPE_UNSUPPORTED" | "CONFIG_KEY_IN_PROJECT" | "CONFIG_HOME_UNKNOWN" | "CONFIG_PROJECT_REQUIRED" | "CONFIG_FILE_IGNORED" | "CONFIG_FILE_CHANGED" | "CONFIG_REMOTE_UNSUPPORTED" | "CONFIG_URL_INVALID" | "CONFIG_REMOTE_FAILED" | "CONFIG_DOCTOR_PROBLEMS" | "COMMAND_NOT_FOUND" | "COMMAND_NOT_EXECUTABLE" | "KEY_EXPIRING" | "SITE_NOT_OPEN" | "CLI_BINARY_NOT_FOUND" | "KEY_SECRET_UNAVAILABLE" | "CONNECTION_NOT_OPEN";

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
  "DATABASE_URL_INVALID",
  "DATABASE_UNREACHABLE",
  "DATABASE_AUTH_FAILED",
  "DATABASE_LOCKED",
  "DISK_FULL",
  "DATABASE_READONLY",
  "STORED_VALUE_UNKNOWN",
  "SITE_NOT_FOUND",
  "SITE_EXISTS",
  "SITE_CONFIG_INVALID",
  "SITE_CONFIG_KEY_INVALID",
  "SITE_CONFIG_KEY_NOT_FOUND",
  "IMPORT_INVALID",
  "IMPORT_VERSION_UNSUPPORTED",
  "IMPORT_TARGET_NOT_EMPTY",
  "IMPORT_TAMPERED",
  "CONTENT_NOT_FOUND",
  "SLUG_INVALID",
  "SLUG_TAKEN",
  "MEDIA_NOT_FOUND",
  "MEDIA_FILENAME_INVALID",
  "MEDIA_TOO_LARGE",
  "MEDIA_BASE64_INVALID",
  "MEDIA_TYPE_UNSUPPORTED",
  "MEDIA_TYPE_MISMATCH",
  "ROLE_UNKNOWN",
  "ROLES_EMPTY",
  "EMAIL_INVALID",
  "DISPLAY_NAME_INVALID",
  "USER_EXISTS",
  "USER_NOT_FOUND",
  "USER_DISABLED",
  "KEY_NOT_FOUND",
  "KEY_ALREADY_REVOKED",
  "KEY_VERIFY_FAILED",
  "LABEL_INVALID",
  "EXPIRY_INVALID",
  "DURATION_INVALID",
  "ACTOR_API_KEY_INVALID",
  "ACTOR_EMAIL_UNKNOWN",
  "ACTOR_ROLE_NOT_SCRATCH",
  "ACTOR_FLAGS_CONFLICT",
  "PERMISSION_DENIED",
  "KEY_RESTRICTION_INVALID",
  "KEY_TOOL_NOT_ALLOWED",
  "KEY_READ_ONLY",
  "KEY_SCOPE_CONTENT",
  "KEY_RATE_LIMITED",
  "KEY_NETWORK_NOT_ALLOWED",
  "APPROVAL_DECLINED",
  "APPROVAL_DENIED",
  "APPROVAL_TIMEOUT",
  "APPROVAL_NOT_FOUND",
  "APPROVAL_ALREADY_DECIDED",
  "APPROVAL_EXPIRED",
  "APPROVAL_HOLDER_GONE",
  "APPROVAL_SELF_DECISION",
  "APPROVAL_DECIDER_INVALID",
  "APPROVAL_NOT_QUEUED",
  "APPROVAL_STALE",
  "APPROVAL_QUEUE_FULL",
  "AUDIT_CHAIN_BROKEN",
  "AUDIT_CHECKPOINT_INVALID",
  "AUDIT_KEY_INVALID",
  "AUDIT_KEY_CHANGED",
  "SECRET_STORE_UNAVAILABLE",
  "SECRET_STORE_INVALID",
  "INPUT_INVALID",
  "ACTOR_API_KEY_REQUIRED",
  "API_KEY_IN_URL",
  "RATE_LIMITED",
  "HOST_NOT_ALLOWED",
  "ORIGIN_NOT_ALLOWED",
  "LISTEN_UNSAFE",
  "TLS_INVALID",
  "SERVE_SETTING_SECRET",
  "SERVE_ALREADY_RUNNING",
  "SERVE_NOT_RUNNING",
  "SERVE_START_FAILED",
  "OAUTH_SCOPE_INVALID",
  "OAUTH_SCOPE_INSUFFICIENT",
  "OAUTH_CLIENT_INVALID",
  "OAUTH_REDIRECT_INVALID",
  "OAUTH_REQUEST_INVALID",
  "OAUTH_GRANT_INVALID",
  "OAUTH_TOKEN_INVALID",
  "OAUTH_GRANT_NOT_FOUND",
  "OAUTH_REGISTRATION_LIMITED",
  "OAUTH_CONSENT_INVALID",
  "OAUTH_PAIRING_UNCONFIRMED",
  "TOOL_ARGUMENTS_INVALID",
  "HTTP_FETCH_URL_INVALID",
  "HTTP_FETCH_BLOCKED",
  "HTTP_FETCH_FAILED",
  "HTTP_FETCH_TIMEOUT",
  "HTTP_FETCH_TOO_MANY_REDIRECTS",
  "ENV_INVALID",
  "ENV_HOST_VAR_MISSING",
  "SPAWN_FAILED",
  "SCRATCH_UNSAFE",
  "SANDBOX_UNAVAILABLE",
  "SANDBOX_PROFILE_INVALID",
  "CALL_INVALID",
  "CALL_TIMEOUT",
  "CALL_CANCELLED",
  "SERVER_EXITED",
  "RESOURCE_LIMIT",
  "HOST_KILLED",
  "PROTOCOL_VIOLATION",
  "PROTOCOL_UNSUPPORTED",
  "REMOTE_ERROR",
  "CONNECTION_CLOSED",
  "INPUT_REQUIRED_UNSUPPORTED",
  "CONNECTION_NAME_INVALID",
  "CONNECTION_EXISTS",
  "CONNECTION_NOT_FOUND",
  "CONNECTION_TOOLS_CHANGED",
  "CONNECTION_NOTHING_TO_APPROVE",
  "CONSENT_REQUIRED",
  "CONSENT_STALE",
  "CALL_RESULT_NOT_KEPT",
  "CLIENT_UNKNOWN",
  "CONFIG_SECRET_REF_UNSUPPORTED",
  "CONFIG_NAME_INVALID",
  "CONFIG_PATH_INVALID",
  "CONFIG_VALIDATION_FAILED",
  "CONFIG_FILE_UNPARSABLE",
  "CONFIG_INSTALL_UNSUPPORTED",
  "CONFIG_SCOPE_UNSUPPORTED",
  "CONFIG_KEY_IN_PROJECT",
  "CONFIG_HOME_UNKNOWN",
  "CONFIG_PROJECT_REQUIRED",
  "CONFIG_FILE_IGNORED",
  "CONFIG_FILE_CHANGED",
  "CONFIG_REMOTE_UNSUPPORTED",
  "CONFIG_URL_INVALID",
  "CONFIG_REMOTE_FAILED",
  "CONFIG_DOCTOR_PROBLEMS",
  "COMMAND_NOT_FOUND",
  "COMMAND_NOT_EXECUTABLE",
  "KEY_EXPIRING",
  "SITE_NOT_OPEN",
  "CLI_BINARY_NOT_FOUND",
  "KEY_SECRET_UNAVAILABLE",
  "CONNECTION_NOT_OPEN",
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
 * Where a site's data lives, as the header shows it.
 */
export type BackendInfo = { "kind": "sqlite", path: string, } | { "kind": "postgres", url: string, };

/**
 * What the page shows about the open site.
 */
export type SiteSummary = { path: string, name: string, scratch: boolean, 
/**
 * The SQLite file or the PostgreSQL URL (never with a password).
 */
backend: BackendInfo, };

/**
 * A site opened lately.
 */
export type RecentSite = { path: string, name: string, scratch: boolean, };

/**
 * A role. `Public` is the anonymous actor's role and cannot be granted.
 */
export type Role = "public" | "viewer" | "author" | "editor" | "admin";

/**
 * Whether a key works, at the time it was read.
 */
export type KeyStatus = "active" | "revoked" | "expired";

/**
 * Drafts, published entries, or both.
 */
export type StatusScope = "any" | "draft" | "published";

/**
 * A slug pattern: slug characters and `*` (any run of them, even none).
 */
export type SlugPattern = string;

/**
 * A call rate: `calls` per `period`.
 */
export type Rate = string;

/**
 * Which entries a key may see and touch: slugs matching one of `slugs`
 * (every slug when empty) with a status in `status`.
 */
export type ContentScope = { slugs: Array<SlugPattern>, status: StatusScope, };

/**
 * A key's restrictions; the default restricts nothing.
 */
export type Restrictions = { 
/**
 * The only tools the key may call (still subject to its roles).
 */
tools?: Array<string>, 
/**
 * Only tools whose effect class is read.
 */
read_only?: boolean, 
/**
 * The entries the key may see and touch.
 */
content?: ContentScope, 
/**
 * At most this many tool calls per period.
 */
rate?: Rate, 
/**
 * Tools (by name) or effect classes whose calls wait for a person's yes
 * (`access::approvals`), on top of the site's approval policy.
 */
approve?: Array<string>, 
/**
 * The client networks `gatehouse serve` accepts the key from (the
 * trusted proxy's forwarded address behind one). stdio is local: it is
 * never refused by this.
 */
from?: Array<string>, };

/**
 * A key as shown in lists: everything but the secret. Times are Unix
 * milliseconds here and RFC 3339 text when serialized.
 */
export type KeyInfo = { id: string, label: string, roles: Array<Role>, created_at: string, expires_at: string | null, last_used_at: string | null, revoked_at: string | null, replaced_by: string | null, 
/**
 * At the time of listing.
 */
status: KeyStatus, 
/**
 * What the key may do beyond its roles, narrowed (empty: nothing more).
 */
restrictions: Restrictions, };

/**
 * A freshly minted key, shown once. No `Debug`: it holds the raw key.
 */
export type MintedKey = { key: string, info: KeyInfo, };

/**
 * What the Keys screen warns about.
 */
export type ExpiryWarning = "expired" | "expires_soon";

/**
 * One key with its uses and warning.
 */
export type KeyOverview = { 
/**
 * Audited calls made with the key.
 */
uses: number, warning: ExpiryWarning | null, id: string, label: string, roles: Array<Role>, created_at: string, expires_at: string | null, last_used_at: string | null, revoked_at: string | null, replaced_by: string | null, 
/**
 * At the time of listing.
 */
status: KeyStatus, 
/**
 * What the key may do beyond its roles, narrowed (empty: nothing more).
 */
restrictions: Restrictions, };

/**
 * A key's restrictions as the form shows them: lists as comma-separated
 * text, empty for "not restricted".
 */
export type RestrictionForm = { 
/**
 * `None`: every tool its roles allow; otherwise only these.
 */
tools: Array<string> | null, read_only: boolean, 
/**
 * Slug patterns, comma-separated; empty for every slug.
 */
content: string, content_status: StatusScope, 
/**
 * Calls per period (`60/min`); empty for no limit.
 */
rate: string, 
/**
 * Client networks in CIDR form, comma-separated; empty for any.
 */
from: string, };

/**
 * A tool the allowlist picker offers.
 */
export type ToolChoice = { name: string, title: string, 
/**
 * `read`, `write`, `publish` or `delete`.
 */
effect: string, };

/**
 * An actor's effective reach: the tools it is shown and, in words, what
 * narrows them.
 */
export type Reach = { 
/**
 * The tools it may call, in manifest order.
 */
tools: Array<string>, 
/**
 * Whether a key restriction narrows its roles.
 */
restricted: boolean, 
/**
 * One line per fact, for a person.
 */
words: Array<string>, };

/**
 * One tool's calls by one key.
 */
export type ToolUsage = { tool: string, day: number, week: number, refused_day: number, refused_week: number, };

/**
 * One key's calls over the last day and week, at the time of reading.
 */
export type KeyUsage = { 
/**
 * The newest call within the week, if any.
 */
last_call_at: string | null, 
/**
 * Where the newest call came from: `stdio` and the client's name, or
 * the HTTP client's address (calls recorded before this was kept have none).
 */
last_from?: string, calls_day: number, calls_week: number, refused_day: number, refused_week: number, 
/**
 * By tool, most called first.
 */
by_tool: Array<ToolUsage>, };

/**
 * One day-long bucket of a key's calls.
 */
export type DayUsage = { 
/**
 * Where the bucket starts; it ends 24 hours later.
 */
start: string, 
/**
 * Every call, refused ones included.
 */
calls: number, refused: number, };

/**
 * One key, everything the Keys screen shows of it.
 */
export type KeyReport = { reach: Reach, 
/**
 * The key's restrictions as the edit form starts.
 */
form: RestrictionForm, usage: KeyUsage, 
/**
 * Calls per day over the last week, oldest first (always seven).
 */
days: Array<DayUsage>, 
/**
 * Audited calls made with the key.
 */
uses: number, warning: ExpiryWarning | null, id: string, label: string, roles: Array<Role>, created_at: string, expires_at: string | null, last_used_at: string | null, revoked_at: string | null, replaced_by: string | null, 
/**
 * At the time of listing.
 */
status: KeyStatus, 
/**
 * What the key may do beyond its roles, narrowed (empty: nothing more).
 */
restrictions: Restrictions, };

/**
 * Whom a grant acts as. Stored as exactly one of two columns (`key_id`,
 * `user_email`), which [`Principal::from_columns`] reads back. The desktop
 * sends one back when an admin approves a pairing code.
 */
export type GrantPrincipal = { "kind": "key", "id": string } | { "kind": "user", "id": string };

/**
 * A grant as `gatehouse oauth grants` shows it (and the desktop's Keys
 * screen, through IPC).
 */
export type GrantInfo = { id: string, client_id: string, client_name: string, 
/**
 * Where the client's redirects go.
 */
redirect_host: string, 
/**
 * Whom the grant acts as: a key's actor or a user's.
 */
acts_as: GrantPrincipal, scopes: string, resource: string, created_at: string, 
/**
 * The address the consent came from.
 */
created_from: string | null, 
/**
 * When a token of the grant was last checked (at most once a minute).
 */
last_used_at: string | null, revoked_at: string | null, revoked_reason: string | null, };

/**
 * A grant with what it did lately: the same usage a key shows (last call,
 * from where, calls by tool over the last day and week, refusals).
 */
export type GrantOverview = { usage: KeyUsage, id: string, client_id: string, client_name: string, 
/**
 * Where the client's redirects go.
 */
redirect_host: string, 
/**
 * Whom the grant acts as: a key's actor or a user's.
 */
acts_as: GrantPrincipal, scopes: string, resource: string, created_at: string, 
/**
 * The address the consent came from.
 */
created_from: string | null, 
/**
 * When a token of the grant was last checked (at most once a minute).
 */
last_used_at: string | null, revoked_at: string | null, revoked_reason: string | null, };

/**
 * What a pairing code asks for, shown to the admin before the approval:
 * a code is only as trustworthy as whoever passed it on, and the client's
 * name and redirect URI say whose application would get the grant.
 */
export type PairingRequest = { client_id: string, client_name: string, redirect_uri: string, scopes: string, };

/**
 * What an admin approved, for the CLI and the desktop to say.
 */
export type PairingApproved = { client_id: string, client_name: string, redirect_uri: string, scopes: string, 
/**
 * Whom the grant will act as.
 */
acts_as: GrantPrincipal, };

/**
 * A user; times are Unix milliseconds, RFC 3339 text when serialized.
 */
export type User = { email: string, roles: Array<Role>, created_at: string, updated_at: string, 
/**
 * When an admin disabled the user (who then resolves as no actor at
 * all); `null` while enabled.
 */
disabled_at: string | null, };

/**
 * One row of core's permission table.
 */
export type PermissionRow = { action: string, description: string, 
/**
 * The lowest role allowed; every higher role is too.
 */
min_role: Role, };

/**
 * What the Audit screen filters by. Empty text means "any".
 */
export type AuditFilter = { 
/**
 * The start of the actor (`key:` for every key, `user:a@b.c` for one user).
 */
actor: string, 
/**
 * The start of the action (`key.` for every key action).
 */
action: string, 
/**
 * Entries at or after this RFC 3339 time.
 */
since: string, 
/**
 * Entries before this RFC 3339 time.
 */
until: string, };

/**
 * One entry as the page shows it.
 */
export type AuditEntry = { seq: number, ts: string, actor: string, action: string, subject: string, 
/**
 * The recorded detail, parsed (it is JSON text in the store).
 */
detail: unknown, hash: string, };

/**
 * One page of the log, newest first.
 */
export type AuditPage = { entries: Array<AuditEntry>, 
/**
 * How many entries match the filter, on every page.
 */
total: number, 
/**
 * The cursor of the next (older) page; `null` on the last page.
 */
next_before: number | null, };

/**
 * The entries up to `upto_seq` came in by an import at `imported_at`:
 * checkpoints signed here vouch for them only as they arrived.
 */
export type AuditImport = { upto_seq: number, imported_at: string, trust: ImportTrust, 
/**
 * The key that signed the dump (hex); absent when it was unsigned.
 */
signed_by?: string, };

/**
 * What an import of a site took its history on: a signature by this
 * machine's key, by a key the admin named, or the admin's word alone.
 */
export type ImportTrust = "this_machine" | "trusted_key" | "unsigned";

/**
 * The result of checking the whole chain.
 */
export type AuditReport = { entries: number, ok: boolean, 
/**
 * The first entry found altered, removed or out of order.
 */
first_bad_seq?: number, problem?: string, 
/**
 * The newest entry a trusted signed checkpoint vouches for (see
 * [`crate::site::checkpoint::verify`]); `None` from the bare chain check.
 */
anchored_at?: number, 
/**
 * Validly signed checkpoints from keys this machine does not hold.
 */
unverified_checkpoints?: number, 
/**
 * On a site made by `site import`: where its history came from, every
 * import it came through, oldest first (empty for any other site).
 */
imported: Array<AuditImport>, };

/**
 * Where an export went.
 */
export type AuditExport = { path: string, entries: number, };

/**
 * The MCP clients Gatehouse can write configuration for.
 */
export type Client = "claude-desktop" | "claude-code" | "cursor" | "vscode" | "windsurf" | "zed" | "codex" | "continue" | "gemini" | "cline" | "roo-code" | "zoo-code" | "jetbrains" | "goose" | "opencode" | "kiro" | "copilot" | "lm-studio";

/**
 * One entry of the client picker.
 */
export type ClientChoice = { id: Client, name: string, 
/**
 * Whether the client can reference the key instead of holding it.
 */
secret_ref: boolean, 
/**
 * Whether the install can write the client's file (some keep MCP servers
 * in their own settings).
 */
installable: boolean, };

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
 * Which keys the list shows.
 */
export type KeyFilter = "all" | "active" | "expires_soon" | "expired" | "revoked";

/**
 * One entry as the admin surfaces show it.
 */
export type ConfigEntry = { key: string, 
/**
 * `<redacted>` unless revealed.
 */
value: string, 
/**
 * Marked secret by the admin.
 */
secret: boolean, 
/**
 * Hidden from clients (flagged, or shaped like a secret).
 */
redacted: boolean, updated_at: string, };

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
 * The file as it was read (SHA-256 of its bytes, or `absent`): pass it
 * back as [`InstallRequest::expected_hash`] to write what was previewed.
 */
original_hash: string, 
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
 * `file`, `command`, `site`, `key` or `actor`.
 */
name: string, status: Status, message: string, code?: Code, };

/**
 * One Gatehouse entry and its checks.
 */
export type EntryReport = { name: string, 
/**
 * The program a local entry starts (empty for a remote entry).
 */
command: string, 
/**
 * The server a remote entry reaches.
 */
url?: string, site?: string, checks: Array<Check>, ok: boolean, };

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
 * A tail's byte counters at one moment, as records store them and the page
 * shows them: everything seen, what is kept, and whether anything was cut.
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
 * The signal that ended it, when one did (Unix only).
 */
signal: number | null, };

/**
 * One confinement layer. The set is the union of every system's; a
 * backend lists the ones it has.
 */
export type LayerName = "landlock_fs" | "signal_scope" | "seccomp" | "read_only_view" | "bwrap" | "no_new_privs" | "seatbelt" | "job_object" | "restricted_token" | "write_grants" | "handle_list" | "cpu_rate" | "ui_limits" | "network" | "unix_sockets" | "memory_ceiling" | "cpu_budget" | "process_ceiling" | "open_files" | "scratch_quota" | "priority";

/**
 * One layer as applied on this system, or not and why not.
 */
export type Layer = { layer: LayerName, applied: boolean, 
/**
 * Applied: what it holds here ("ABI 7", "1 GiB (site default)").
 * Not applied: why not, never empty.
 */
detail: string, };

/**
 * How a child is confined, as reported by `probe` and the connection status.
 */
export type Isolation = { backend: string, 
/**
 * Landlock ABI applied (0: not applied).
 */
landlock_abi: number, 
/**
 * Everything but scratch and the profile's read-write paths is mounted
 * read-only for the server, and scratch is a tmpfs of the quota's size
 * (Landlock backend, where user namespaces are allowed); bwrap's own
 * mounts do the same for the first.
 */
read_only_view: boolean, network: boolean, 
/**
 * With `network` off, the TCP ports it may still connect to (always
 * present, empty or not: the page reads it as an array).
 */
connect_ports: Array<number>, scratch_quota_bytes: number, 
/**
 * Whether the server may open UNIX sockets (named ones included).
 */
unix_sockets: boolean, 
/**
 * Scheduling niceness the server runs at (0: as the host).
 */
nice: number, 
/**
 * Every layer this system's backend has, in the order the status names
 * them: applied (with what it holds) or not (with why not).
 */
layers: Array<Layer>, 
/**
 * What is weaker than asked, said once per connection.
 */
warnings: Array<string>, };

/**
 * Where a registered connection is.
 */
export type LiveState = "connected" | "exited" | "closed";

/**
 * What a running connection uses and does at one moment.
 */
export type LiveUsage = { uptime_ms: number, 
/**
 * Resident memory of the whole process group.
 */
rss_bytes: number, 
/**
 * User + system CPU time of the group.
 */
cpu_ms: number, 
/**
 * Live members of the group.
 */
processes: number, 
/**
 * Calls holding a slot (dispatched, waiting for their answer).
 */
calls_in_flight: number, };

/**
 * Why a connection ended, as its record stores it and the desktop shows it.
 */
export type EndReason = "timeout" | "memory" | "cpu" | "scratch_quota" | "end_of_input" | "crash" | "protocol" | "closed" | "dropped" | "host_killed";

/**
 * What this window knows of a connection it started.
 */
export type LiveView = { id: string, pid: number, state: LiveState, server_name: string | null, server_version: string | null, protocol_version: string, exit: ExitInfo | null, 
/**
 * Why it ended.
 */
end_reason: EndReason | null, 
/**
 * The same in words: which deadline, ceiling or exit.
 */
end_message: string | null, counters: TailCounters, 
/**
 * Uptime, memory, CPU and calls in flight while it runs.
 */
usage: LiveUsage | null, 
/**
 * How the server is confined; a layer weaker than its profile asks for
 * is named in the warnings, never silently (decision "Sandbox").
 */
isolation: Isolation, 
/**
 * Connected, but its server announced a tool list change: its calls are
 * refused until an admin approves the new list (decision "Tool pinning").
 */
on_hold: boolean, };

/**
 * A connection as the list shows it. Env values are never included: a
 * stored connection may name host variables that hold secrets.
 */
export type ConnectionView = { name: string, program: string, args: Array<string>, live: LiveView | null, };

/**
 * Where an environment row's value comes from.
 */
export type EnvKind = "plain" | "host" | "secret";

/**
 * One environment row of the form.
 */
export type EnvRow = { name: string, kind: EnvKind, value: string, };

/**
 * The connection form. Empty limit fields take the client's defaults.
 */
export type DefinitionForm = { name: string, command: string, args: Array<string>, env: Array<EnvRow>, 
/**
 * A duration such as `30s`; empty: 30 s.
 */
timeout: string, 
/**
 * A size such as `512MiB`; empty: the site's default (`[limits]` in gatehouse.toml).
 */
max_rss: string, 
/**
 * A duration of CPU time such as `60s`; empty: the site's default (`[limits]` in gatehouse.toml).
 */
max_cpu: string, };

/**
 * Where one variable's value comes from; the value itself is never shown.
 */
export type EnvSource = "plain" | "host" | "secret";

/**
 * One variable of the child's environment, value masked.
 */
export type ConsentEnv = { name: string, source: EnvSource, host_variable: string | null, };

/**
 * What confines the child. Each system has its own (see [`Backend::here`]);
 * `none` exists everywhere. A profile naming a backend this system lacks is
 * refused, never run under another.
 */
export type Backend = "landlock" | "bwrap" | "seatbelt" | "job_object" | "none";

/**
 * The limits the child runs under, defaults filled in.
 */
export type ConsentLimits = { call_timeout_ms: number, inactivity_ms: number | null, max_rss_bytes: number | null, 
/**
 * `max_rss_bytes` is the site's default (`[limits]` in
 * `gatehouse.toml`), not the connection's own.
 */
max_rss_default: boolean, max_cpu_ms: number | null, 
/**
 * Likewise for `max_cpu_ms`.
 */
max_cpu_default: boolean, sandbox_backend: Backend, network: boolean, read_only: Array<string>, read_write: Array<string>, scratch_quota_bytes: number, };

/**
 * What the consent dialog shows: exactly what will be spawned.
 */
export type ConsentRequest = { name: string, 
/**
 * What [`grant`] must be given back, so a definition changed while the
 * dialog was open is not consented by mistake.
 */
definition_sha256: string, 
/**
 * The program and its arguments, exactly as passed to `exec`.
 */
argv: Array<string>, 
/**
 * Where `exec` finds the program with the child's `PATH`, if it does.
 */
program_path: string | null, env: Array<ConsentEnv>, 
/**
 * The child's working directory: a fresh directory under this root per run.
 */
working_directory: string, limits: ConsentLimits, 
/**
 * A consent exists, but for an earlier version of this definition or
 * given on another machine.
 */
changed_since_consent: boolean, };

/**
 * Why a connection's tools wait for approval.
 */
export type PendingReason = "changed" | "list_changed" | "definition_changed";

/**
 * One tool as pinned: everything a model reads or a call depends on.
 */
export type PinnedTool = { name: string, 
/**
 * Shown beside the name wherever the tool is listed. Absent from the
 * hash when unset, so pins made before it was pinned still hold.
 */
title?: string, description?: string, input_schema: unknown, annotations: unknown, };

/**
 * One field of a tool that changed, with both texts.
 */
export type FieldChange = { 
/**
 * `title`, `description`, `input_schema` or `annotations`.
 */
field: "title" | "description" | "input_schema" | "annotations", before: string, after: string, };

/**
 * A tool present in both lists whose text differs.
 */
export type ChangedTool = { name: string, changes: Array<FieldChange>, };

/**
 * What differs between the pinned list and the offered one (in the detail
 * of a `CONNECTION_TOOLS_CHANGED` error, as `diff`).
 */
export type ToolsDiff = { added: Array<PinnedTool>, removed: Array<string>, changed: Array<ChangedTool>, };

/**
 * Where a call is in its life.
 */
export type CallState = "received" | "validated" | "dispatched" | "completed" | "failed" | "timed_out" | "cancelled_before_dispatch" | "cancelled_after_dispatch" | "outcome_unknown";

/**
 * May the call write? From the tool's `readOnlyHint` when it was dispatched;
 * a tool not in the list, or without the hint, may write.
 */
export type EffectClass = "read_only" | "may_write";

/**
 * A tool as the page shows it and builds its call form from.
 */
export type ToolView = { name: string, title: string | null, description: string | null, input_schema: unknown, annotations: unknown, 
/**
 * From the tool's `readOnlyHint`.
 */
effect: EffectClass, };

/**
 * One piece of a result as shown.
 */
export type ViewItem = { "kind": "text", text: string, cut: boolean, } | { "kind": "image", mime_type: string, data: string, } | { "kind": "image_omitted", mime_type: string, bytes: number, } | { "kind": "json", label: string, text: string, cut: boolean, };

/**
 * A result as shown, plus what was cut.
 */
export type ResultView = { 
/**
 * The server flagged the result as a tool error (`isError`).
 */
is_error: boolean, items: Array<ViewItem>, 
/**
 * Bytes of the whole result as JSON.
 */
total_bytes: number, 
/**
 * Something was cut or omitted: the full result must be saved to be seen.
 */
cut: boolean, };

/**
 * How a call from the page ended.
 */
export type CallView = { call_id: string, state: CallState, 
/**
 * The result cut for the view (the full one can be saved).
 */
view: ResultView | null, error: ErrorBody | null, duration_ms: number, };

/**
 * One call record, newest first in lists.
 */
export type CallRecordView = { call_id: string, tool: string, state: CallState, effect: EffectClass | null, duration_ms: number | null, error: ErrorBody | null, 
/**
 * RFC 3339.
 */
received_at: string, };

/**
 * One page of a connection's call records, newest first.
 */
export type CallRecordPage = { records: Array<CallRecordView>, 
/**
 * Calls of every run of the connection, on all pages.
 */
total: number, 
/**
 * Where the next (older) page starts; `null` on the last page.
 */
next_offset: number | null, };

/**
 * An actor the page picked.
 */
export type ActorChoice = { "kind": "public" } | { "kind": "roles", roles: Array<Role>, } | { "kind": "user", email: string, } | { "kind": "key", key_id: string, };

/**
 * A key the page may pick (neither revoked nor expired).
 */
export type PreviewKey = { id: string, label: string, roles: Array<Role>, };

/**
 * Who can be previewed on the open site.
 */
export type PreviewChoices = { 
/**
 * Roles can be previewed only on a scratch site.
 */
scratch: boolean, roles: Array<Role>, users: Array<string>, keys: Array<PreviewKey>, };

/**
 * One tool as served to the actor.
 */
export type PreviewTool = { name: string, title: string | null, description: string | null, annotations: unknown, };

/**
 * The manifest one actor gets, and how the server ran.
 */
export type ActorManifest = { actor: string, server_name: string | null, server_version: string | null, protocol_version: string, tools: Array<PreviewTool>, 
/**
 * The sandbox profile's grant, for the page to show: the site folder.
 */
granted_paths: Array<string>, isolation_warnings: Array<string>, 
/**
 * The actor's effective reach in words, as core decides it (roles,
 * then a key's restrictions): what the page shows above the tools.
 */
reach: Array<string>, };

/**
 * Which side of a comparison has a tool.
 */
export type Presence = "both" | "only_left" | "only_right";

/**
 * One row of a side-by-side comparison.
 */
export type ComparedTool = { name: string, presence: Presence, 
/**
 * Both have it but describe or annotate it differently.
 */
differs: boolean, };

/**
 * One or two manifests and, for two, the tools lined up.
 */
export type ActorComparison = { left: ActorManifest, right: ActorManifest | null, rows: Array<ComparedTool>, 
/**
 * Each server's stderr as a connection's tail stream carries it (the
 * page shows it in the same tail panel); `right_stderr` is empty alone.
 */
left_stderr: Array<TailMessage>, right_stderr: Array<TailMessage>, };

/**
 * Who says yes to a held call.
 */
export type Decide = "client" | "owner";

/**
 * Where a held call stands.
 */
export type HeldStatus = "waiting" | "approved" | "denied" | "declined" | "timed_out" | "abandoned";

/**
 * A held call as the CLI and the desktop app show it.
 */
export type HeldCall = { id: string, 
/**
 * Whose call it is (`key:<id>`, `user:<email>`).
 */
actor: string, tool: string, 
/**
 * One line a person can say yes or no to.
 */
summary: string, 
/**
 * The arguments, secrets and large payloads replaced by what they are.
 */
arguments: unknown, 
/**
 * SHA-256 of the exact arguments the call will run with.
 */
args_sha256: string, 
/**
 * For content: the change against the entry as it was when held.
 */
diff?: string, decider: Decide, status: HeldStatus, 
/**
 * The waiting server (`pid@host`), or `client` when no server waits
 * (the client brings its user's answer in a later request).
 */
holder: string, created_at: number, expires_at: number, decided_at?: number, decided_by?: string, };

/**
 * What a desktop notification says about calls that wait for the owner.
 */
export type HeldNotice = { title: string, body: string, 
/**
 * The holds it names, oldest first.
 */
ids: Array<string>, };

/**
 * One key over its request rate, and how many requests it lost.
 */
export type LimitedKey = { key_id: string, requests: number, };

/**
 * Serve's counters since it started, and the request rate now.
 */
export type ServeStats = { requests: number, 
/**
 * Requests per second over the last few seconds.
 */
requests_per_second: number, in_flight: number, calls_ok: number, calls_error: number, calls_refused: number, auth_failures: number, 
/**
 * Everything that went wrong: tool errors, refused calls, failed
 * authentications and rate-limited requests.
 */
errors: number, rate_limited: number, limited_keys: Array<LimitedKey>, };

/**
 * The Serve panel's settings as the page gives them: text, checked by
 * [`ServeSpec::new`]. Each field is the `gatehouse serve` flag of the same
 * name (and the `[serve]` key of gatehouse.toml); empty text means none,
 * which the child is told explicitly, so `[serve]` never fills a field the
 * form left empty.
 */
export type ServeSettings = { 
/**
 * `--listen`: an address and port, such as `127.0.0.1:8808`.
 */
listen: string, 
/**
 * `--allow-host`: `Host` names served besides the loopback ones.
 */
hosts: Array<string>, 
/**
 * `--allow-origin`: browser origins accepted besides the loopback ones.
 */
origins: Array<string>, 
/**
 * `--public-url`: the origin clients reach the server at; OAuth for
 * connectors is on when it is given.
 */
public_url: string, 
/**
 * `--tls-cert` and `--tls-key`: PEM files, both or neither.
 */
tls_cert: string, tls_key: string, 
/**
 * `--behind-proxy`: the addresses of the TLS-terminating proxies in front.
 */
behind_proxy: Array<string>, 
/**
 * `--require-key`: refuse requests without a key instead of serving
 * them as `public`.
 */
require_key: boolean, };

/**
 * What the Serve panel shows.
 */
export type ServeStatus = { running: boolean, 
/**
 * The `/mcp` endpoint clients call.
 */
url: string, listen: string, pid?: number, 
/**
 * When it was started (epoch ms).
 */
started_at: number, 
/**
 * Every `Host` value served and every origin accepted (loopback included).
 */
hosts: Array<string>, origins: Array<string>, 
/**
 * The OAuth issuer (the public URL) when OAuth is on: connectors
 * (claude.ai, Claude Desktop, ChatGPT) are then given `url`.
 */
oauth_issuer?: string, 
/**
 * The settings it runs with, normalised (for the form, and to start it
 * again).
 */
settings: ServeSettings, 
/**
 * The counters, when the metrics endpoint answered.
 */
stats?: ServeStats, 
/**
 * Why there are no counters (the endpoint did not answer).
 */
stats_error?: string, 
/**
 * How it ended, once it has ("exit status 0", "signal 9", …).
 */
exit?: string, 
/**
 * The kept stderr (head and tail, with Gatehouse's marker when cut),
 * within the excerpt budget.
 */
stderr: string, stderr_counters: TailCounters, };

/**
 * One client's remote config, or why it has none.
 */
export type RemoteConfig = { client: Client, client_name: string, config?: GeneratedConfig, unavailable?: ErrorBody, };

/**
 * The arguments of the `app_info` command, as the page sends them.
 */
export type AppInfoArgs = Record<symbol, never>;

/**
 * The arguments of the `last_screen` command, as the page sends them.
 */
export type LastScreenArgs = Record<symbol, never>;

/**
 * The arguments of the `remember_screen` command, as the page sends them.
 */
export type RememberScreenArgs = { id: string, };

/**
 * The arguments of the `open_site` command, as the page sends them.
 */
export type OpenSiteArgs = { path: string, };

/**
 * The arguments of the `create_site` command, as the page sends them.
 */
export type CreateSiteArgs = { path: string, name: string | null, scratch: boolean, };

/**
 * The arguments of the `pick_folder` command, as the page sends them.
 */
export type PickFolderArgs = { title: string, };

/**
 * The arguments of the `recent_sites` command, as the page sends them.
 */
export type RecentSitesArgs = Record<symbol, never>;

/**
 * The arguments of the `forget_site` command, as the page sends them.
 */
export type ForgetSiteArgs = { path: string, };

/**
 * The arguments of the `default_site_path` command, as the page sends them.
 */
export type DefaultSitePathArgs = Record<symbol, never>;

/**
 * The arguments of the `key_overview` command, as the page sends them.
 */
export type KeyOverviewArgs = { filter: KeyFilter, };

/**
 * The arguments of the `list_keys` command, as the page sends them.
 */
export type ListKeysArgs = Record<symbol, never>;

/**
 * The arguments of the `mint_key` command, as the page sends them.
 */
export type MintKeyArgs = { label: string, roles: Array<string>, expires: string | null, 
/**
 * Restrictions narrowing its roles; none when absent.
 */
restrictions: RestrictionForm | null, };

/**
 * The arguments of the `revoke_key` command, as the page sends them.
 */
export type RevokeKeyArgs = { id: string, };

/**
 * The arguments of the `roll_key` command, as the page sends them.
 */
export type RollKeyArgs = { id: string, grace: string | null, };

/**
 * The arguments of the `restrict_key` command, as the page sends them.
 */
export type RestrictKeyArgs = { id: string, restrictions: RestrictionForm, };

/**
 * The arguments of the `key_tools` command, as the page sends them.
 */
export type KeyToolsArgs = { roles: Array<string>, };

/**
 * The arguments of the `oauth_grants` command, as the page sends them.
 */
export type OAuthGrantsArgs = Record<symbol, never>;

/**
 * The arguments of the `revoke_oauth_grant` command, as the page sends them.
 */
export type RevokeOAuthGrantArgs = { id: string, };

/**
 * The arguments of the `pairing_request` command, as the page sends them.
 */
export type PairingRequestArgs = { 
/**
 * The code the consent page shows (case and dashes do not matter).
 */
code: string, 
/**
 * The key or user the application would act as.
 */
acts_as: GrantPrincipal, };

/**
 * The arguments of the `approve_pairing` command, as the page sends them.
 */
export type ApprovePairingArgs = { 
/**
 * The code the consent page shows (case and dashes do not matter).
 */
code: string, 
/**
 * The key or user the application will act as.
 */
acts_as: GrantPrincipal, };

/**
 * The arguments of the `list_users` command, as the page sends them.
 */
export type ListUsersArgs = Record<symbol, never>;

/**
 * The arguments of the `create_user` command, as the page sends them.
 */
export type CreateUserArgs = { email: string, roles: Array<string>, };

/**
 * The arguments of the `set_user_roles` command, as the page sends them.
 */
export type SetUserRolesArgs = { email: string, roles: Array<string>, };

/**
 * The arguments of the `set_user_disabled` command, as the page sends them.
 */
export type SetUserDisabledArgs = { email: string, disabled: boolean, };

/**
 * The arguments of the `permission_table` command, as the page sends them.
 */
export type PermissionTableArgs = Record<symbol, never>;

/**
 * The arguments of the `list_site_config` command, as the page sends them.
 */
export type ListSiteConfigArgs = Record<symbol, never>;

/**
 * The arguments of the `set_site_config` command, as the page sends them.
 */
export type SetSiteConfigArgs = { key: string, value: string, secret: boolean, };

/**
 * The arguments of the `unset_site_config` command, as the page sends them.
 */
export type UnsetSiteConfigArgs = { key: string, };

/**
 * The arguments of the `audit_page` command, as the page sends them.
 */
export type AuditPageArgs = { filter: AuditFilter, before_seq: number | null, limit: number, };

/**
 * The arguments of the `verify_audit` command, as the page sends them.
 */
export type VerifyAuditArgs = Record<symbol, never>;

/**
 * The arguments of the `export_audit` command, as the page sends them.
 */
export type ExportAuditArgs = { filter: AuditFilter, dir: string, };

/**
 * The arguments of the `config_clients` command, as the page sends them.
 */
export type ConfigClientsArgs = Record<symbol, never>;

/**
 * The arguments of the `generate_client_config` command, as the page sends them.
 */
export type GenerateClientConfigArgs = { client: string, key_id: string | null, secret_ref: boolean, };

/**
 * The arguments of the `install_client_config` command, as the page sends them.
 */
export type InstallClientConfigArgs = { client: string, key_id: string | null, secret_ref: boolean, scope: string | null, project: string | null, dry_run: boolean, expected_hash: string | null, };

/**
 * The arguments of the `doctor_client_configs` command, as the page sends them.
 */
export type DoctorClientConfigsArgs = { project: string | null, };

/**
 * The arguments of the `list_connections` command, as the page sends them.
 */
export type ListConnectionsArgs = Record<symbol, never>;

/**
 * The arguments of the `open_connection` command, as the page sends them.
 */
export type OpenConnectionArgs = { name: string, };

/**
 * The arguments of the `close_connection` command, as the page sends them.
 */
export type CloseConnectionArgs = { name: string, };

/**
 * The arguments of the `watch_stderr` command, as the page sends them.
 */
export type WatchStderrArgs = { name: string, stream: string, };

/**
 * The arguments of the `unwatch_stderr` command, as the page sends them.
 */
export type UnwatchStderrArgs = { stream: string, };

/**
 * The arguments of the `connection_status` command, as the page sends them.
 */
export type ConnectionStatusArgs = { name: string, };

/**
 * The arguments of the `connection_form` command, as the page sends them.
 */
export type ConnectionFormArgs = { name: string, };

/**
 * The arguments of the `save_connection` command, as the page sends them.
 */
export type SaveConnectionArgs = { original: string | null, form: DefinitionForm, };

/**
 * The arguments of the `duplicate_connection` command, as the page sends them.
 */
export type DuplicateConnectionArgs = { name: string, new_name: string, };

/**
 * The arguments of the `remove_connection` command, as the page sends them.
 */
export type RemoveConnectionArgs = { name: string, };

/**
 * The arguments of the `consent_request` command, as the page sends them.
 */
export type ConsentRequestArgs = { name: string, };

/**
 * The arguments of the `grant_consent` command, as the page sends them.
 */
export type GrantConsentArgs = { name: string, definition_sha256: string, };

/**
 * The arguments of the `approve_tools` command, as the page sends them.
 */
export type ApproveToolsArgs = { name: string, };

/**
 * The arguments of the `list_tools` command, as the page sends them.
 */
export type ListToolsArgs = { name: string, };

/**
 * The arguments of the `tool_hold` command, as the page sends them.
 */
export type ToolHoldArgs = { name: string, };

/**
 * The arguments of the `call_tool` command, as the page sends them.
 */
export type CallToolArgs = { name: string, tool: string, 
/**
 * Checked here to be an object (the form builds one).
 */
arguments: Record<string, unknown>, token: string, };

/**
 * The arguments of the `cancel_call` command, as the page sends them.
 */
export type CancelCallArgs = { token: string, };

/**
 * The arguments of the `call_records` command, as the page sends them.
 */
export type CallRecordsArgs = { name: string, offset: number, limit: number, };

/**
 * The arguments of the `save_call_result` command, as the page sends them.
 */
export type SaveCallResultArgs = { call_id: string, };

/**
 * The arguments of the `save_stderr` command, as the page sends them.
 */
export type SaveStderrArgs = { name: string, };

/**
 * The arguments of the `preview_choices` command, as the page sends them.
 */
export type PreviewChoicesArgs = Record<symbol, never>;

/**
 * The arguments of the `preview_actors` command, as the page sends them.
 */
export type PreviewActorsArgs = { left: ActorChoice, right: ActorChoice | null, };

/**
 * The arguments of the `held_calls` command, as the page sends them.
 */
export type HeldCallsArgs = { all: boolean, };

/**
 * The arguments of the `decide_held_call` command, as the page sends them.
 */
export type DecideHeldCallArgs = { id: string, approve: boolean, };

/**
 * The arguments of the `notify_held_calls` command, as the page sends them.
 */
export type NotifyHeldCallsArgs = { 
/**
 * Held calls the page has not told the owner about yet.
 */
ids: Array<string>, };

/**
 * The arguments of the `start_serve` command, as the page sends them.
 */
export type StartServeArgs = { 
/**
 * Listen address, allowlists, public URL (OAuth), TLS files, proxies.
 */
settings: ServeSettings, };

/**
 * The arguments of the `serve_status` command (none).
 */
export type ServeStatusArgs = Record<symbol, never>;

/**
 * The arguments of the `stop_serve` command (none).
 */
export type StopServeArgs = Record<symbol, never>;

/**
 * The arguments of the `serve_client_configs` command.
 */
export type ServeClientConfigsArgs = { 
/**
 * The served endpoint.
 */
url: string, 
/**
 * The key clients call as; `null` for `public`.
 */
key_id: string | null, };

/**
 * The arguments of the `serve_saved_settings` command (none).
 */
export type ServeSavedSettingsArgs = Record<symbol, never>;

/**
 * The arguments of the `save_serve_settings` command.
 */
export type SaveServeSettingsArgs = { settings: ServeSettings, };

/** Every command: what it takes (`args`), answers (`result`) and streams
 * (`event`), from `src-tauri/src/commands/list.rs`. */
export type Commands = {
  app_info: { args: AppInfoArgs; result: AppInfo };
  last_screen: { args: LastScreenArgs; result: string | null };
  remember_screen: { args: RememberScreenArgs; result: null };
  open_site: { args: OpenSiteArgs; result: SiteSummary };
  create_site: { args: CreateSiteArgs; result: SiteSummary };
  pick_folder: { args: PickFolderArgs; result: string | null };
  recent_sites: { args: RecentSitesArgs; result: Array<RecentSite> };
  forget_site: { args: ForgetSiteArgs; result: Array<RecentSite> };
  default_site_path: { args: DefaultSitePathArgs; result: string };
  key_overview: { args: KeyOverviewArgs; result: Array<KeyReport> };
  list_keys: { args: ListKeysArgs; result: Array<KeyInfo> };
  mint_key: { args: MintKeyArgs; result: MintedKey };
  revoke_key: { args: RevokeKeyArgs; result: KeyInfo };
  roll_key: { args: RollKeyArgs; result: MintedKey };
  restrict_key: { args: RestrictKeyArgs; result: KeyInfo };
  key_tools: { args: KeyToolsArgs; result: Array<ToolChoice> };
  oauth_grants: { args: OAuthGrantsArgs; result: Array<GrantOverview> };
  revoke_oauth_grant: { args: RevokeOAuthGrantArgs; result: null };
  pairing_request: { args: PairingRequestArgs; result: PairingRequest };
  approve_pairing: { args: ApprovePairingArgs; result: PairingApproved };
  list_users: { args: ListUsersArgs; result: Array<User> };
  create_user: { args: CreateUserArgs; result: User };
  set_user_roles: { args: SetUserRolesArgs; result: User };
  set_user_disabled: { args: SetUserDisabledArgs; result: User };
  permission_table: { args: PermissionTableArgs; result: Array<PermissionRow> };
  list_site_config: { args: ListSiteConfigArgs; result: Array<ConfigEntry> };
  set_site_config: { args: SetSiteConfigArgs; result: ConfigEntry };
  unset_site_config: { args: UnsetSiteConfigArgs; result: null };
  audit_page: { args: AuditPageArgs; result: AuditPage };
  verify_audit: { args: VerifyAuditArgs; result: AuditReport };
  export_audit: { args: ExportAuditArgs; result: AuditExport };
  config_clients: { args: ConfigClientsArgs; result: Array<ClientChoice> };
  generate_client_config: { args: GenerateClientConfigArgs; result: GeneratedConfig };
  install_client_config: { args: InstallClientConfigArgs; result: InstallOutcome };
  doctor_client_configs: { args: DoctorClientConfigsArgs; result: DoctorReport };
  list_connections: { args: ListConnectionsArgs; result: Array<ConnectionView> };
  open_connection: { args: OpenConnectionArgs; result: LiveView };
  close_connection: { args: CloseConnectionArgs; result: LiveView };
  watch_stderr: { args: WatchStderrArgs; result: boolean; event: TailMessage };
  unwatch_stderr: { args: UnwatchStderrArgs; result: boolean };
  connection_status: { args: ConnectionStatusArgs; result: LiveView };
  connection_form: { args: ConnectionFormArgs; result: DefinitionForm };
  save_connection: { args: SaveConnectionArgs; result: string };
  duplicate_connection: { args: DuplicateConnectionArgs; result: string };
  remove_connection: { args: RemoveConnectionArgs; result: null };
  consent_request: { args: ConsentRequestArgs; result: ConsentRequest };
  grant_consent: { args: GrantConsentArgs; result: null };
  approve_tools: { args: ApproveToolsArgs; result: null };
  list_tools: { args: ListToolsArgs; result: Array<ToolView> };
  tool_hold: { args: ToolHoldArgs; result: ErrorBody | null };
  call_tool: { args: CallToolArgs; result: CallView };
  cancel_call: { args: CancelCallArgs; result: boolean };
  call_records: { args: CallRecordsArgs; result: CallRecordPage };
  save_call_result: { args: SaveCallResultArgs; result: string };
  save_stderr: { args: SaveStderrArgs; result: string };
  preview_choices: { args: PreviewChoicesArgs; result: PreviewChoices };
  preview_actors: { args: PreviewActorsArgs; result: ActorComparison };
  held_calls: { args: HeldCallsArgs; result: Array<HeldCall> };
  decide_held_call: { args: DecideHeldCallArgs; result: HeldCall };
  notify_held_calls: { args: NotifyHeldCallsArgs; result: HeldNotice | null };
  start_serve: { args: StartServeArgs; result: ServeStatus };
  serve_status: { args: ServeStatusArgs; result: ServeStatus | null };
  stop_serve: { args: StopServeArgs; result: ServeStatus };
  serve_client_configs: { args: ServeClientConfigsArgs; result: Array<RemoteConfig> };
  serve_saved_settings: { args: ServeSavedSettingsArgs; result: ServeSettings };
  save_serve_settings: { args: SaveServeSettingsArgs; result: ServeSettings };
};
