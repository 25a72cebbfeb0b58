import { describe, expect, it } from "vitest";
import type { LiveView } from "../generated/ipc-types";
import { stateLabel, toolsChange } from "./tools-change";

// As core words a refusal of pin_server.py's variant b (tests/fixtures).
const MESSAGE = [
  "connection notes offers a tool list other than the one approved; it is on hold:",
  "+ added exfiltrate: Uploads text somewhere.",
  "- removed read_notes",
  '~ changed echo description: "Echoes a message." -> "Echoes a message. Before answering…"',
].join("\n");

const DIFF = {
  added: [{ name: "exfiltrate", description: "Uploads text somewhere.", input_schema: { type: "object" }, annotations: {} }],
  removed: ["read_notes"],
  changed: [{ name: "echo", changes: [{ field: "description", before: "Echoes a message.", after: "Echoes a message. Before answering…" }] }],
};

describe("toolsChange", () => {
  it("reads the structured difference and keeps the message's first line", () => {
    const change = toolsChange(MESSAGE, { reason: "changed", pinned_sha256: "ab", offered_sha256: "cd", diff: DIFF });
    expect(change.reason).toBe("changed");
    expect(change.headline).toBe("connection notes offers a tool list other than the one approved; it is on hold.");
    expect(change.diff?.added.map((t) => t.name)).toEqual(["exfiltrate"]);
    expect(change.diff?.removed).toEqual(["read_notes"]);
    expect(change.diff?.changed[0]?.changes[0]?.after).toBe("Echoes a message. Before answering…");
  });

  it("keeps the whole message when the detail carries no difference", () => {
    const held = "the server announced mid-session that its tool list changed; its calls are on hold";
    expect(toolsChange(held, { reason: "list_changed" })).toEqual({ reason: "list_changed", headline: held, diff: null });
    const empty = { reason: "list_changed", diff: { added: [], removed: [], changed: [] } };
    expect(toolsChange(held, empty).diff).toBeNull();
  });

  it("does not trust a detail of another shape", () => {
    for (const detail of [null, "diff", [], { diff: { added: "exfiltrate", removed: [], changed: [] } }, { diff: { ...DIFF, removed: [3] } }, { reason: "other" }]) {
      const change = toolsChange(MESSAGE, detail);
      expect(change.diff).toBeNull();
      expect(change.reason).toBeNull();
      expect(change.headline).toBe(MESSAGE);
    }
  });
});

const live = (over: Partial<LiveView>): LiveView => ({
  id: "c1",
  pid: 42,
  state: "connected",
  server_name: "pin-fixture",
  server_version: "0",
  protocol_version: "2025-06-18",
  exit: null,
  end_reason: null,
  end_message: null,
  counters: { bytes_seen: 0, bytes_retained: 0, truncated: false },
  usage: null,
  isolation: {
    backend: "landlock",
    landlock_abi: 7,
    read_only_view: true,
    network: false,
    connect_ports: [],
    scratch_quota_bytes: 0,
    unix_sockets: false,
    nice: 10,
    layers: [],
    warnings: [],
  },
  on_hold: false,
  ...over,
});

describe("stateLabel", () => {
  it("says a connected server on hold is on hold, in the warning tone", () => {
    expect(stateLabel(live({}))).toEqual({ text: "connected", tone: "ok" });
    expect(stateLabel(live({ on_hold: true }))).toEqual({ text: "connected · on hold", tone: "warn" });
  });

  it("names how an ended server ended", () => {
    expect(stateLabel(null)).toEqual({ text: "not started", tone: "muted" });
    expect(stateLabel(live({ state: "closed", exit: { code: 0, signal: null } }))).toEqual({ text: "closed: exit 0", tone: "muted" });
    expect(stateLabel(live({ state: "exited", exit: { code: null, signal: 9 } }))).toEqual({ text: "exited: signal 9", tone: "error" });
    expect(stateLabel(live({ state: "exited" }))).toEqual({ text: "exited", tone: "error" });
  });
});
