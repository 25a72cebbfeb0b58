import { h } from "../dom";
import {
  type DefinitionForm,
  type EnvKind,
  type GatehouseError,
  toGatehouseError,
  call,
} from "../ipc";
import { errorView } from "./error-view";
import { whileBusy } from "./busy";

const KINDS: [EnvKind, string, string][] = [
  ["plain", "value", "the value"],
  ["host", "from host variable", "host variable name"],
  ["secret", "secret from host variable", "host variable name (value never shown)"],
];

/** Which form slot an error's `detail.field` belongs to. */
function slotOf(field: string): string {
  if (field.startsWith("args")) return "args";
  if (field === "limits.timeout_ms" || field === "limits.inactivity_ms") return "timeout";
  if (field === "limits.max_rss_bytes") return "max_rss";
  if (field === "limits.max_cpu_ms") return "max_cpu";
  return field;
}

/**
 * The add/edit form of a connection definition. Validation happens in Rust:
 * an error naming a field (`detail.field`) is shown next to that field.
 * `onSaved` gets the stored name.
 */
export function connectionForm(
  original: string | null,
  initial: DefinitionForm,
  onSaved: (name: string) => void,
  onCancel: () => void,
): HTMLElement {
  const slots = new Map<string, HTMLElement>();
  const slot = (name: string) => {
    const el = h("div", { class: "field-error", role: "alert", "data-error-for": name });
    slots.set(name, el);
    return el;
  };
  const input = (id: string, label: string, value: string, hint: string, errorFor: string) => {
    const el = h("input", { id, class: "input", type: "text", value, "aria-describedby": `${id}-hint` });
    el.value = value;
    return [
      el,
      h(
        "div",
        { class: "field" },
        h("label", { for: id }, label),
        el,
        h("div", { id: `${id}-hint`, class: "muted small" }, hint),
        slot(errorFor),
      ),
    ] as const;
  };
  const [name, nameField] = input("conn-form-name", "Name", initial.name, "1-64 lowercase letters, digits, '-' or '_'", "name");
  const [command, commandField] = input("conn-form-command", "Command", initial.command, "the program, e.g. npx or /usr/bin/python3", "command");
  const args = h("textarea", { id: "conn-form-args", class: "input mono", rows: 3, spellcheck: "false" });
  args.value = initial.args.join("\n");
  const argsField = h(
    "div",
    { class: "field" },
    h("label", { for: args.id }, "Arguments (one per line)"),
    args,
    slot("args"),
  );
  const [timeout, timeoutField] = input("conn-form-timeout", "Call timeout", initial.timeout, "e.g. 30s (empty: 30 s)", "timeout");
  const [maxRss, rssField] = input("conn-form-rss", "Memory limit (RSS)", initial.max_rss, "e.g. 512MiB (empty: the site default)", "max_rss");
  const [maxCpu, cpuField] = input("conn-form-cpu", "CPU time limit", initial.max_cpu, "e.g. 60s (empty: the site default)", "max_cpu");

  const envRows = h("div", { id: "conn-form-env", class: "env-rows" });
  let rowCount = 0;
  const addRow = (name = "", kind: EnvKind = "plain", value = "") => {
    const i = rowCount++;
    const n = h("input", { id: `conn-form-env-name-${String(i)}`, class: "input mono", type: "text", placeholder: "NAME" });
    n.value = name;
    const k = h("select", { id: `conn-form-env-kind-${String(i)}`, class: "input" }, ...KINDS.map(([v, t]) => h("option", { value: v }, t)));
    k.value = kind;
    const v = h("input", { id: `conn-form-env-value-${String(i)}`, class: "input mono", type: "text" });
    v.value = value;
    const placeholder = () => {
      v.placeholder = KINDS.find(([kk]) => kk === k.value)?.[2] ?? "";
      v.setAttribute("aria-label", `Value of variable ${String(i + 1)}: ${v.placeholder}`);
    };
    k.addEventListener("change", placeholder);
    placeholder();
    const remove = h("button", { type: "button", class: "button button-small", "aria-label": `Remove variable ${String(i + 1)}` }, "Remove");
    const row = h(
      "div",
      { class: "env-row", "data-row": String(i) },
      h("label", { class: "visually-hidden", for: n.id }, `Variable ${String(i + 1)} name`),
      n,
      h("label", { class: "visually-hidden", for: k.id }, `Variable ${String(i + 1)} source`),
      k,
      v,
      remove,
      slot(`env.row${String(i)}`),
    );
    remove.addEventListener("click", () => {
      row.remove();
    });
    envRows.append(row);
  };
  for (const e of initial.env) addRow(e.name, e.kind, e.value);
  const addEnv = h("button", { type: "button", id: "conn-form-env-add", class: "button button-small" }, "Add variable");
  addEnv.addEventListener("click", () => {
    addRow();
  });

  const status = h("div", { id: "conn-form-status" });
  const save = h("button", { type: "submit", id: "conn-form-save", class: "button button-primary" }, original ? "Save changes" : "Add connection");
  const cancel = h("button", { type: "button", id: "conn-form-cancel", class: "button" }, "Cancel");
  cancel.addEventListener("click", onCancel);

  const read = (): { form: DefinitionForm; rows: HTMLElement[] } => {
    const rows = Array.from(envRows.querySelectorAll<HTMLElement>(".env-row"));
    return {
      rows,
      form: {
        name: name.value.trim(),
        command: command.value.trim(),
        args: args.value.split("\n").filter((a) => a.trim() !== ""),
        env: rows.map((r) => {
          const [n, k, v] = r.querySelectorAll<HTMLInputElement | HTMLSelectElement>("input, select, input");
          return { name: n?.value.trim() ?? "", kind: (k?.value ?? "plain") as EnvKind, value: v?.value ?? "" };
        }),
        timeout: timeout.value.trim(),
        max_rss: maxRss.value.trim(),
        max_cpu: maxCpu.value.trim(),
      },
    };
  };

  const show = (err: GatehouseError, rows: HTMLElement[]) => {
    const detail = err.body.detail as { field?: unknown } | undefined;
    const field = typeof detail?.field === "string" ? detail.field : "";
    let target = slots.get(slotOf(field));
    const env = /^env\.(\d+)$/.exec(field);
    if (env) {
      const row = rows[Number(env[1])];
      target = row ? slots.get(`env.row${row.dataset.row ?? ""}`) : undefined;
    }
    if (target) {
      target.replaceChildren(errorView(err));
      target.closest(".field, .env-row")?.querySelector<HTMLElement>("input, textarea, select")?.focus();
    } else {
      status.replaceChildren(errorView(err));
    }
  };

  const form = h(
    "form",
    { id: "conn-form", class: "conn-form", "aria-label": original ? `Edit connection ${original}` : "Add a connection" },
    h("div", { class: "form-grid" }, nameField, commandField),
    argsField,
    h("fieldset", { class: "env-fieldset" }, h("legend", {}, "Environment"), envRows, addEnv),
    h("div", { class: "form-grid form-grid-3" }, timeoutField, rssField, cpuField),
    status,
    h("div", { class: "row" }, save, cancel),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    for (const el of slots.values()) el.replaceChildren();
    status.replaceChildren();
    const { form: value, rows } = read();
    void whileBusy(save, "Saving…", () => call("save_connection", { original, form: value }))
      .then(onSaved)
      .catch((raw: unknown) => {
        show(toGatehouseError(raw), rows);
      });
  });
  return form;
}
