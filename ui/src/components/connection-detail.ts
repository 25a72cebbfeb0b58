import { h } from "../dom";
import {
  type EndReason,
  type GatehouseError,
  type CallRecordView,
  type LiveView,
  type ToolView,
  toGatehouseError,
  call,
} from "../ipc";
import { isolationLayers, isolationSummary } from "../lib/isolation";
import { formatTime } from "../screens/common";
import { Pager } from "../paging";
import { whileBusy } from "./busy";
import { askToolApproval } from "./consent-dialog";
import { errorView } from "./error-view";
import { PagedRows } from "./paged-rows";
import { PagerBar } from "./pager-bar";
import { resultView } from "./result-view";
import { SchemaForm } from "./schema-form";

/** Call records per page. */
const RECORDS_PAGE = 50;
/** Tools listed per page. */
const TOOLS_PER_PAGE = 50;

/** Core's end reasons (`EndReason`) in words: every one, or tsc fails. */
const END_REASONS: Record<EndReason, string> = {
  timeout: "a call passed its deadline",
  memory: "memory ceiling reached",
  cpu: "CPU ceiling reached",
  scratch_quota: "scratch quota reached",
  end_of_input: "ended by itself (end of input)",
  crash: "crashed",
  protocol: "broke the protocol",
  // Core's word for a close from this side: the admin cancelled the session.
  closed: "cancelled: disconnected in this window",
  dropped: "dropped",
  host_killed: "the app running it was killed",
};

/** A record's stored error in full (code, message, hint), without announcing every row as an alert. */
function quietErrorView(err: GatehouseError): HTMLElement {
  const view = errorView(err);
  view.removeAttribute("role");
  return view;
}

const mib = (b: number) => `${(b / 1048576).toFixed(1)} MiB`;

