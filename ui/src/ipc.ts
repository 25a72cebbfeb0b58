/**
 * The only module that talks to the Rust side.
 *
 * Every command goes through {@link call} (or {@link callStreaming} for one that
 * streams), typed by the generated `Commands` map: a command's name, its
 * argument fields and its result all come from the Rust side
 * (`src-tauri/src/commands/list.rs`), so a renamed command or field fails
 * `tsc`. A failure always reaches the screens as a {@link GatehouseError}
 * carrying `{code, message, hint}`. The types are generated into
 * `./generated/ipc-types.ts` (snake_case fields, RFC 3339 times, as in the
 * CLI's `--json`).
 */
import { Channel, invoke } from "@tauri-apps/api/core";
import { CODES, type Code, type Commands, type ErrorBody as CoreErrorBody, type Role } from "./generated/ipc-types";

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

/** What command `K` takes. */
export type Args<K extends keyof Commands> = Commands[K]["args"];

/** What command `K` answers. */
export type Answer<K extends keyof Commands> = Commands[K]["result"];

/** The commands that stream messages over a channel while they run. */
export type Streaming = {
  [K in keyof Commands]: Commands[K] extends { event: unknown } ? K : never;
}[keyof Commands];

/** Calls command `name` with `args`; rejects with a {@link GatehouseError}. */
export async function call<K extends keyof Commands>(name: K, args: Args<K>): Promise<Answer<K>> {
  try {
    return await invoke<Answer<K>>(name, { args });
  } catch (raw) {
    throw toGatehouseError(raw);
  }
}

/**
 * Calls streaming command `name`: each message reaches `onMessage` in order
 * (a `tauri::ipc::Channel`, which keeps order where events do not); resolves
 * with the command's answer when the stream is over.
 */
export async function callStreaming<K extends Streaming>(
  name: K,
  args: Args<K>,
  onMessage: (message: Commands[K]["event"]) => void,
): Promise<Answer<K>> {
  const channel = new Channel<Commands[K]["event"]>();
  channel.onmessage = onMessage;
  try {
    return await invoke<Answer<K>>(name, { args, on_event: channel });
  } catch (raw) {
    throw toGatehouseError(raw);
  }
}

/** The roles a key can be given, lowest first. */
export const GRANTABLE_ROLES = ["viewer", "author", "editor", "admin"] as const satisfies readonly Role[];
