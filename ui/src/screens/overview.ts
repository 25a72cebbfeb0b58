import { whileBusy } from "../components/busy";
import { errorView, successView } from "../components/error-view";
import { h } from "../dom";
import {
  type RecentSite,
  type SiteSummary,
  toGatehouseError,
  call,
} from "../ipc";
import { currentSite, setCurrentSite } from "../session";
import { backendText } from "./common";
import { type Screen, code, panel, screenFrame } from "./screen";

function openedView(site: SiteSummary): HTMLElement {
  const kind = site.scratch ? "scratch site" : "site";
  return successView(`Opened ${kind} “${site.name}”`, `${site.path} · ${backendText(site.backend)}`);
}

/** A "Choose folder…" button that fills `input` from the native picker. */
function chooseButton(id: string, input: HTMLInputElement, title: string, label: string): HTMLButtonElement {
  const button = h("button", { id, type: "button", class: "button", "aria-label": label }, "Choose folder…");
  button.addEventListener("click", () => {
    void call("pick_folder", { title })
      .then((path) => {
        if (path !== null) input.value = path;
        input.focus();
      })
      .catch(() => {
        // No picker (e.g. no portal): typing the path still works.
        input.focus();
      });
  });
  return button;
}

/** Opens a site (typed, picked or recent) and creates new ones. */
export const overview: Screen = {
  id: "overview",
  title: "Sites",
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
      call("default_site_path", {})
        .then((path) => {
          if (!input.value) input.value = path;
        })
        .catch(() => {
          // No default is fine: the placeholder says what to type.
        });
    }
    const button = h("button", { id: "site-check", type: "submit", class: "button button-primary" }, "Open site");
    const result = h("div", { id: "site-result", class: "result", "aria-live": "polite" }, open ? openedView(open) : null);
    const recentList = h("ul", { id: "recent-sites", class: "recent-list", "aria-label": "Recent sites" });

    const opened = (site: SiteSummary) => {
      setCurrentSite(site);
      result.replaceChildren(openedView(site));
      void showRecent();
    };

    const openPath = (path: string, trigger: HTMLButtonElement, target: HTMLElement) => {
      target.replaceChildren();
      void whileBusy(trigger, "Opening…", () => call("open_site", { path }))
        .then(opened)
        .catch((raw: unknown) => {
          target.replaceChildren(errorView(toGatehouseError(raw)));
        });
    };

    const recentRow = (site: RecentSite): HTMLElement => {
      const status = h("div", { class: "recent-result", "aria-live": "polite" });
      const openButton = h(
        "button",
        { type: "button", class: "button button-small", "data-action": "open", "aria-label": `Open ${site.name} (${site.path})` },
        "Open",
      );
      openButton.addEventListener("click", () => {
        input.value = site.path;
        openPath(site.path, openButton, status);
      });
      const forget = h(
        "button",
        { type: "button", class: "button button-small", "data-action": "forget", "aria-label": `Forget ${site.name} (${site.path})` },
        "Forget",
      );
      forget.addEventListener("click", () => {
        void call("forget_site", { path: site.path })
          .then(renderRecent)
          .catch((raw: unknown) => { status.replaceChildren(errorView(toGatehouseError(raw))); });
      });
      return h(
        "li",
        { class: "recent-item", "data-path": site.path },
        h(
          "div",
          { class: "recent-line" },
          h("strong", {}, site.name),
          site.scratch ? h("span", { class: "badge badge-warn" }, "scratch") : null,
          h("span", { class: "mono muted recent-path" }, site.path),
          h("span", { class: "row-actions" }, openButton, forget),
        ),
        status,
      );
    };

    const renderRecent = (list: RecentSite[]) => {
      recentList.replaceChildren(
        ...(list.length ? list.map(recentRow) : [h("li", { class: "muted" }, "No sites opened yet.")]),
      );
    };
    const showRecent = async () => {
      try {
        renderRecent(await call("recent_sites", {}));
      } catch (raw) {
        recentList.replaceChildren(h("li", {}, errorView(toGatehouseError(raw))));
      }
    };

    const form = h(
      "form",
      { class: "field-row" },
      h("label", { for: "site-path", class: "field-label" }, "Site folder"),
      input,
      chooseButton("site-choose", input, "Open a Gatehouse site", "Choose the site folder"),
      button,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      openPath(input.value, button, result);
    });

    // ---- create ----
    const newPath = h("input", {
      id: "new-site-path",
      type: "text",
      class: "input mono",
      placeholder: "/path/to/new-site",
      spellcheck: "false",
      autocomplete: "off",
    });
    const newName = h("input", { id: "new-site-name", type: "text", class: "input", placeholder: "the folder's name", autocomplete: "off" });
    const scratch = h("input", { id: "new-site-scratch", type: "radio", name: "new-site-kind", value: "scratch", checked: true });
    const empty = h("input", { id: "new-site-empty", type: "radio", name: "new-site-kind", value: "empty" });
    const create = h("button", { id: "new-site-create", type: "submit", class: "button button-primary" }, "Create site");
    const createResult = h("div", { id: "new-site-result", class: "result", "aria-live": "polite" });
    const createForm = h(
      "form",
      { id: "new-site-form", class: "form-grid" },
      h("label", { for: "new-site-path", class: "field-label" }, "New site folder"),
      h("div", { class: "field-row" }, newPath, chooseButton("new-site-choose", newPath, "Folder for the new site", "Choose the new site's folder")),
      h("label", { for: "new-site-name", class: "field-label" }, "Name"),
      newName,
      h("span", { class: "field-label", id: "new-site-kind-label" }, "Kind"),
      h(
        "div",
        { class: "checks", role: "radiogroup", "aria-labelledby": "new-site-kind-label" },
        h("label", { class: "check" }, scratch, "Scratch, with sample data (role actors allowed)"),
        h("label", { class: "check" }, empty, "Empty"),
      ),
      h("span", {}),
      h("div", { class: "toolbar" }, create),
    );
    createForm.addEventListener("submit", (event) => {
      event.preventDefault();
      createResult.replaceChildren();
      void whileBusy(create, "Creating…", () => call("create_site", { path: newPath.value, name: newName.value, scratch: scratch.checked }))
        .then((site) => {
          input.value = site.path;
          opened(site);
          createResult.replaceChildren(successView(`Created and opened “${site.name}”`, site.path));
        })
        .catch((raw: unknown) => {
          createResult.replaceChildren(errorView(toGatehouseError(raw)));
        });
    });

    void showRecent();
    return screenFrame(
      "Sites",
      ["Open a site folder (one made here or by ", code("gatehouse site init"), ") to manage its MCP access."],
      panel("Open a site", null, form, result),
      panel("Recent sites", h("span", { class: "muted" }, "the first reopens at start"), recentList),
      panel("Create a site", null, createForm, createResult),
    );
  },
};
