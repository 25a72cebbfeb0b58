import { h } from "../dom";
import type { ConsentRequest, ErrorBody, ToolsDiff } from "../ipc";
import { ceilingText, millisText, sizeText } from "../lib/isolation";
import { toolsChange } from "../lib/tools-change";

const bytes = (b: number | null): string => (b === null ? "no limit" : `${String(Math.round(b / 1048576))} MiB`);
const ms = (v: number | null): string => (v === null ? "no limit" : v % 1000 === 0 ? `${String(v / 1000)} s` : `${String(v)} ms`);

/**
 * Asks before a new or changed connection is first started: the exact argv,
 * the environment's names (values masked: only where each comes from), the
 * working directory and the limits. Resolves true when the admin agrees.
 */
export function askConsent(req: ConsentRequest): Promise<boolean> {
  const env = req.env.length
    ? h(
        "ul",
        { id: "consent-env", class: "plain-list mono" },
        ...req.env.map((e) =>
          h(
            "li",
            { "data-env": e.name },
            `${e.name} = `,
            h(
              "span",
              { class: "masked" },
              e.source === "plain" ? "•••• (stored value)" : e.source === "host" ? `•••• (from host $${e.host_variable ?? "?"})` : `•••• (secret from host $${e.host_variable ?? "?"})`,
            ),
          ),
        ),
      )
    : h("p", { id: "consent-env", class: "muted" }, "none besides PATH and HOME (which point into the sandbox)");
  const l = req.limits;
  const facts: [string, string][] = [
    ["Program found at", req.program_path ?? "not found on the child's PATH"],
    ["Working directory", `a fresh directory under ${req.working_directory}, removed after each run`],
    ["Call timeout", ms(l.call_timeout_ms)],
    ["Memory (RSS)", ceilingText(l.max_rss_bytes === null ? null : sizeText(l.max_rss_bytes), l.max_rss_default)],
    ["CPU time", ceilingText(l.max_cpu_ms === null ? null : millisText(l.max_cpu_ms), l.max_cpu_default)],
    ["Sandbox", `${l.sandbox_backend}, network ${l.network ? "allowed" : "denied"}, scratch quota ${bytes(l.scratch_quota_bytes)}`],
    ["Extra read-only paths", l.read_only.join(", ") || "none"],
    ["Extra writable paths", l.read_write.join(", ") || "none"],
  ];
  const accept = h("button", { id: "consent-accept", class: "button button-primary", value: "accept" }, "Start this server");
  const cancel = h("button", { id: "consent-cancel", class: "button", value: "cancel" }, "Cancel");
  const dialog = h(
    "dialog",
    { id: "consent-dialog", class: "dialog", "aria-labelledby": "consent-title", "data-connection": req.name },
    h("h2", { id: "consent-title" }, `Start ${req.name}?`),
    h(
      "p",
      { class: "muted" },
      req.changed_since_consent
        ? "This connection changed since you last agreed to run it. Review what will run:"
        : "Gatehouse has not started this connection before. Review exactly what will run:",
    ),
    h("h3", {}, "Command (argv)"),
    h("ol", { id: "consent-argv", class: "argv mono" }, ...req.argv.map((a) => h("li", {}, a))),
    h("h3", {}, "Environment"),
    env,
    h("dl", { id: "consent-facts", class: "facts" }, ...facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    h("p", { class: "muted small mono" }, `definition ${req.definition_sha256.slice(0, 16)}…`),
    h("form", { method: "dialog", class: "row" }, accept, cancel),
  );
  document.body.append(dialog);
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "accept");
      dialog.remove();
    });
    dialog.showModal();
    cancel.focus();
  });
}

/** One difference of a tool list, for the approval dialog. */
function diffItem(change: "added" | "removed" | "changed", tool: string, ...body: (HTMLElement | string)[]): HTMLLIElement {
  const sign = change === "added" ? "+" : change === "removed" ? "−" : "~";
  return h(
    "li",
    { class: "tools-diff-item", "data-change": change, "data-tool": tool },
    h("div", {}, h("span", { class: "diff-sign", "aria-hidden": "true" }, `${sign} `), `${change} `, h("span", { class: "mono" }, tool)),
    ...body,
  );
}

/** The differences a refusal names: added tools with their text, removed ones, changed fields before and after. */
function diffView(diff: ToolsDiff): HTMLElement {
  const text = (cls: string, label: string, value: string) =>
    h("div", { class: `diff-text ${cls}` }, h("span", { class: "muted small" }, `${label}: `), h("span", { class: "pre-wrap" }, value));
  return h(
    "ul",
    { id: "tools-diff", class: "plain-list tools-diff" },
    ...diff.added.map((t) => diffItem("added", t.name, text("diff-after", "description", t.description ?? "(none)"))),
    ...diff.removed.map((name) => diffItem("removed", name)),
    ...diff.changed.flatMap((c) =>
      c.changes.map((f) => {
        const item = diffItem("changed", c.name, text("diff-before", `${f.field} before`, f.before), text("diff-after", `${f.field} now`, f.after));
        item.dataset.field = f.field;
        return item;
      }),
    ),
  );
}

/**
 * Asks before approving a connection's changed tools: at connect (the list
 * differs from the approved one) or mid-session (its server announced a
 * change; it is on hold). Shows what the refusal says changed, tool by tool
 * when its detail carries the difference. Resolves true when the admin approves.
 */
export function askToolApproval(name: string, refusal: ErrorBody): Promise<boolean> {
  const change = toolsChange(refusal.message, refusal.detail);
  const approve = h("button", { id: "tools-approve", class: "button button-primary", value: "approve" }, "Approve the new tools");
  const cancel = h("button", { id: "tools-cancel", class: "button", value: "cancel" }, "Cancel");
  const dialog = h(
    "dialog",
    { id: "tools-dialog", class: "dialog", "aria-labelledby": "tools-title", "data-connection": name, "data-reason": change.reason ?? "" },
    h("h2", { id: "tools-title" }, `${name}'s tools changed`),
    h("p", { id: "tools-message", class: "pre-wrap" }, change.headline),
    change.diff ? diffView(change.diff) : null,
    // The hint names the CLI's way to review and approve; here the dialog is that way.
    refusal.hint && !change.diff ? h("p", { class: "muted" }, refusal.hint) : null,
    h("form", { method: "dialog", class: "row" }, approve, cancel),
  );
  document.body.append(dialog);
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "approve");
      dialog.remove();
    });
    dialog.showModal();
    cancel.focus();
  });
}
