import { h } from "../dom";

/** One entry in the sidebar and the page it shows. */
export interface Screen {
  /** Used in the URL hash (`#/keys`) and as the nav link's id suffix. */
  id: string;
  title: string;
  /** Builds the screen afresh each time it is opened. */
  render(): HTMLElement;
}

/** The common frame of a screen: a heading, a one-line purpose, the body. */
export function screenFrame(
  title: string,
  purpose: string,
  ...body: HTMLElement[]
): HTMLElement {
  return h(
    "article",
    { class: "screen-body" },
    h(
      "header",
      { class: "screen-header" },
      h("h1", {}, title),
      h("p", { class: "muted" }, purpose),
    ),
    ...body,
  );
}

/** A panel for a feature that lands in a later issue. */
export function plannedPanel(title: string, lines: string[]): HTMLElement {
  return h(
    "section",
    { class: "panel panel-planned" },
    h("header", { class: "panel-header" }, h("h2", {}, title), h("span", { class: "badge" }, "planned")),
    h("ul", { class: "plain-list" }, ...lines.map((line) => h("li", {}, line))),
  );
}
