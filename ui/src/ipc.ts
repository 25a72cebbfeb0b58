/**
 * The only module that talks to the Rust side.
 *
 * Every command goes through {@link call}, so a failure always reaches the
 * screens as a {@link GatehouseError} carrying `{code, message, hint}`. The
 * types of what crosses IPC are generated from the Rust types into
 * `./generated/ipc-types.ts` (snake_case fields, RFC 3339 times, as in the
 * CLI's `--json`); this module only adds the calls.
 */
import { Channel, invoke, type InvokeArgs } from "@tauri-apps/api/core";
import {
  CODES,
  type ActorChoice,
  type ActorComparison,
  type HeldCall,
  type RemoteConfig,
  type ServeStatus,
  type AppInfo,
  type AuditExport,
  type AuditFilter,
  type AuditPage,
  type AuditReport,
  type KeyFilter,
  type KeyOverview,
  type PermissionRow,
  type RecentSite,
  type User,
  type CallRecordPage,
  type CallView,
  type ConsentRequest,
  type DefinitionForm,
  type PreviewChoices,
  type ToolView,
  type ClientChoice,
  type ConfigEntry,
  type Code,
  type ConnectionView,
  type DoctorReport,
  type ErrorBody as CoreErrorBody,
  type GeneratedConfig,
  type InstallOutcome,
  type KeyInfo,
  type LiveView,
  type MintedKey,
  type Role,
  type Scope,
  type SiteSummary,
  type TailMessage,
} from "./generated/ipc-types";

export type * from "./generated/ipc-types";

/**
 * Every code the page can see: core's (generated from the Rust enum) plus the
 * one this module produces itself when a command could not be called or
 * returned something that is not an error object (a bug, or running outside Tauri).
 */
export const ERROR_CODES = [...CODES, "IPC_FAILED"] as const;

export type ErrorCode = Code | "IPC_FAILED";

/** The object every command rejects with (`IPC_FAILED` is made here). */
export type ErrorBody = Omit<CoreErrorBody, "code"> & { code: ErrorCode };

/** A failed command, thrown by every function in this module. */
export class GatehouseError extends Error {
  readonly body: ErrorBody;

  constructor(body: ErrorBody) {
    super(`${body.code}: ${body.message}`);
    this.name = "GatehouseError";
    this.body = body;
  }

