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

// ---- connections (Connections screen) ---------------------------------------

/** One message on a tail stream (`TailMessage` in src-tauri/src/commands/connections.rs). */
export type TailMessage =
  | { kind: "lines"; lines: string[] }
  | { kind: "missed"; lines: number; bytes: number }
  | { kind: "end"; bytesSeen: number; bytesRetained: number; truncated: boolean };

/**
 * Streams `count` demo lines, written into a real core stderr tail, to
 * `onMessage` in order, ending with an `end` message. Resolves with the bytes
 * written.
 */
export function streamDemo(
  count: number,
  onMessage: (message: TailMessage) => void,
): Promise<number> {
  const channel = new Channel<TailMessage>();
  channel.onmessage = onMessage;
  return call<number>("stream_demo", { count, onEvent: channel });
}
