/**
 * The only module that talks to the Rust side.
 *
 * Every command goes through {@link call}, so a failure always reaches the
 * screens as a {@link GatehouseError} carrying `{code, message, hint}`, and the
 * codes the page can see are listed once, in {@link ERROR_CODES}.
 */
import { Channel, invoke, type InvokeArgs } from "@tauri-apps/api/core";

/**
 * Every stable error code, mirroring `gatehouse_core::error::codes` (a Rust
 * unit test in src-tauri/src/error.rs fails when one is missing here), plus
 * the codes the page produces itself.
 */
export const ERROR_CODES = [
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
  // MCP server tools (issue 3).
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
  // Produced by this module: the command could not be called or returned
  // something that is not an error object (a bug, or running outside Tauri).
  "IPC_FAILED",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** The object every command rejects with. */
export interface ErrorBody {
  code: string;
  message: string;
  hint?: string;
  detail?: unknown;
}

/** A failed command, thrown by every function in this module. */
export class GatehouseError extends Error {
  readonly body: ErrorBody;

  constructor(body: ErrorBody) {
    super(`${body.code}: ${body.message}`);
    this.name = "GatehouseError";
    this.body = body;
  }

  get code(): string {
    return this.body.code;
  }

  /** False for a code this build of the page does not know (a newer core). */
  get known(): boolean {
    return (ERROR_CODES as readonly string[]).includes(this.body.code);
  }
}

function isErrorBody(raw: unknown): raw is ErrorBody {
  if (typeof raw !== "object" || raw === null) return false;
  const r = raw as Record<string, unknown>;
  return typeof r.code === "string" && typeof r.message === "string";
}

/** Turns anything a failed call can produce into a {@link GatehouseError}. */
export function toGatehouseError(raw: unknown): GatehouseError {
  if (raw instanceof GatehouseError) return raw;
  if (isErrorBody(raw)) return new GatehouseError(raw);
  const message = raw instanceof Error ? raw.message : String(raw);
  return new GatehouseError({
    code: "IPC_FAILED",
    message,
    hint: "this is a bug in Gatehouse; run with GATEHOUSE_LOG=debug and see the log",
  });
}

async function call<T>(command: string, args?: InvokeArgs): Promise<T> {
  try {
    return await invoke<T>(command, args);
  } catch (raw) {
    throw toGatehouseError(raw);
  }
}

// ---- window frame -----------------------------------------------------------

export interface AppInfo {
  name: string;
  /** Version of gatehouse-core. */
  version: string;
  /** Git commit the app was built from (`unknown` without git). */
  commit: string;
  license: string;
  /** The `gatehouse` CLI that generated configs name… */
  cli: string | null;
  /** …or why none was found. */
  cli_error: string | null;
}

export function appInfo(): Promise<AppInfo> {
  return call<AppInfo>("app_info");
}

// ---- site (Overview screen) -------------------------------------------------

export interface SiteSummary {
  path: string;
  name: string;
  scratch: boolean;
}

/** Opens the site in folder `path`; later commands work on it. */
export function openSite(path: string): Promise<SiteSummary> {
  return call<SiteSummary>("open_site", { path });
}

/** The folder the site field starts with: GATEHOUSE_SITE, else the app's current directory. */
export function defaultSitePath(): Promise<string> {
  return call<string>("default_site_path");
}

// ---- keys (Keys screen) -----------------------------------------------------

/** The roles a key can be given, lowest first. */
export const GRANTABLE_ROLES = ["viewer", "author", "editor", "admin"] as const;

/** A key as listed (`gatehouse_core::keys::KeyInfo`): never its secret. Times are Unix ms. */
export interface KeyInfo {
  id: string;
  label: string;
  roles: string[];
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
  revoked_at: number | null;
  replaced_by: string | null;
  status: "active" | "revoked" | "expired";
}

/** A key just minted or rolled: `key` is the raw key, shown once. */
export interface MintedKey {
  key: string;
  info: KeyInfo;
}

export function listKeys(): Promise<KeyInfo[]> {
  return call<KeyInfo[]>("list_keys");
}

/** `expires` is empty for never, a duration such as `30d`, or an RFC 3339 time. */
export function mintKey(label: string, roles: string[], expires: string): Promise<MintedKey> {
  return call<MintedKey>("mint_key", { label, roles, expires });
}

export function revokeKey(id: string): Promise<KeyInfo> {
  return call<KeyInfo>("revoke_key", { id });
}

/** Mints a replacement; the old key keeps working for `grace` (24h when omitted). */
export function rollKey(id: string, grace?: string): Promise<MintedKey> {
  return call<MintedKey>("roll_key", { id, grace });
}

// ---- client config (Client config panel) ------------------------------------

export interface ClientChoice {
  id: string;
  name: string;
  /** Whether the client can reference the key instead of holding it. */
  secretRef: boolean;
}

export interface ConfigLocation {
  scope: "project" | "user";
  os?: string;
  path: string;
}

/** One piece of text to paste (`gatehouse_core::client_config::Snippet`). */
export interface Snippet {
  format: "json" | "toml" | "yaml" | "shell";
  locations: ConfigLocation[];
  text: string;
  instructions: string;
  /** True when `text` holds a raw API key. */
  contains_secret: boolean;
}

export interface GeneratedConfig {
  client: string;
  client_name: string;
  server_name: string;
  /** The main snippet first, then alternatives. */
  snippets: Snippet[];
}

export function configClients(): Promise<ClientChoice[]> {
  return call<ClientChoice[]>("config_clients");
}

/**
 * Configuration for `client` pointing at the open site, running as key
 * `keyId` (its raw key written in, or referenced with `secretRef`), or as
 * the public actor when `keyId` is null.
 */
export function generateClientConfig(
  client: string,
  keyId: string | null,
  secretRef: boolean,
): Promise<GeneratedConfig> {
  return call<GeneratedConfig>("generate_client_config", { client, keyId, secretRef });
}

// ---- connections (Connections screen) ---------------------------------------

/** A stderr tail's byte counters at one moment. */
export interface TailCounters {
  bytesSeen: number;
  bytesRetained: number;
  truncated: boolean;
}

/** One message on a tail stream (`TailMessage` in src-tauri/src/commands/connections.rs). */
export type TailMessage =
  | { kind: "snapshot"; before: string[]; marker: string | null; after: string[]; counters: TailCounters }
  | { kind: "lines"; lines: string[]; counters: TailCounters }
  | { kind: "missed"; lines: number; bytes: number; counters: TailCounters }
  | { kind: "end"; counters: TailCounters };

export interface ExitInfo {
  code: number | null;
  signal: number | null;
}

/** What this window knows of a connection it started. */
export interface LiveConnection {
  id: string;
  pid: number;
  state: "connected" | "exited" | "closed";
  serverName: string | null;
  serverVersion: string | null;
  protocolVersion: string;
  exit: ExitInfo | null;
  endReason: string | null;
  counters: TailCounters;
}

/** A stored connection (never its environment values). */
export interface ConnectionInfo {
  name: string;
  program: string;
  args: string[];
  live: LiveConnection | null;
}

export function listConnections(): Promise<ConnectionInfo[]> {
  return call<ConnectionInfo[]>("list_connections");
}

/** Starts the stored connection `name` (a running one is returned as is). */
export function openConnection(name: string): Promise<LiveConnection> {
  return call<LiveConnection>("open_connection", { name });
}

export function closeConnection(name: string): Promise<LiveConnection> {
  return call<LiveConnection>("close_connection", { name });
}

/**
 * Streams connection `name`'s stderr to `onMessage` in order: a `snapshot` of
 * what was kept, then live messages until `end`. Resolves when the stream is
 * over (true) or the page stopped listening (false).
 */
export function watchStderr(name: string, onMessage: (message: TailMessage) => void): Promise<boolean> {
  const channel = new Channel<TailMessage>();
  channel.onmessage = onMessage;
  return call<boolean>("watch_stderr", { name, onEvent: channel });
}
