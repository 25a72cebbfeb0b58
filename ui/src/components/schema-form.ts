import { h } from "../dom";
import { type Field, type Problem, formFor, parseJson, parseNumber, validate } from "../lib/schema-form";

/** Reads a field's current value; `undefined` leaves an optional argument out. */
type Reader = () => unknown;

let forms = 0;

/**
 * A call form built from a tool's input schema (see `lib/schema-form.ts`),
 * with a raw JSON editor as the fallback and as an alternative view.
 * {@link SchemaForm.read} returns the arguments, or the problems found,
 * each shown next to its field.
 */
export class SchemaForm {
  readonly element: HTMLElement;
  private readonly schema: unknown;
  private readonly root: Field;
  private readonly read_: Reader;
  private readonly errors = new Map<string, HTMLElement>();
  private readonly raw: HTMLTextAreaElement;
  private readonly rawToggle: HTMLInputElement;
  private readonly fields: HTMLElement;
  private readonly prefix: string;

  constructor(inputSchema: unknown) {
    this.schema = inputSchema;
    this.root = formFor(inputSchema);
    this.prefix = `arg${String(++forms)}`;
    const rawError = this.errorSlot("");
    this.raw = h("textarea", { id: `${this.prefix}-raw`, class: "input mono", rows: 6, spellcheck: "false" });
    this.raw.value = "{}";
    const rawBox = h(
      "div",
      { class: "field" },
      h("label", { for: this.raw.id }, "Arguments (JSON)"),
      this.raw,
    );
    const formOnly = this.root.kind === "object";
    this.read_ = formOnly ? this.build(this.root) : () => parseJson(this.raw.value);
    this.fields = formOnly ? h("div", { class: "schema-fields" }, ...this.drawn) : h("div");
    this.rawToggle = h("input", { type: "checkbox", id: `${this.prefix}-use-raw` });
    this.rawToggle.checked = !formOnly;
    this.rawToggle.disabled = !formOnly;
    const sync = () => {
      const useRaw = this.rawToggle.checked;
      if (useRaw && formOnly) {
        const v = this.read_();
        this.raw.value = JSON.stringify(v ?? {}, null, 2);
      }
      this.fields.hidden = useRaw;
      rawBox.hidden = !useRaw;
    };
    this.rawToggle.addEventListener("change", sync);
    sync();
    this.element = h(
      "div",
      { class: "schema-form" },
      h("label", { class: "check" }, this.rawToggle, " Edit as JSON"),
      this.fields,
      rawBox,
      rawError,
    );
  }

  /** The arguments to send, or the problems (shown next to their fields). */
  read(): { ok: true; value: Record<string, unknown> } | { ok: false; problems: Problem[] } {
    for (const el of this.errors.values()) el.textContent = "";
    const value: unknown = (this.rawToggle.checked ? parseJson(this.raw.value) : this.read_()) ?? {};
    const problems = validate(this.schema, value);
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      problems.unshift({ path: "", message: "the arguments must be a JSON object" });
    }
    if (problems.length > 0) {
      for (const p of problems) {
        const slot = (this.rawToggle.checked ? undefined : this.errors.get(p.path)) ?? this.errors.get("");
        if (slot) slot.textContent = [slot.textContent, p.path ? `${p.path}: ${p.message}` : p.message].filter(Boolean).join("; ");
      }
      return { ok: false, problems };
    }
    return { ok: true, value: value as Record<string, unknown> };
  }

  private drawn: HTMLElement[] = [];

  private errorSlot(path: string): HTMLElement {
    const el = h("div", { class: "field-error", role: "alert", "data-path": path });
    this.errors.set(path, el);
    return el;
  }

  private id(path: string): string {
    return `${this.prefix}-${path.replace(/[^A-Za-z0-9_-]/g, "_") || "root"}`;
  }

  /** Draws the root object's fields into `drawn`; returns its reader. */
  private build(root: Field): Reader {
    const readers = root.properties.map((f) => {
      const [el, read] = this.field(f);
      this.drawn.push(el);
      return [f.key, read] as const;
    });
    return () => collect(readers);
  }

  private field(f: Field): [HTMLElement, Reader] {
    const id = this.id(f.path);
    const label = h("label", { for: id }, f.label || f.key, f.required ? h("span", { class: "required" }, " *") : null);
    const help = f.description ? h("div", { class: "muted small" }, f.description) : null;
    const error = this.errorSlot(f.path);
    const wrap = (control: HTMLElement, read: Reader): [HTMLElement, Reader] => [
      h("div", { class: "field", "data-field": f.path, "data-kind": f.kind }, label, control, help, error),
      read,
    ];
    const optional = (v: unknown): unknown => (v === null && !f.required ? undefined : v);
    switch (f.kind) {
      case "string": {
        const input = h("input", { id, class: "input", type: "text", name: f.path });
        if (typeof f.schema.default === "string") input.value = f.schema.default;
        // Empty is "not given": a required one is then reported missing.
        return wrap(input, () => (input.value === "" ? undefined : input.value));
      }
      case "number":
      case "integer": {
        const input = h("input", { id, class: "input", type: "text", inputmode: "decimal", name: f.path });
        if (typeof f.schema.default === "number") input.value = String(f.schema.default);
        return wrap(input, () => {
          const v = parseNumber(input.value, f.kind === "integer");
          // An unparsable number is sent to validation as text, which names it.
          return typeof v === "object" && v !== null ? input.value : optional(v);
        });
      }
      case "boolean": {
        const input = h("input", { id, type: "checkbox", name: f.path });
        input.checked = f.schema.default === true;
        return wrap(input, () => input.checked);
      }
      case "enum": {
        const select = h(
          "select",
          { id, class: "input", name: f.path },
          f.required ? null : h("option", { value: "" }, "—"),
          ...f.options.map((o, i) => h("option", { value: String(i) }, JSON.stringify(o))),
        );
        return wrap(select, () => (select.value === "" ? undefined : f.options[Number(select.value)]));
      }
      case "array": {
        const items = h("div", { class: "array-items" });
        const readers: Reader[] = [];
        const item = f.items;
        const add = h("button", { type: "button", class: "button button-small", id: `${id}-add` }, `Add ${f.label || f.key} item`);
        add.addEventListener("click", () => {
          if (!item) return;
          const [el, read] = this.field({ ...item, path: `${f.path}[${String(readers.length)}]`, label: `item ${String(readers.length + 1)}` });
          readers.push(read);
          items.append(el);
        });
        return wrap(h("div", { id, class: "array-field" }, items, add), () => {
          const v = readers.map((r) => r());
          return v.length === 0 && !f.required ? undefined : v;
        });
      }
      case "object": {
        const parts = f.properties.map((p) => {
          const [el, read] = this.field(p);
          return [p.key, read, el] as const;
        });
        const box = h("fieldset", { id, class: "object-field" }, h("legend", {}, f.label || f.key), ...parts.map((p) => p[2]));
        return wrap(box, () => collect(parts.map(([k, r]) => [k, r] as const)));
      }
      case "json": {
        const area = h("textarea", { id, class: "input mono", rows: 3, name: f.path, spellcheck: "false" });
        return wrap(area, () => parseJson(area.value));
      }
    }
  }
}

function collect(readers: readonly (readonly [string, Reader])[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, read] of readers) {
    const v = read();
    if (v !== undefined) out[key] = v;
  }
  return out;
}
