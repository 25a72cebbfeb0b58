import { h } from "../dom";
import type { ConsentRequest } from "../ipc";

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
    ["Memory (RSS)", bytes(l.max_rss_bytes)],
    ["CPU time", ms(l.max_cpu_ms)],
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

/**
 * Asks before a connection whose tools changed since they were approved is
 * started: what the refusal says changed. Resolves true when the admin approves.
 */
export function askToolApproval(name: string, message: string, hint: string | null): Promise<boolean> {
  const approve = h("button", { id: "tools-approve", class: "button button-primary", value: "approve" }, "Approve the new tools");
  const cancel = h("button", { id: "tools-cancel", class: "button", value: "cancel" }, "Cancel");
  const dialog = h(
    "dialog",
    { id: "tools-dialog", class: "dialog", "aria-labelledby": "tools-title", "data-connection": name },
    h("h2", { id: "tools-title" }, `${name}'s tools changed`),
    h("p", { id: "tools-message", class: "pre-wrap" }, message),
    hint ? h("p", { class: "muted" }, hint) : h("span", {}),
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
