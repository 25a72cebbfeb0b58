import { errorView, successView } from "../components/error-view";
import { h } from "../dom";
import { type SiteSummary, defaultSitePath, openSite, toGatehouseError } from "../ipc";
import { currentSite, setCurrentSite } from "../session";
import { type Screen, code, panel, screenFrame } from "./screen";

function openedView(site: SiteSummary): HTMLElement {
  const kind = site.scratch ? "scratch site" : "site";
  return successView(`Opened ${kind} “${site.name}”`, site.path);
}

/** Picks the site folder every other screen works on. */
export const overview: Screen = {
  id: "overview",
  title: "Overview",
  render() {
    const open = currentSite();
    const input = h("input", {
      id: "site-path",
      type: "text",
      class: "input mono",
      placeholder: "/path/to/site",
      value: open?.path,
      spellcheck: "false",
      autocomplete: "off",
    });
    if (!open) {
      // GATEHOUSE_SITE or the current directory, as for the CLI; typing wins.
      defaultSitePath()
        .then((path) => {
          if (!input.value) input.value = path;
        })
        .catch(() => {
          // No default is fine: the placeholder says what to type.
        });
    }
    const button = h("button", { id: "site-check", type: "submit", class: "button button-primary" }, "Open site");
    const result = h("div", { id: "site-result", class: "result", "aria-live": "polite" }, open ? openedView(open) : null);

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
          setCurrentSite(site);
          result.replaceChildren(openedView(site));
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
      ["Open a site folder (one made by ", code("gatehouse site init"), ") to manage its MCP access."],
      panel("Site", null, form, result),
    );
  },
};
