import { h } from "../dom";
import { type RestrictionForm, type Role, type StatusScope, type ToolChoice, call, toGatehouseError } from "../ipc";
import { restrictionForm, toolBoxes } from "../lib/key-form";
import { errorView } from "./error-view";

const STATUSES: readonly (readonly [StatusScope, string])[] = [
  ["any", "drafts and published"],
  ["draft", "drafts only"],
  ["published", "published only"],
];

/**
 * The restriction part of the key form, for minting (`mint-…` ids) and for
 * editing a key (`edit-…` ids): a tool allowlist picked from the tools the
 * key's roles allow, read-only, a content scope (slug patterns and
 * draft/published), a call rate and the client networks `gatehouse serve`
 * accepts. Core checks every field; {@link RestrictionFields.value} only
 * gathers them.
 */
export class RestrictionFields {
  readonly element: HTMLElement;
  private readonly limit: HTMLInputElement;
  private readonly toolList: HTMLElement;
  private readonly readOnly: HTMLInputElement;
  private readonly content: HTMLInputElement;
  private readonly status: HTMLSelectElement;
  private readonly rate: HTMLInputElement;
  private readonly from: HTMLInputElement;
  private allowlist: readonly string[] | null;
  private loaded = 0;

  constructor(prefix: string, initial: RestrictionForm) {
    this.allowlist = initial.tools;
    this.limit = h("input", { id: `${prefix}-limit-tools`, type: "checkbox", checked: initial.tools !== null });
    this.toolList = h("div", { id: `${prefix}-tools`, class: "checks tool-checks", role: "group", "aria-label": "Allowed tools" });
    this.readOnly = h("input", { id: `${prefix}-read-only`, type: "checkbox", checked: initial.read_only });
    const text = (name: string, value: string, placeholder: string) =>
      h("input", { id: `${prefix}-${name}`, type: "text", class: "input mono", value, placeholder, autocomplete: "off", spellcheck: "false" });
    this.content = text("content", initial.content, "every entry (or blog-*, news-*)");
    this.status = h(
      "select",
      { id: `${prefix}-content-status`, class: "input select", "aria-label": "Entries by status" },
      ...STATUSES.map(([value, label]) => h("option", { value, selected: value === initial.content_status }, label)),
    );
    this.rate = text("rate", initial.rate, "no limit (or 60/min, 5/s, 1000/h)");
    this.from = text("from", initial.from, "any network (or 10.0.0.0/8, 192.168.1.0/24)");
    this.limit.addEventListener("change", () => {
      this.syncLimit();
    });
    this.element = h(
      "fieldset",
      { id: `${prefix}-restrictions`, class: "restriction-fields form-grid" },
      h("legend", { class: "field-label" }, "Restrictions (they only narrow the roles)"),
      h("span", { class: "field-label" }, "Tools"),
      h("div", { class: "stack" }, h("label", { class: "check" }, this.limit, "only the tools ticked below"), this.toolList),
      h("span", { class: "field-label" }, "Effect"),
      h("label", { class: "check" }, this.readOnly, "read-only: only tools that read"),
      h("label", { for: `${prefix}-content`, class: "field-label" }, "Content slugs"),
      h("div", { class: "field-pair" }, this.content, this.status),
      h("label", { for: `${prefix}-rate`, class: "field-label" }, "Rate"),
      this.rate,
      h("label", { for: `${prefix}-from`, class: "field-label" }, "Networks (serve)"),
      this.from,
    );
    this.syncLimit();
  }

  private syncLimit(): void {
    this.toolList.hidden = !this.limit.checked;
  }

  /** Shows the tools `roles` allow (the ticks kept where the names stay). */
  async loadTools(roles: readonly Role[]): Promise<void> {
    const turn = ++this.loaded;
    if (this.toolList.childElementCount > 0) this.allowlist = this.ticked();
    let choices: ToolChoice[] = [];
    if (roles.length > 0) {
      try {
        choices = await call("key_tools", { roles: [...roles] });
      } catch (raw) {
        if (turn === this.loaded) this.toolList.replaceChildren(errorView(toGatehouseError(raw)));
        return;
      }
    }
    // A later role change already asked again: its answer wins.
    if (turn !== this.loaded) return;
    const boxes = toolBoxes(choices, this.allowlist);
    this.toolList.replaceChildren(
      ...(boxes.length === 0 ? [h("span", { class: "muted" }, "pick a role first")] : []),
      ...boxes.map((b) =>
        h(
          "label",
          { class: "check", title: b.beyondRoles ? "listed on the key, but its roles do not allow it" : `${b.title} (${b.effect})` },
          h("input", { type: "checkbox", value: b.name, checked: b.checked, "data-tool": b.name }),
          b.name,
          b.beyondRoles ? h("span", { class: "muted" }, " (not allowed by its roles)") : null,
        ),
      ),
    );
    this.toolList.dataset.state = "ready";
  }

  private ticked(): string[] {
    return Array.from(this.toolList.querySelectorAll<HTMLInputElement>("input[data-tool]"))
      .filter((box) => box.checked)
      .map((box) => box.value);
  }

  /** The fields as core's form. */
  value(): RestrictionForm {
    return restrictionForm({
      limitTools: this.limit.checked,
      tools: this.ticked(),
      readOnly: this.readOnly.checked,
      content: this.content.value,
      status: this.status.value as StatusScope,
      rate: this.rate.value,
      from: this.from.value,
    });
  }
}
