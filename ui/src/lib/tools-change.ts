/**
 * Reading a `CONNECTION_TOOLS_CHANGED` refusal for the approval dialog, and a
 * connection's state as its row says it (a hold included), without the DOM.
 *
 * Core words the refusal (`message`, with one line per difference) and puts
 * the structured difference in its detail (`reason`, `diff`: see
 * `gatehouse_core::mcp::client::pin`); the dialog shows the structure when it
 * is there and the message as it is otherwise.
 */
import type { LiveView, PendingReason, ToolsDiff } from "../generated/ipc-types";

const REASONS: readonly PendingReason[] = ["changed", "list_changed", "definition_changed"];

/** What a refusal says changed, ready to show. */
export interface ToolsChange {
  /** Why the connection waits for approval; null when the detail does not say. */
  reason: PendingReason | null;
  /** The message's first line (what happened), without the per-line summary. */
  headline: string;
  /** The differences; null when the detail carries none (the message then says it all). */
  diff: ToolsDiff | null;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isString = (v: unknown): v is string => typeof v === "string";

function isDiff(v: unknown): v is ToolsDiff {
  if (!isObject(v)) return false;
  const { added, removed, changed } = v;
  return (
    Array.isArray(added) &&
    added.every((t) => isObject(t) && isString(t.name)) &&
    Array.isArray(removed) &&
    removed.every(isString) &&
    Array.isArray(changed) &&
    changed.every(
      (c) =>
        isObject(c) &&
        isString(c.name) &&
        Array.isArray(c.changes) &&
        c.changes.every((f) => isObject(f) && isString(f.field) && isString(f.before) && isString(f.after)),
    )
  );
}

/**
 * The change a refusal (`message` and `detail` of a `CONNECTION_TOOLS_CHANGED`
 * error) describes. A diff with nothing in it counts as none: a hold whose new
 * list could not be read says so in its message.
 */
export function toolsChange(message: string, detail: unknown): ToolsChange {
  const d = isObject(detail) ? detail : {};
  const reason = REASONS.find((r) => r === d.reason) ?? null;
  const diff = isDiff(d.diff) && (d.diff.added.length > 0 || d.diff.removed.length > 0 || d.diff.changed.length > 0) ? d.diff : null;
  // Core writes "connection X …; it is on hold:" then one line per difference.
  const headline = diff ? (message.split("\n")[0] ?? message).replace(/:$/, ".") : message;
  return { reason, headline, diff };
}

/** A connection's state as its row's pill says it, with the pill's tone. */
export function stateLabel(live: LiveView | null): { text: string; tone: "ok" | "warn" | "error" | "muted" } {
  if (!live) return { text: "not started", tone: "muted" };
  if (live.state === "connected") return live.on_hold ? { text: "connected · on hold", tone: "warn" } : { text: "connected", tone: "ok" };
  const tone = live.state === "exited" ? "error" : "muted";
  if (!live.exit) return { text: live.state, tone };
  if (live.exit.signal !== null) return { text: `${live.state}: signal ${String(live.exit.signal)}`, tone };
  return { text: `${live.state}: exit ${String(live.exit.code)}`, tone };
}
