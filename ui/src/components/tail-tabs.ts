import { h } from "../dom";
import {
  toGatehouseError,
  call,
  callStreaming,
} from "../ipc";
import { tabKeyTarget } from "../lib/roving";
import { TailPanel } from "./tail-panel";

let streams = 0;

/**
 * Several connections' stderr tails, as tabs or side by side. Each tail is a
 * stream this object opened; {@link TailTabs.stopAll} (called when the screen
 * is left) stops every one of them on the Rust side.
 */
export class TailTabs {
  readonly element: HTMLElement;
  private readonly tabs: HTMLElement;
  private readonly body: HTMLElement;
  private readonly open = new Map<string, { panel: TailPanel; stream: string; tab: HTMLButtonElement }>();
  private active: string | null = null;
  private sideBySide = false;

  constructor() {
    this.tabs = h("div", { id: "tail-tabs", class: "tabs", role: "tablist", "aria-label": "stderr tails" });
    this.body = h("div", { class: "tail-body" });
    // WAI-ARIA tabs: one tab in the Tab order (roving tabindex), arrows move between them.
    this.tabs.addEventListener("keydown", (event) => {
      const names = [...this.open.keys()];
      const current = names.findIndex((name) => this.open.get(name)?.tab === event.target);
      if (current < 0) return;
      const target = names[tabKeyTarget(event.key, current, names.length) ?? -1];
      if (target === undefined) return;
      event.preventDefault();
      this.activate(target);
      this.open.get(target)?.tab.focus();
    });
    const layout = h("input", { type: "checkbox", id: "tail-side-by-side" });
    layout.addEventListener("change", () => {
      this.sideBySide = layout.checked;
      this.layout();
    });
    this.element = h(
      "section",
      { class: "tail-tabs" },
      h("div", { class: "row" }, this.tabs, h("label", { class: "check" }, layout, " Side by side")),
      this.body,
    );
  }

  /** Shows `name`'s stderr from the start of what core kept, in its own tab. */
  watch(name: string, onEnd: () => void): void {
    this.stop(name);
    const stream = `tail-${String(++streams)}`;
    const panel = new TailPanel(`stderr · ${name}`, () => call("save_stderr", { name }));
    const tab = h("button", { type: "button", role: "tab", id: `${stream}-tab`, class: "tab", "data-tail": name }, name);
    panel.element.setAttribute("role", "tabpanel");
    panel.element.setAttribute("aria-labelledby", tab.id);
    tab.addEventListener("click", () => {
      this.activate(name);
    });
    const close = h("button", { type: "button", class: "tab-close", "aria-label": `Close the stderr tab of ${name}` }, "×");
    close.addEventListener("click", () => {
      this.stop(name);
      this.layout();
    });
    this.tabs.append(h("span", { class: "tab-wrap", "data-tail": name }, tab, close));
    this.open.set(name, { panel, stream, tab });
    panel.start();
    this.activate(name);
    callStreaming("watch_stderr", { name, stream }, (message) => {
      if (this.open.get(name)?.stream === stream) panel.push(message);
    })
      .then(() => {
        if (this.open.get(name)?.stream === stream) onEnd();
      })
      .catch((raw: unknown) => {
        panel.fail(toGatehouseError(raw));
      });
  }

  activate(name: string): void {
    this.active = name;
    this.layout();
  }

  /** Stops and removes `name`'s tail. */
  stop(name: string): void {
    const entry = this.open.get(name);
    if (!entry) return;
    this.open.delete(name);
    entry.panel.dispose();
    void call("unwatch_stderr", { stream: entry.stream }).catch(() => undefined);
    this.tabs.querySelector(`.tab-wrap[data-tail="${CSS.escape(name)}"]`)?.remove();
    if (this.active === name) this.active = this.open.keys().next().value ?? null;
  }

  /** Stops every stream this object opened (the screen was left). */
  stopAll(): void {
    for (const name of [...this.open.keys()]) this.stop(name);
  }

  private layout(): void {
    const shown: HTMLElement[] = [];
    for (const [name, { panel, tab }] of this.open) {
      const active = name === this.active;
      tab.setAttribute("aria-selected", String(active));
      tab.tabIndex = active ? 0 : -1;
      panel.setActive(active);
      if (active || this.sideBySide) shown.push(panel.element);
    }
    this.body.classList.toggle("side-by-side", this.sideBySide);
    this.body.replaceChildren(...shown);
    // A hidden panel drew nothing meanwhile (see TailPanel): catch up.
    for (const { panel } of this.open.values()) panel.refresh();
  }
}
