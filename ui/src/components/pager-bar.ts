import { h } from "../dom";
import type { Pager } from "../paging";

export interface PagerBarOptions {
  /** Ids of the label and the two buttons (the page's tests find them). */
  ids: { label: string; back: string; forward: string };
  /** Button texts: "Newer"/"Older" for a log, "Previous"/"Next" for a list. */
  back: string;
  forward: string;
  /** What the entries are, for "No keys" and the buttons' names. */
  noun: string;
}

/**
 * The controls of a {@link Pager}: "1–50 of 312" and a button each way.
 * `load(trigger)` loads the pager's current page (showing progress on
 * `trigger` if it is slow) and then calls {@link PagerBar.update}.
 */
export class PagerBar {
  readonly element: HTMLElement;
  private readonly label: HTMLElement;
  private readonly back: HTMLButtonElement;
  private readonly forward: HTMLButtonElement;

  constructor(
    private readonly pager: Pager,
    private readonly options: PagerBarOptions,
    load: (trigger: HTMLButtonElement) => void,
  ) {
    const { ids, noun } = options;
    this.label = h("span", { id: ids.label, class: "muted", "aria-live": "polite" }, "Loading…");
    const button = (id: string, text: string, arrow: "← " | " →") =>
      h(
        "button",
        { id, type: "button", class: "button button-small", disabled: true, "aria-label": `${text} ${noun}` },
        arrow === "← " ? h("span", { "aria-hidden": "true" }, arrow) : null,
        text,
        arrow === " →" ? h("span", { "aria-hidden": "true" }, arrow) : null,
      );
    this.back = button(ids.back, options.back, "← ");
    this.forward = button(ids.forward, options.forward, " →");
    this.back.addEventListener("click", () => {
      if (this.pager.previous()) load(this.back);
    });
    this.forward.addEventListener("click", () => {
      if (this.pager.next() !== null) load(this.forward);
    });
    this.element = h("div", { class: "toolbar pager" }, this.label, this.back, this.forward);
  }

  /** After a page loaded (or failed, with `text` ""): the label and which ways are open. */
  update(text = this.pager.describe(this.options.noun)): void {
    this.label.textContent = text;
    this.back.disabled = !this.pager.hasPrevious;
    this.forward.disabled = !this.pager.hasNext;
  }
}
