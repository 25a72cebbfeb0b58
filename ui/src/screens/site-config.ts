import { whileBusy } from "../components/busy";
import { twoStep } from "../components/confirm-button";
import { errorView } from "../components/error-view";
import { h } from "../dom";
import {
  type ConfigEntry,
  toGatehouseError,
  call,
} from "../ipc";
import { currentSite } from "../session";
import { formatTime, noSitePanel } from "./common";
import { type Screen, panel, screenFrame } from "./screen";

/**
 * The site's key/value config (the `http_fetch` allowlist among it): list,
 * set, remove; each change is audited by core. A value marked secret, or
 * shaped like one, is sent to Rust and never shown again: the list shows it
 * redacted, as clients see it.
 */
export const siteConfig: Screen = {
  id: "site-config",
  title: "Site config",
  render() {
    const frame = (...body: HTMLElement[]) =>
      screenFrame(
        "Site config",
        ["Values the site and its tools read, such as ", h("code", { class: "inline-code" }, "http_fetch.allowlist"), ". Secret values are never shown again."],
        ...body,
      );
    if (!currentSite()) return frame(noSitePanel());

    const tbody = h("tbody", { id: "config-rows" });
    const listStatus = h("div", { id: "config-status", class: "result", "aria-live": "polite" });

    const row = (entry: ConfigEntry): HTMLTableRowElement => {
      const remove = h("button", { type: "button", class: "button button-small button-danger", "data-action": "remove" });
      const rowError = h("div", { class: "row-error", "aria-live": "polite" });
      twoStep(
        remove,
        { text: "Remove", label: `Remove ${entry.key}` },
        { text: "Confirm remove", label: `Confirm removing ${entry.key}` },
        () => {
          void whileBusy(remove, "Removing…", () => call("unset_site_config", { key: entry.key }))
            .then(() => refresh())
            .catch((raw: unknown) => { rowError.replaceChildren(errorView(toGatehouseError(raw))); });
        },
        () => { rowError.replaceChildren(); },
      );
      return h(
        "tr",
        { "data-key": entry.key, "data-redacted": String(entry.redacted) },
        h("td", {}, h("code", { class: "inline-code" }, entry.key)),
        h("td", { class: "config-value mono" }, entry.value),
        h("td", {}, entry.secret ? h("span", { class: "pill", "data-tone": "warn" }, "secret") : entry.redacted ? h("span", { class: "pill" }, "secret-shaped") : "—"),
        h("td", { class: "nowrap" }, formatTime(entry.updated_at)),
        h("td", { class: "row-actions" }, remove, rowError),
      );
    };

    const refresh = async (): Promise<void> => {
      try {
        const list = await call("list_site_config", {});
        tbody.replaceChildren(...list.map(row));
        listStatus.replaceChildren(list.length === 0 ? h("p", { class: "muted" }, "No config yet: set a value above.") : "");
      } catch (raw) {
        listStatus.replaceChildren(errorView(toGatehouseError(raw)));
      }
    };

    const key = h("input", { id: "config-key", class: "input", placeholder: "http_fetch.allowlist", autocomplete: "off", spellcheck: false });
    const value = h("textarea", { id: "config-value", class: "input mono", rows: 2, spellcheck: false });
    const secret = h("input", { id: "config-secret", type: "checkbox" });
    const submit = h("button", { id: "config-set", type: "submit", class: "button button-primary" }, "Set value");
    const result = h("div", { id: "config-result", class: "result", "aria-live": "polite" });
    const form = h(
      "form",
      { id: "config-form", class: "form-grid" },
      h("label", { for: "config-key", class: "field-label" }, "Key"),
      key,
      h("label", { for: "config-value", class: "field-label" }, "Value"),
      value,
      h("span", {}),
      h("label", { class: "check" }, secret, " Secret (never shown again; clients see it redacted). An entry already secret stays secret until removed."),
      h("span", {}),
      h("div", { class: "toolbar" }, submit),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      result.replaceChildren();
      void whileBusy(submit, "Saving…", () => call("set_site_config", { key: key.value.trim(), value: value.value, secret: secret.checked }))
        .then((entry) => {
          // The value leaves the page once it is stored.
          value.value = "";
          secret.checked = false;
          result.replaceChildren(h("p", { class: "muted" }, `set ${entry.key}${entry.secret ? " (secret)" : ""}`));
          return refresh();
        })
        .catch((raw: unknown) => {
          // Next to the form that caused it.
          result.replaceChildren(errorView(toGatehouseError(raw)));
          key.focus();
        });
    });

    void refresh();
    return frame(
      panel("Set a value", null, form, result),
      panel(
        "Config",
        null,
        h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { id: "config-table", class: "table" },
            h(
              "thead",
              {},
              h("tr", {}, ...["Key", "Value", "Kind", "Updated", ""].map((t) => h("th", { scope: "col" }, t))),
            ),
            tbody,
          ),
        ),
        listStatus,
      ),
    );
  },
};
