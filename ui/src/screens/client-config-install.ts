import { errorView } from "../components/error-view";
import { h } from "../dom";
import {
  type Check,
  type DoctorReport,
  type InstallOutcome,
  type Scope,
  toGatehouseError,
  call,
} from "../ipc";
import { panel } from "./screen";

/** Where and how the install writes; `null` means the client's default. */
interface InstallTarget {
  scope: Scope | null;
  project: string | null;
}

/** What the Client config panel currently shows: the install writes exactly that. */
export interface Selection {
  client: string;
  keyId: string | null;
  secretRef: boolean;
}

function tone(status: Check["status"]): string {
  switch (status) {
    case "pass":
      return "ok";
    case "skip":
      return "muted";
    default:
      return "error";
  }
}

/**
 * "Install into the client's file": a dry run first, whose diff is shown, then
 * a write of exactly that selection. Any change to the selection (client, key,
 * secret reference, scope) drops the preview, so what is written is what was
 * shown.
 */
export function installPanel(selection: () => Selection | null): {
  element: HTMLElement;
  reset: () => void;
  setAvailability: (state: { available: boolean; note: string }) => void;
} {
  const scope = h(
    "select",
    { id: "install-scope", class: "input select" },
    h("option", { value: "" }, "Client's default"),
    h("option", { value: "user" }, "User (every project)"),
    h("option", { value: "project" }, "Project folder"),
    h("option", { value: "local" }, "Local (this project, kept outside it: Claude Code)"),
  );
  const project = h("input", {
    id: "install-project",
    class: "input",
    type: "text",
    placeholder: "/path/to/project (project scope)",
    // A placeholder is no name: it goes away as soon as something is typed.
    "aria-label": "Project folder (project scope)",
  });
  const preview = h("button", { id: "install-preview", class: "button", type: "button" }, "Preview install");
  const write = h("button", { id: "install-write", class: "button button-primary", type: "button", hidden: true }, "Write file");
  const output = h("div", { id: "install-output", class: "stack", "aria-live": "polite" });
  const unavailable = h("p", { id: "install-unavailable", class: "muted", hidden: true });
  let previewed: { selection: Selection; target: InstallTarget; hash: string } | null = null;
  let generation = 0;

  const target = (): InstallTarget => ({
    scope: scope.value === "" ? null : (scope.value as Scope),
    project: project.value.trim() === "" ? null : project.value.trim(),
  });
  const reset = (): void => {
    generation++;
    previewed = null;
    write.hidden = true;
    output.replaceChildren();
    delete output.dataset.state;
  };
  const show = (outcome: InstallOutcome): void => {
    const what = outcome.dry_run
      ? outcome.changed
        ? `${outcome.path} would change as shown.`
        : `${outcome.path} already holds this entry: nothing to write.`
      : outcome.written
        ? `Wrote ${outcome.path}${outcome.backup ? `; the previous version is kept as ${outcome.backup}` : ""}.`
        : `${outcome.path} already holds this entry: nothing written.`;
    const parts: HTMLElement[] = [
      h("p", { id: "install-summary", class: outcome.dry_run ? "muted" : "notice notice-ok" }, what),
    ];
    if (outcome.diff) {
      parts.push(h("pre", { id: "install-diff", class: "codeblock", "data-format": "diff" }, outcome.diff));
    }
    parts.push(h("p", { class: "snippet-instructions muted" }, outcome.instructions));
    output.replaceChildren(...parts);
    output.dataset.state = outcome.dry_run ? "preview" : "written";
  };
  const run = async (dryRun: boolean): Promise<void> => {
    const chosen = dryRun ? selection() : previewed?.selection;
    const where = dryRun ? target() : previewed?.target;
    if (!chosen || !where) return;
    const mine = ++generation;
    write.hidden = true;
    let outcome: InstallOutcome;
    try {
      // The write names the file as previewed: core refuses it if it changed since.
      const hash = dryRun ? null : (previewed?.hash ?? null);
      outcome = await call("install_client_config", { client: chosen.client, key_id: chosen.keyId, secret_ref: chosen.secretRef, scope: where.scope, project: where.project, dry_run: dryRun, expected_hash: hash });
    } catch (raw) {
      if (mine !== generation) return;
      output.replaceChildren(errorView(toGatehouseError(raw)));
      output.dataset.state = "error";
      return;
    }
    if (mine !== generation) return;
    show(outcome);
    previewed = dryRun && outcome.changed ? { selection: chosen, target: where, hash: outcome.original_hash } : null;
    write.hidden = previewed === null;
  };
  // A client with no file of its own (JetBrains) cannot be installed into: say so up front.
  const setAvailability = (state: { available: boolean; note: string }): void => {
    preview.disabled = !state.available;
    unavailable.hidden = state.available;
    unavailable.textContent = state.note;
  };
  preview.addEventListener("click", () => void run(true));
  write.addEventListener("click", () => void run(false));
  scope.addEventListener("change", reset);
  project.addEventListener("input", reset);

  const element = panel(
    "Install into the client",
    h("span", { class: "muted" }, "the diff is shown before anything is written"),
    h(
      "div",
      { class: "field-row wrap" },
      h("label", { for: "install-scope", class: "field-label" }, "Scope"),
      scope,
      project,
      preview,
      write,
    ),
    unavailable,
    output,
  );
  element.id = "install-panel";
  return { element, reset, setAvailability };
}

