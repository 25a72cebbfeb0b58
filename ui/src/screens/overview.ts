import { errorView, successView } from "../components/error-view";
import { h } from "../dom";
import { openSite, toGatehouseError } from "../ipc";
import { type Screen, screenFrame } from "./screen";

/** Picks the site folder every other screen works on. */
export const overview: Screen = {
  id: "overview",
  title: "Overview",
  render() {
    const input = h("input", {
      id: "site-path",
      type: "text",
      class: "input mono",
      placeholder: "/path/to/site",
      spellcheck: "false",
      autocomplete: "off",
    });
    const button = h("button", { id: "site-check", type: "submit", class: "button button-primary" }, "Open site");
    const result = h("div", { id: "site-result", class: "result", "aria-live": "polite" });

    const form = h(
      "form",
      { class: "field-row" },
      h("label", { for: "site-path", class: "field-label" }, "Site folder"),
      input,
      button,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      button.disabled = true;
      result.replaceChildren();
      openSite(input.value)
        .then((site) => {
          const kind = site.scratch ? "scratch site" : "site";
          result.replaceChildren(successView(`Opened ${kind} “${site.name}”`, site.path));
        })
        .catch((raw: unknown) => {
          result.replaceChildren(errorView(toGatehouseError(raw)));
        })
        .finally(() => {
          button.disabled = false;
        });
    });

    return screenFrame(
      "Overview",
      "Open a site folder (one made by `gatehouse site init`) to manage its MCP access.",
      h("section", { class: "panel" }, h("header", { class: "panel-header" }, h("h2", {}, "Site")), form, result),
    );
  },
};
