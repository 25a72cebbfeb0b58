import { errorView, successView } from "../components/error-view";
import { h } from "../dom";
import {
  type HeldCall,
  toGatehouseError,
  call,
} from "../ipc";
import { badgeText, diffLines, takeUnseen } from "../lib/held-calls";
import { currentSite, onSiteChange } from "../session";
import { noSitePanel } from "./common";
import { type Screen, panel, screenFrame } from "./screen";

/** How often the queue is read again: a newly held call shows at once. */
const POLL_MS = 1000;

const pad = (n: number) => String(n).padStart(2, "0");

/** Epoch milliseconds as local `2026-01-31 14:05:09`. */
function when(ms: number): string {
  const d = new Date(ms);
  return `${String(d.getFullYear())}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function diffView(diff: string): HTMLElement {
  return h(
    "pre",
    { class: "held-diff mono" },
    ...diffLines(diff).map((line) => h("span", { class: `diff-line diff-${line.kind}` }, line.text, "\n")),
  );
}

function row(label: string, value: string, cls = ""): HTMLElement {
  return h("div", { class: "held-row" }, h("span", { class: "muted" }, label), " ", h("span", { class: cls }, value));
}

/** One held call with its facts and, while it waits, the two decisions. */
function card(held: HeldCall, decide: (held: HeldCall, approve: boolean) => void): HTMLElement {
  const waiting = held.status === "waiting" && held.decider === "owner";
  return h(
    "section",
    { class: "panel held-call", "data-id": held.id, "data-status": held.status, "data-tool": held.tool },
    h(
      "header",
      { class: "panel-header" },
      h("h2", { class: "held-summary" }, held.summary),
      h("span", { class: "badge held-status" }, held.status),
    ),
    row("Tool", held.tool, "mono held-tool"),
    row("Caller", held.actor, "mono held-actor"),
    row("Held", when(held.created_at), "held-created"),
    row("Expires", when(held.expires_at), "held-expires"),
    held.decided_by ? row("Decided by", `${held.decided_by} at ${when(held.decided_at ?? 0)}`, "held-decided") : null,
    h("h3", {}, "Arguments, as recorded"),
    h("pre", { class: "held-arguments mono" }, JSON.stringify(held.arguments, null, 2)),
    held.diff ? h("h3", {}, "Change to the entry") : null,
    held.diff ? diffView(held.diff) : null,
    waiting
      ? h(
          "div",
          { class: "actions" },
          button("Approve", "approve", () => {
            decide(held, true);
          }),
          button("Deny", "deny", () => {
            decide(held, false);
          }),
        )
      : null,
  );
}

function button(label: string, kind: string, onClick: () => void): HTMLButtonElement {
  const b = h("button", { type: "button", class: kind === "deny" ? "button button-danger" : "button button-primary", "data-action": kind }, label);
  b.addEventListener("click", onClick);
  return b;
}

/** The site owner's queue of held calls: read, approve, deny. */
export const approvals: Screen = {
  id: "approvals",
  title: "Approvals",
  render(signal) {
    const frame = (...body: HTMLElement[]) =>
      screenFrame(
        "Approvals",
        ["Calls held until the site owner says yes. An approved call runs with exactly the arguments shown; a denied one is refused."],
        ...body,
      );
    if (!currentSite()) return frame(noSitePanel());

    const list = h("div", { id: "held-calls" });
    const result = h("div", { id: "approvals-result" });
    const showAll = h("input", { id: "approvals-all", type: "checkbox" });
    let shown = "";

    const refresh = async (): Promise<void> => {
      try {
        const calls = await call("held_calls", { all: showAll.checked });
        if (signal.aborted) return;
        const key = JSON.stringify(calls.map((c) => [c.id, c.status]));
        if (key === shown) return;
        shown = key;
        list.replaceChildren(
          ...(calls.length === 0
            ? [h("p", { id: "approvals-empty", class: "muted" }, "No calls are waiting for a decision.")]
            : calls.map((c) => card(c, decide))),
        );
      } catch (raw) {
        if (!signal.aborted) result.replaceChildren(errorView(toGatehouseError(raw)));
      }
    };

    const decide = (held: HeldCall, approve: boolean): void => {
      for (const b of list.querySelectorAll<HTMLButtonElement>(`[data-id="${held.id}"] button`)) b.disabled = true;
      call("decide_held_call", { id: held.id, approve })
        .then((done) => {
          result.replaceChildren(successView(`${done.status}: ${done.summary}`, `${done.tool} · decided by ${done.decided_by ?? ""}`));
        })
        .catch((raw: unknown) => {
          result.replaceChildren(errorView(toGatehouseError(raw)));
        })
        .finally(() => {
          shown = "";
          void refresh();
          void refreshBadge();
        });
    };

    showAll.addEventListener("change", () => {
      shown = "";
      void refresh();
    });
    const timer = setInterval(() => void refresh(), POLL_MS);
    signal.addEventListener("abort", () => {
      clearInterval(timer);
    });
    void refresh();
    return frame(
      panel("Held calls", h("label", { class: "check" }, showAll, "Show decided calls too"), result, list),
    );
  },
};

/** Held calls the owner was notified of (a hold raises one notification). */
const notified = new Set<string>();

/**
 * Keeps the count of waiting calls beside the Approvals link current, and
 * asks for a desktop notification when a call newly waits for the owner.
 */
async function refreshBadge(): Promise<void> {
  const badge = document.getElementById("nav-approvals-count");
  if (!badge) return;
  let text = "";
  if (currentSite()) {
    try {
      const waiting = (await call("held_calls", { all: false })).filter((c) => c.decider === "owner");
      text = badgeText(waiting.length);
      notify(
        badge,
        takeUnseen(
          waiting.map((c) => c.id),
          notified,
        ),
      );
    } catch {
      // The screen itself says what failed; the badge just stays empty.
    }
  }
  badge.textContent = text;
  badge.hidden = text === "";
}

/** Raises the notification for `ids`; the badge keeps which holds it named. */
function notify(badge: HTMLElement, ids: string[]): void {
  if (ids.length === 0) return;
  call("notify_held_calls", { ids })
    .then((notice) => {
      if (!notice) return;
      const named = new Set((badge.dataset.notified ?? "").split(" ").filter(Boolean));
      for (const id of notice.ids) named.add(id);
      badge.dataset.notified = [...named].join(" ");
    })
    .catch(() => {
      // Best effort: the badge and the queue still show the call.
    });
}

/** Starts the badge's poll (once, from the app shell). */
export function startApprovalsBadge(): void {
  onSiteChange(() => void refreshBadge());
  setInterval(() => void refreshBadge(), POLL_MS);
  void refreshBadge();
}