  get code(): ErrorCode {
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

export function appInfo(): Promise<AppInfo> {
  return call<AppInfo>("app_info");
}

// ---- site (Overview screen) -------------------------------------------------

/** Opens the site in folder `path`; later commands work on it. */
export function openSite(path: string): Promise<SiteSummary> {
  return call<SiteSummary>("open_site", { path });
}

/** Creates a site in folder `path` (sample data when `scratch`) and opens it. */
export function createSite(path: string, name: string, scratch: boolean): Promise<SiteSummary> {
  return call<SiteSummary>("create_site", { path, name, scratch });
}

/** Asks for a folder with the native picker; null when cancelled. */
export function pickFolder(title: string): Promise<string | null> {
  return call<string | null>("pick_folder", { title });
}

/** Sites opened lately, newest first. */
export function recentSites(): Promise<RecentSite[]> {
  return call<RecentSite[]>("recent_sites");
}

export function forgetSite(path: string): Promise<RecentSite[]> {
  return call<RecentSite[]>("forget_site", { path });
}

/** The screen shown when the app last ran, if any. */
export function lastScreen(): Promise<string | null> {
  return call<string | null>("last_screen");
}

export async function rememberScreen(id: string): Promise<void> {
  await call<null>("remember_screen", { id });
}

/** The folder the site field starts with: GATEHOUSE_SITE, else the app's current directory. */
export function defaultSitePath(): Promise<string> {
  return call<string>("default_site_path");
}

// ---- keys (Keys screen) -----------------------------------------------------

/** The roles a key can be given, lowest first. */
export const GRANTABLE_ROLES = ["viewer", "author", "editor", "admin"] as const satisfies readonly Role[];

export function listKeys(): Promise<KeyInfo[]> {
  return call<KeyInfo[]>("list_keys");
}

/** `expires` is empty for never, a duration such as `30d`, or an RFC 3339 time. */
export function mintKey(label: string, roles: Role[], expires: string): Promise<MintedKey> {
  return call<MintedKey>("mint_key", { label, roles, expires });
}

/** How the Keys screen filters its list. */

/** Keys with their uses and expiry warnings, filtered. */
export function keyOverview(filter: KeyFilter): Promise<KeyOverview[]> {
  return call<KeyOverview[]>("key_overview", { filter });
}

export function revokeKey(id: string): Promise<KeyInfo> {
  return call<KeyInfo>("revoke_key", { id });
}

/** Mints a replacement; the old key keeps working for `grace` (24h when omitted). */
export function rollKey(id: string, grace?: string): Promise<MintedKey> {
  return call<MintedKey>("roll_key", { id, grace });
}

// ---- client config (Client config panel) ------------------------------------

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
  return call<GeneratedConfig>("generate_client_config", { client, key_id: keyId, secret_ref: secretRef });
}

/** Where and how {@link installClientConfig} writes; `null` means the client's default. */
export interface InstallTarget {
  scope: Scope | null;
  project: string | null;
}

/**
 * Puts the entry {@link generateClientConfig} shows into the client's own
 * file. With `dryRun` nothing is written: the outcome's `diff` is what would
 * change, for the page to show before the admin confirms. The write passes
 * the preview's `original_hash` as `expectedHash`: a file changed since is
 * refused with `CONFIG_FILE_CHANGED`.
 */
export function installClientConfig(
  client: string,
  keyId: string | null,
  secretRef: boolean,
  target: InstallTarget,
  dryRun: boolean,
  expectedHash: string | null,
): Promise<InstallOutcome> {
  return call<InstallOutcome>("install_client_config", {
    client,
    key_id: keyId,
    secret_ref: secretRef,
    scope: target.scope,
    project: target.project,
    dry_run: dryRun,
    expected_hash: expectedHash,
  });
}

/** Every MCP client file of this user (and of `project`) and the checks of each Gatehouse entry. */
export function doctorClientConfigs(project: string | null): Promise<DoctorReport> {
  return call<DoctorReport>("doctor_client_configs", { project });
}

// ---- connections (Connections screen) ---------------------------------------

export function listConnections(): Promise<ConnectionView[]> {
  return call<ConnectionView[]>("list_connections");
}

/** Starts the stored connection `name` (a running one is returned as is). */
export function openConnection(name: string): Promise<LiveView> {
  return call<LiveView>("open_connection", { name });
}

export function closeConnection(name: string): Promise<LiveView> {
  return call<LiveView>("close_connection", { name });
}

/**
 * Streams connection `name`'s stderr to `onMessage` in order: a `snapshot` of
 * what was kept, then live messages until `end`. Resolves when the stream is
 * over (true) or the page stopped listening (false).
 */
export function watchStderr(
  name: string,
  stream: string,
  onMessage: (message: TailMessage) => void,
): Promise<boolean> {
  const channel = new Channel<TailMessage>();
  channel.onmessage = onMessage;
  return call<boolean>("watch_stderr", { name, stream, on_event: channel });
}

/** Stops stream `stream` opened by {@link watchStderr}. */
export function unwatchStderr(stream: string): Promise<boolean> {
  return call<boolean>("unwatch_stderr", { stream });
}

/** A connection started in this window, now (uptime, memory, CPU, calls, end). */
export function connectionStatus(name: string): Promise<LiveView> {
  return call<LiveView>("connection_status", { name });
}

/** A stored connection as the form edits it (secrets as host variable names). */
export function connectionForm(name: string): Promise<DefinitionForm> {
  return call<DefinitionForm>("connection_form", { name });
}

/**
 * Stores `form` as a new connection, or in place of `original`; returns the
 * name stored. An invalid field fails with `detail.field` naming it.
 */
export function saveConnection(original: string | null, form: DefinitionForm): Promise<string> {
  return call<string>("save_connection", { original, form });
}

export function duplicateConnection(name: string, newName: string): Promise<string> {
  return call<string>("duplicate_connection", { name, new_name: newName });
}

export function removeConnection(name: string): Promise<null> {
  return call<null>("remove_connection", { name });
}

/** What the consent dialog shows before `name` is first started (values masked). */
export function consentRequest(name: string): Promise<ConsentRequest> {
  return call<ConsentRequest>("consent_request", { name });
}

/** Approves the tool change `name` was refused for (`CONNECTION_TOOLS_CHANGED`). */
export function approveTools(name: string): Promise<null> {
  return call<null>("approve_tools", { name });
}

export function grantConsent(name: string, definitionSha256: string): Promise<null> {
  return call<null>("grant_consent", { name, definition_sha256: definitionSha256 });
}

export function listTools(name: string): Promise<ToolView[]> {
  return call<ToolView[]>("list_tools", { name });
}

/** Calls `tool`; `token` is the handle {@link cancelCall} stops it with. */
/** The hold `name` is on, recorded: what its calls are refused with (null when not on hold). */
export function toolHold(name: string): Promise<CoreErrorBody | null> {
  return call("tool_hold", { name });
}

export function callTool(name: string, tool: string, args: Record<string, unknown>, token: string): Promise<CallView> {
  return call<CallView>("call_tool", { name, tool, arguments: args, token });
}

export function cancelCall(token: string): Promise<boolean> {
  return call<boolean>("cancel_call", { token });
}

/** A page of connection `name`'s call records, newest first, after the newest `offset`. */
export function callRecords(name: string, offset: number, limit: number): Promise<CallRecordPage> {
  return call<CallRecordPage>("call_records", { name, offset, limit });
}

/** Writes a call's full result to the downloads folder; returns the path. */
export function saveCallResult(callId: string): Promise<string> {
  return call<string>("save_call_result", { call_id: callId });
}

/** Writes what a connection's stderr tail kept to the downloads folder; returns the path. */
export function saveStderr(name: string): Promise<string> {
  return call<string>("save_stderr", { name });
}

// ---- actor preview (Actor preview screen) -----------------------------------

export function previewChoices(): Promise<PreviewChoices> {
  return call<PreviewChoices>("preview_choices");
}

/** The manifests `gatehouse mcp` serves `left` (and `right`), tools lined up. */
export function previewActors(left: ActorChoice, right: ActorChoice | null): Promise<ActorComparison> {
  return call<ActorComparison>("preview_actors", { left, right });
}

// ---- users (Users screen) ---------------------------------------------------

/** The site's config, secret values redacted. */
export function listSiteConfig(): Promise<ConfigEntry[]> {
  return call<ConfigEntry[]>("list_site_config");
}

/** Sets one entry (audited); a secret value is never returned. */
export function setSiteConfig(key: string, value: string, secret: boolean): Promise<ConfigEntry> {
  return call<ConfigEntry>("set_site_config", { key, value, secret });
}

/** Removes one entry (audited). */
export function unsetSiteConfig(key: string): Promise<null> {
  return call<null>("unset_site_config", { key });
}

export function listUsers(): Promise<User[]> {
  return call<User[]>("list_users");
}

export function createUser(email: string, roles: Role[]): Promise<User> {
  return call<User>("create_user", { email, roles });
}

export function setUserRoles(email: string, roles: Role[]): Promise<User> {
  return call<User>("set_user_roles", { email, roles });
}

export function setUserDisabled(email: string, disabled: boolean): Promise<User> {
  return call<User>("set_user_disabled", { email, disabled });
}

export function permissionTable(): Promise<PermissionRow[]> {
  return call<PermissionRow[]>("permission_table");
}

// ---- audit (Audit screen) ---------------------------------------------------

/** A page of entries matching `filter`, older than `beforeSeq` (newest page when null). */
export function auditPage(filter: AuditFilter, beforeSeq: number | null, limit: number): Promise<AuditPage> {
  return call<AuditPage>("audit_page", { filter, before_seq: beforeSeq, limit });
}

/** Checks the whole chain; `ok: false` names the first broken entry. */
export function verifyAudit(): Promise<AuditReport> {
  return call<AuditReport>("verify_audit");
}

/** Writes the entries matching `filter` to a new JSON file in folder `dir`. */
export function exportAudit(filter: AuditFilter, dir: string): Promise<AuditExport> {
  return call<AuditExport>("export_audit", { filter, dir });
}

// ---- approvals (Approvals screen) ---------------------------------------------

/** Held calls, newest first: the waiting ones, or every one when `all`. */
export function heldCalls(all: boolean): Promise<HeldCall[]> {
  return call<HeldCall[]>("held_calls", { all });
}

/** The site owner approves (`approve`) or denies held call `id`. */
export function decideHeldCall(id: string, approve: boolean): Promise<HeldCall> {
  return call<HeldCall>("decide_held_call", { id, approve });
}

// ---- serve (Serve panel) ------------------------------------------------------

/** Starts `gatehouse serve` for the open site; resolves once it serves. */
export function startServe(listen: string, hosts: string[], origins: string[]): Promise<ServeStatus> {
  return call<ServeStatus>("start_serve", { listen, hosts, origins });
}

/** The server's state and live counters; null when none was started. */
export function serveStatus(): Promise<ServeStatus | null> {
  return call<ServeStatus | null>("serve_status");
}

/** Stops the server; its last state. */
export function stopServe(): Promise<ServeStatus> {
  return call<ServeStatus>("stop_serve");
}

/** Every client's remote config for `url`, as key `keyId` (or public when null). */
export function serveClientConfigs(url: string, keyId: string | null): Promise<RemoteConfig[]> {
  return call<RemoteConfig[]>("serve_client_configs", { url, key_id: keyId });
}