function duration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${String(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${String(m)} min ${String(s % 60)} s`;
  return `${String(Math.floor(m / 60))} h ${String(m % 60)} min`;
}

/** The facts of a live or ended connection, as a definition list. */
export function liveFacts(live: LiveView): HTMLElement {
  const facts: [string, string, string | Node][] = [
    ["server", "Server", [live.server_name ?? "unnamed server", live.server_version].filter(Boolean).join(" ")],
    ["revision", "Protocol revision", live.protocol_version],
    ["pid", "PID", String(live.pid)],
    ["isolation", "Isolation", isolationSummary(live.isolation)],
    ["isolation-layers", "Isolation layers", isolationLayers(live.isolation)],
    ...live.isolation.warnings.map((w): [string, string, string] => ["isolation-warning", "Isolation warning", w]),
  ];
  if (live.usage) {
    facts.push(
      ["uptime", "Uptime", duration(live.usage.uptime_ms)],
      ["rss", "Memory (RSS)", mib(live.usage.rss_bytes)],
      ["cpu", "CPU time", `${(live.usage.cpu_ms / 1000).toFixed(2)} s`],
      ["processes", "Processes", String(live.usage.processes)],
      ["in-flight", "Calls in flight", String(live.usage.calls_in_flight)],
    );
  }
  if (live.state !== "connected") {
    const exit = live.exit
      ? live.exit.signal !== null
        ? `signal ${String(live.exit.signal)}`
        : `exit code ${String(live.exit.code)}`
      : "not observed";
    const reason = live.end_reason ? END_REASONS[live.end_reason] : null;
    facts.push(["exit", "Exit", exit], ["reason", "Reason", [reason, live.end_message].filter(Boolean).join(": ") || "—"]);
  }
  return h(
    "dl",
    { id: "conn-facts", class: "facts", "data-state": live.state },
    ...facts.flatMap(([key, k, v]) => [h("dt", {}, k), h("dd", { "data-fact": key }, v)]),
  );
}

function annotations(tool: ToolView): string {
  const a = tool.annotations;
  if (typeof a !== "object" || a === null) return "";
  return Object.entries(a as Record<string, unknown>)
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join(" · ");
}

let tokens = 0;

/**
 * Everything about one connection started in this window: its live facts
 * (refreshed every second while it runs), its tools with a call form each,
 * the last result, and its call records newest first. `signal` stops the
 * refresh when the screen is left.
 */
export function connectionDetail(name: string, signal: AbortSignal, onChange: () => void): HTMLElement {
  const facts = h("div", { id: "conn-live" });
  const tools = h("ul", { id: "tool-list", class: "tool-list", "aria-label": `Tools of ${name}` });
  const callBox = h("div", { id: "call-box" });
  const records = h("tbody", { id: "call-records" });
  const status = h("div", { class: "result" });
  const hold = h("div", { id: "conn-hold", "aria-live": "polite" });
  let timer = 0;
  /** Whether the last status said the connection is on hold (the row shows it too). */
  let onHold = false;

  const recordsStatus = h("div", { class: "result" });
  const pager = new Pager(RECORDS_PAGE);
  let loadingRecords = 0;
  /** Loads the pager's current page of records; `trigger` shows progress when slow. */
  const loadRecords = async (trigger?: HTMLButtonElement) => {
    const mine = ++loadingRecords;
    const get = () => call("call_records", { name, offset: pager.cursor ?? 0, limit: pager.size });
    try {
      const page = await (trigger ? whileBusy(trigger, "Loading…", get) : get());
      if (mine !== loadingRecords) return;
      pager.loaded({ count: page.records.length, total: page.total, nextBefore: page.next_offset });
      records.replaceChildren(...page.records.map(recordRow));
      records.dataset.page = String(pager.index);
      recordsStatus.replaceChildren();
      bar.update();
    } catch (raw) {
      if (mine !== loadingRecords) return;
      bar.update();
      recordsStatus.replaceChildren(errorView(toGatehouseError(raw)));
    }
  };
  const bar = new PagerBar(
    pager,
    { ids: { label: "call-page-label", back: "call-newer", forward: "call-older" }, back: "Newer", forward: "Older", noun: "call records" },
    (trigger) => void loadRecords(trigger),
  );
  // After a call: back to the newest page, where the new record is.
  const refreshRecords = () => {
    pager.reset();
    return loadRecords();
  };
  const refreshFacts = async () => {
    try {
      const live = await call("connection_status", { name });
      facts.replaceChildren(liveFacts(live));
      if (live.on_hold !== onHold) {
        onHold = live.on_hold;
        showHold();
        onChange();
      }
      if (live.state !== "connected") {
        window.clearInterval(timer);
        onChange();
      }
    } catch (raw) {
      window.clearInterval(timer);
      facts.replaceChildren(errorView(toGatehouseError(raw)));
    }
  };

  const openCall = (tool: ToolView) => {
    for (const li of tools.querySelectorAll("li")) li.toggleAttribute("aria-current", li.dataset.tool === tool.name);
    const form = new SchemaForm(tool.input_schema);
    const send = h("button", { type: "submit", id: "call-send", class: "button button-primary" }, `Call ${tool.name}`);
    const cancel = h("button", { type: "button", id: "call-cancel", class: "button", disabled: true }, "Cancel call");
    const out = h("div", { id: "call-output", "aria-live": "polite" });
    let token = "";
    cancel.addEventListener("click", () => {
      if (token) void call("cancel_call", { token });
    });
    const el = h(
      "form",
      { id: "call-form", class: "call-form", "data-tool": tool.name, "aria-label": `Call ${tool.name}` },
      h("h3", {}, `Call ${tool.name}`),
      tool.effect === "may_write" ? h("p", { class: "badge badge-warn" }, "may write") : null,
      form.element,
      h("div", { class: "row" }, send, cancel),
      out,
    );
    el.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const args = form.read();
      if (!args.ok) {
        out.replaceChildren(h("p", { class: "field-error", role: "alert" }, "Fix the fields marked above before sending."));
        return;
      }
      token = `call-${String(++tokens)}-${String(Date.now())}`;
      send.disabled = true;
      cancel.disabled = false;
      out.replaceChildren(h("p", { class: "muted", id: "call-running" }, "calling…"));
      call("call_tool", { name, tool: tool.name, arguments: args.value, token })
        .then((res) => {
          // A call can change the connection (a hold announced while it ran, an
          // exit): show it now, not at the next tick.
          void refreshFacts();
          const head = h(
            "p",
            { id: "call-state", "data-state": res.state, class: "small" },
            `${res.state} in ${String(res.duration_ms)} ms · ${res.call_id}`,
          );
          out.replaceChildren(head);
          if (res.error) out.append(errorView(toGatehouseError(res.error)));
          if (res.view) out.append(resultView(res.view, () => call("save_call_result", { call_id: res.call_id })));
        })
        .catch((raw: unknown) => {
          out.replaceChildren(errorView(toGatehouseError(raw)));
        })
        .finally(() => {
          send.disabled = false;
          cancel.disabled = true;
          token = "";
          void refreshRecords();
        });
    });
    callBox.replaceChildren(el);
  };

  /**
   * The hold banner while the server's announced tool change waits for
   * approval: the review button shows what changed (the hold, recorded by the
   * Rust side) and approves it; the session then goes on with the new list.
   */
  const showHold = () => {
    if (!onHold) {
      hold.replaceChildren();
      return;
    }
    const review = h("button", { type: "button", id: "hold-review", class: "button button-small button-primary" }, "Review the change…");
    const why = h("div", { class: "result" });
    review.addEventListener("click", () => {
      why.replaceChildren();
      void whileBusy(review, "Loading…", () => call("tool_hold", { name }))
        .then(async (refusal) => {
          if (refusal && (await askToolApproval(name, refusal))) {
            await whileBusy(review, "Approving…", () => call("approve_tools", { name }));
            onHold = false;
            showHold();
            onChange();
            await load();
          } else if (!refusal) {
            await refreshFacts();
          }
        })
        .catch((raw: unknown) => {
          why.replaceChildren(errorView(toGatehouseError(raw)));
        });
    });
    hold.replaceChildren(
      h(
        "div",
        { class: "notice notice-warn", role: "status", "data-hold": "true" },
        h("div", { class: "notice-title" }, "On hold: the server announced that its tool list changed."),
        h("div", { class: "notice-hint" }, "Its calls are refused until you review and approve the new list; the session then goes on with it."),
        h("div", { class: "row" }, review),
      ),
      why,
    );
  };

  const toolRow = (t: ToolView): HTMLElement => {
    const open = h("button", { type: "button", class: "button button-small", "data-action": "call", "aria-label": `Call ${t.name}…` }, "Call…");
    open.addEventListener("click", () => {
      openCall(t);
    });
    return h(
      "li",
      { "data-tool": t.name, "data-effect": t.effect },
      h("div", { class: "tool-head" }, h("span", { class: "tool-name mono" }, t.name), t.title ? h("span", {}, ` ${t.title}`) : null, open),
      t.description ? h("div", { class: "muted small tool-description" }, t.description) : null,
      h("div", { class: "muted small mono tool-annotations" }, annotations(t)),
    );
  };
  // A server may list hundreds of tools: a page at a time.
  const toolPages = new PagedRows(tools, "tools", "tools", toolRow, TOOLS_PER_PAGE);

  const load = async () => {
    await refreshFacts();
    try {
      const list = await call("list_tools", { name });
      toolPages.set(list);
    } catch (raw) {
      status.replaceChildren(errorView(toGatehouseError(raw)));
    }
    await refreshRecords();
  };
  timer = window.setInterval(() => void refreshFacts(), 1000);
  signal.addEventListener("abort", () => {
    window.clearInterval(timer);
  });
  void load();

  return h(
    "section",
    { id: "conn-detail", class: "panel", "data-connection": name },
    h("header", { class: "panel-header" }, h("h2", {}, name)),
    facts,
    hold,
    status,
    h("div", { class: "detail-grid" }, h("div", {}, h("h3", {}, "Tools"), tools, toolPages.bar.element), callBox),
    h("div", { class: "row" }, h("h3", {}, "Call records (newest first)"), bar.element),
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { class: "table table-compact", id: "call-table" },
        h("thead", {}, h("tr", {}, ...["Received", "Tool", "State", "Effect", "Duration", "Error"].map((t) => h("th", {}, t)))),
        records,
      ),
    ),
    recordsStatus,
  );
}

function recordRow(r: CallRecordView): HTMLTableRowElement {
  return h(
    "tr",
    { "data-call": r.call_id, "data-state": r.state, "data-tool": r.tool },
    h("td", {}, formatTime(r.received_at)),
    h("td", { class: "mono" }, r.tool),
    h("td", {}, h("span", { class: "pill", "data-tone": r.state === "completed" ? "ok" : "error" }, r.state)),
    h("td", {}, r.effect ?? "—"),
    h("td", {}, r.duration_ms === null ? "—" : `${String(r.duration_ms)} ms`),
    h("td", { class: "small" }, r.error ? quietErrorView(toGatehouseError(r.error)) : ""),
  );
}
