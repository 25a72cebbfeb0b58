import { type Child, h } from "../dom";

/** One entry in the sidebar and the page it shows. */
export interface Screen {
  /** Used in the URL hash (`#/keys`) and as the nav link's id suffix. */
  id: string;
  title: string;
  /**
   * Builds the screen afresh each time it is opened. `signal` aborts when the
   * user leaves it: subscriptions and streams the screen starts stop there.
   */
  render(signal: AbortSignal): HTMLElement;
}

/** The common frame of a screen: a heading, a one-line purpose, the body. */
export function screenFrame(
  title: string,
  purpose: Child[],
  ...body: HTMLElement[]
): HTMLElement {
  return h(
    "article",
    { class: "screen-body" },
    h(
      "header",
      { class: "screen-header" },
      h("h1", {}, title),
      h("p", { class: "muted" }, ...purpose),
    ),
    ...body,
  );
}

/** A panel with a title and an optional element on the right of its header. */
export function panel(
  title: string,
  aside: Child,
  ...body: Child[]
): HTMLElement {
  return h(
    "section",
    { class: "panel" },
    h("header", { class: "panel-header" }, h("h2", {}, title), aside),
    ...body,
  );
}

/** A panel for a feature that lands in a later issue. */
export function plannedPanel(title: string, lines: string[]): HTMLElement {
  const body = h("ul", { class: "plain-list" }, ...lines.map((line) => h("li", {}, line)));
  const el = panel(title, h("span", { class: "badge" }, "planned"), body);
  el.classList.add("panel-planned");
  return el;
}

/** Inline code in running text. */
export function code(text: string): HTMLElement {
  return h("code", { class: "inline-code" }, text);
}