function reportView(report: DoctorReport): HTMLElement {
  if (report.files.length === 0) {
    return h("p", { class: "muted" }, "No MCP client configuration found for this user.");
  }
  const rows: HTMLElement[] = [];
  for (const file of report.files) {
    const where = `${file.client_name} (${file.scope}): ${file.path}`;
    if (file.error) {
      rows.push(h("tr", { "data-client": file.client }, h("td", { class: "mono" }, where), h("td", {}, h("span", { class: "pill", "data-tone": "error" }, "unreadable")), h("td", {}, file.error)));
    } else if (file.entries.length === 0) {
      rows.push(h("tr", { "data-client": file.client }, h("td", { class: "mono" }, where), h("td", {}, h("span", { class: "pill", "data-tone": "muted" }, "none")), h("td", { class: "muted" }, "no Gatehouse entry")));
    }
    for (const entry of file.entries) {
      rows.push(
        h(
          "tr",
          { "data-client": file.client, "data-entry": entry.name, "data-ok": String(entry.ok) },
          h("td", { class: "mono" }, `${where} → ${entry.name}`),
          h("td", {}, h("span", { class: "pill", "data-tone": entry.ok ? "ok" : "error" }, entry.ok ? "ok" : "problem")),
          h(
            "td",
            {},
            h(
              "ul",
              { class: "plain-list" },
              ...entry.checks.map((c) =>
                h(
                  "li",
                  { "data-check": c.name, "data-status": c.status },
                  h("span", { class: "pill", "data-tone": tone(c.status) }, `${c.name}: ${c.status}`),
                  " ",
                  c.message,
                ),
              ),
            ),
          ),
        ),
      );
    }
  }
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "table table-compact" },
      h("thead", {}, h("tr", {}, h("th", {}, "File and entry"), h("th", {}, "State"), h("th", {}, "Checks"))),
      h("tbody", {}, ...rows),
    ),
  );
}

/** "Doctor": every client file of this user and whether each Gatehouse entry still works. */
export function doctorPanel(): HTMLElement {
  const project = h("input", {
    id: "doctor-project",
    class: "input",
    type: "text",
    placeholder: "also check a project folder (optional)",
    "aria-label": "Project folder to check too (optional)",
  });
  const button = h("button", { id: "doctor-run", class: "button", type: "button" }, "Check clients");
  const output = h("div", { id: "doctor-output", class: "stack", "aria-live": "polite" });
  button.addEventListener("click", () => {
    output.dataset.state = "loading";
    call("doctor_client_configs", { project: project.value.trim() === "" ? null : project.value.trim() })
      .then((report) => {
        output.replaceChildren(reportView(report));
        output.dataset.state = report.ok ? "ok" : "problems";
      })
      .catch((raw: unknown) => {
        output.replaceChildren(errorView(toGatehouseError(raw)));
        output.dataset.state = "error";
      });
  });
  const element = panel(
    "Doctor",
    h("span", { class: "muted" }, "finds client files and checks each Gatehouse entry"),
    h("div", { class: "field-row wrap" }, project, button),
    output,
  );
  element.id = "doctor-panel";
  return element;
}
