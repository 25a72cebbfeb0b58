import { ConfigPanel } from "../components/config-panel";
import { copyButton } from "../components/copy-button";
import { errorView } from "../components/error-view";
import { h } from "../dom";
import { whileBusy } from "../components/busy";
import { PagedRows } from "../components/paged-rows";
import { twoStep } from "../components/confirm-button";
import { RestrictionFields } from "../components/restriction-fields";
import { usageChart } from "../components/usage-chart";
import {
  GRANTABLE_ROLES,
  type KeyFilter,
  type KeyInfo,
  type KeyReport,
  type MintedKey,
  type Role,
  toGatehouseError,
  call,
} from "../ipc";
import { countText } from "../lib/usage-chart";
import { currentSite } from "../session";
import { formatTime, noSitePanel } from "./common";
import { grantsPanels } from "./keys-grants";
import { type Screen, panel, screenFrame } from "./screen";

const STATUS_TONE: Record<KeyInfo["status"], string> = {
  active: "ok",
  revoked: "error",
  expired: "muted",
};

/** Keys per page. */
const PAGE_SIZE = 50;

const FILTERS: readonly (readonly [KeyFilter, string])[] = [
  ["all", "All keys"],
  ["active", "Active"],
  ["expires_soon", "Expiring within 7 days"],
  ["expired", "Expired"],
  ["revoked", "Revoked"],
];

/** The status cell: the status, and a warning for an expired or expiring key. */
function statusCell(key: KeyReport): HTMLElement {
  const cell = h("td", {}, h("span", { class: "pill key-status", "data-tone": STATUS_TONE[key.status] }, key.status));
  if (key.warning === "expires_soon") {
    cell.append(
      " ",
      h("span", { class: "pill key-warning", "data-tone": "warn", title: "this key stops working within 7 days: roll it" }, "expires soon"),
    );
  } else if (key.warning === "expired") {
    cell.append(" ", h("span", { class: "pill key-warning", "data-tone": "error", title: "this key no longer works" }, "expired"));
  }
  return cell;
}

/**
 * The raw key, once: a copy button, the warning, and the Client config panel
 * for it. Leaving the screen drops it from the page for good.
 */
function shownOnce(minted: MintedKey, verb: string, onDone: () => void): HTMLElement {
  const done = h("button", { id: "minted-done", type: "button", class: "button button-small" }, "I stored it");
  done.addEventListener("click", onDone);
  const config = new ConfigPanel({ id: minted.info.id, label: minted.info.label, raw: minted.key });
  return h(
    "div",
    { id: "minted", class: "stack", "data-key-id": minted.info.id },
    h(
      "section",
      { class: "panel panel-secret" },
      h(
        "header",
        { class: "panel-header" },
        h("h2", {}, `Key ${verb}`),
        h("span", { class: "badge badge-warn" }, "shown once"),
      ),
      h(
        "p",
        { class: "secret-meta" },
        h("strong", {}, minted.info.label),
        ` · ${minted.info.roles.join(", ")} · expires ${formatTime(minted.info.expires_at, "never")}`,
      ),
      h(
        "p",
        { id: "minted-warning", class: "secret-warning" },
        "Copy this key now. It is shown only this once: Gatehouse stores only a hash of it and cannot show it again.",
      ),
      h(
        "div",
        { class: "secret-row" },
        h("code", { id: "minted-key", class: "secret mono" }, minted.key),
        copyButton("minted-copy", () => minted.key),
        done,
      ),
    ),
    config.element,
  );
}

function rolePicker(onChange: (roles: Role[]) => void): { element: HTMLElement; selected: () => Role[] } {
  const boxes = GRANTABLE_ROLES.map((role) =>
    h("input", { id: `mint-role-${role}`, type: "checkbox", value: role, checked: role === "viewer" }),
  );
  const selected = () => GRANTABLE_ROLES.filter((_, i) => boxes[i]?.checked === true);
  for (const box of boxes) {
    box.addEventListener("change", () => {
      onChange(selected());
    });
  }
  return {
    element: h(
      "div",
      { class: "checks", role: "group", "aria-label": "Roles" },
      ...boxes.map((box) => h("label", { class: "check" }, box, box.value)),
    ),
    selected,
  };
}

/** The key's reach in core's words (the lines `whoami` and `keys list` print). */
function reachCell(key: KeyReport): HTMLElement {
  return h(
    "td",
    { class: "key-reach", "data-restricted": String(key.reach.restricted) },
    h("ul", { class: "reach-words" }, ...key.reach.words.map((w) => h("li", {}, w))),
  );
}

/** Last call, counts over the day and week, the chart, and calls by tool. */
function usageCell(key: KeyReport): HTMLElement {
  const u = key.usage;
  const byTool =
    u.by_tool.length === 0
      ? null
      : h(
          "details",
          { class: "usage-tools" },
          h("summary", {}, "by tool"),
          // A list, not a table: the row is already a table's.
          h(
            "ul",
            { class: "usage-by-tool" },
            ...u.by_tool.map((t) =>
              h(
                "li",
                { "data-tool": t.tool, "data-week": t.week, "data-refused-week": t.refused_week },
                h("span", { class: "mono" }, t.tool),
                ` 24h ${String(t.day)} · 7d ${String(t.week)}`,
                t.refused_week > 0 ? ` (${String(t.refused_week)} refused)` : "",
              ),
            ),
          ),
        );
  return h(
    "td",
    { class: "key-usage", "data-calls-day": u.calls_day, "data-calls-week": u.calls_week, "data-refused-week": u.refused_week },
    usageChart(key.id, key.days),
    h(
      "div",
      { class: "usage-counts" },
      `24h: ${countText(u.calls_day, u.refused_day)} · 7d: ${countText(u.calls_week, u.refused_week)}`,
    ),
    u.last_call_at === null
      ? null
      : h("div", { class: "usage-last muted" }, `last ${formatTime(u.last_call_at)}${u.last_from ? ` from ${u.last_from}` : ""}`),
    byTool,
  );
}

/** API keys of the open site: list, mint, revoke, roll. */
export const keys: Screen = {
  id: "keys",
  title: "Keys",
  render() {
    const frame = (...body: HTMLElement[]) =>
      screenFrame(
        "API keys",
        [
          "Keys give an AI client a scoped identity on this site. A raw key is shown once, when it is minted. Applications that connect with OAuth (claude.ai, ChatGPT) are listed below the keys, with whom they act as.",
        ],
        ...body,
      );
    if (!currentSite()) return frame(noSitePanel());

    const once = h("div", { id: "once-slot" });
    const editSlot = h("div", { id: "restrict-slot" });
    const listStatus = h("div", { id: "keys-status", class: "result" });
    const tbody = h("tbody", { id: "keys-rows" });
    // A grant acting as a revoked key ends with it: revoking refreshes both lists.
    const grants = grantsPanels();

    const showMinted = (minted: MintedKey, verb: string) => {
      once.replaceChildren(
        shownOnce(minted, verb, () => {
          once.replaceChildren();
        }),
      );
      once.scrollIntoView({ block: "start" });
    };

    const actionError = (raw: unknown) => {
      listStatus.replaceChildren(errorView(toGatehouseError(raw)));
    };

    /** The restriction editor for `key`, above the list; saving goes through core's checks. */
    const openEditor = (key: KeyReport) => {
      const fields = new RestrictionFields("edit", key.form);
      void fields.loadTools(key.roles);
      const save = h("button", { id: "edit-save", type: "submit", class: "button button-primary" }, "Save restrictions");
      const cancel = h("button", { id: "edit-cancel", type: "button", class: "button" }, "Cancel");
      const result = h("div", { id: "edit-result", class: "result", "aria-live": "polite" });
      const form = h("form", { id: "edit-form", class: "stack", "data-key-id": key.id }, fields.element, h("div", { class: "toolbar" }, save, cancel));
      cancel.addEventListener("click", () => {
        editSlot.replaceChildren();
      });
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        result.replaceChildren();
        void whileBusy(save, "Saving…", () => call("restrict_key", { id: key.id, restrictions: fields.value() }))
          .then(() => {
            editSlot.replaceChildren();
            return refresh();
          })
          .catch((raw: unknown) => {
            result.replaceChildren(errorView(toGatehouseError(raw)));
          });
      });
      editSlot.replaceChildren(
        panel(`Restrictions of ${key.label} (${key.id})`, h("span", { class: "muted" }, `roles ${key.roles.join(", ")}`), form, result),
      );
      editSlot.scrollIntoView({ block: "start" });
    };

    const row = (key: KeyReport): HTMLTableRowElement => {
      const revoke = h("button", { type: "button", class: "button button-small button-danger", "data-action": "revoke" });
      const roll = h(
        "button",
        { type: "button", class: "button button-small", "data-action": "roll", "aria-label": `Roll key ${key.label} (${key.id})` },
        "Roll",
      );
      const rowError = h("div", { class: "row-error", "aria-live": "polite" });
      // Revoking is immediate and final: the first click only arms the button.
      const { disarm } = twoStep(
        revoke,
        { text: "Revoke", label: `Revoke key ${key.label} (${key.id})` },
        { text: "Confirm revoke", label: `Confirm revoke of key ${key.label} (${key.id})` },
        () => {
          void whileBusy(revoke, "Revoking…", () => call("revoke_key", { id: key.id }))
            .then(() => {
              // A config for a revoked key is useless: stop offering it.
              if (once.querySelector(`[data-key-id="${key.id}"]`)) once.replaceChildren();
              return Promise.all([refresh(), grants.refresh()]);
            })
            .catch((raw: unknown) => {
              // Back to a usable button, with the reason next to it.
              disarm();
              rowError.replaceChildren(errorView(toGatehouseError(raw)));
            });
        },
        () => {
          rowError.replaceChildren();
        },
      );
      roll.addEventListener("click", () => {
        rowError.replaceChildren();
        void whileBusy(roll, "Rolling…", () => call("roll_key", { id: key.id, grace: null }))
          .then((minted) => {
            showMinted(minted, "rolled: the old key keeps working for 24 hours");
            return refresh();
          })
          .catch((raw: unknown) => {
            rowError.replaceChildren(errorView(toGatehouseError(raw)));
          });
      });
      const edit = h(
        "button",
        { type: "button", class: "button button-small", "data-action": "edit", "aria-label": `Edit restrictions of key ${key.label} (${key.id})` },
        "Restrict",
      );
      edit.addEventListener("click", () => {
        openEditor(key);
      });
      const live = key.status === "active";
      return h(
        "tr",
        { "data-key-id": key.id, "data-status": key.status },
        h("td", { class: "mono nowrap" }, key.id),
        h("td", {}, key.label),
        h("td", {}, key.roles.join(", ")),
        statusCell(key),
        h("td", { class: "nowrap" }, formatTime(key.created_at)),
        h("td", { class: "nowrap" }, formatTime(key.expires_at, "never")),
        h("td", { class: "nowrap key-uses", "data-uses": key.uses }, String(key.uses)),
        h("td", { class: "nowrap" }, formatTime(key.last_used_at, "never")),
        reachCell(key),
        usageCell(key),
        h("td", { class: "row-actions" }, live ? edit : null, live ? roll : null, live ? revoke : null, rowError),
      );
    };

    const filter = h(
      "select",
      { id: "keys-filter", class: "input select" },
      ...FILTERS.map(([value, text]) => h("option", { value }, text)),
    );
    filter.addEventListener("change", () => {
      rows.reset();
      void refresh();
    });

    // The list comes whole (keys are few); the table shows a page of it.
    const rows = new PagedRows(tbody, "keys", "keys", row, PAGE_SIZE);

    const refresh = async (): Promise<void> => {
      try {
        const list = await call("key_overview", { filter: filter.value as KeyFilter });
        rows.set(list);
        tbody.dataset.filter = filter.value;
        listStatus.replaceChildren(
          list.length === 0
            ? h("p", { class: "muted" }, filter.value === "all" ? "No keys yet: mint one above." : "No keys match this filter.")
            : "",
        );
      } catch (raw) {
        actionError(raw);
      }
    };

    const label = h("input", {
      id: "mint-label",
      type: "text",
      class: "input",
      placeholder: "e.g. claude desktop (laptop)",
      autocomplete: "off",
    });
    const expires = h("input", {
      id: "mint-expires",
      type: "text",
      class: "input mono",
      placeholder: "never (or 30d, 12h, 2027-01-31T00:00:00Z)",
      autocomplete: "off",
      spellcheck: "false",
    });
    const restrictions = new RestrictionFields("mint", {
      tools: null,
      read_only: false,
      content: "",
      content_status: "any",
      rate: "",
      from: "",
    });
    const roles = rolePicker((picked) => void restrictions.loadTools(picked));
    void restrictions.loadTools(roles.selected());
    const submit = h("button", { id: "mint-submit", type: "submit", class: "button button-primary" }, "Mint key");
    const mintResult = h("div", { id: "mint-result", class: "result", "aria-live": "polite" });
    const form = h(
      "form",
      { id: "mint-form", class: "form-grid" },
      h("label", { for: "mint-label", class: "field-label" }, "Label"),
      label,
      h("span", { class: "field-label" }, "Roles"),
      roles.element,
      h("label", { for: "mint-expires", class: "field-label" }, "Expires in"),
      expires,
      h("span", {}),
      restrictions.element,
      h("span", {}),
      h("div", { class: "toolbar" }, submit),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      mintResult.replaceChildren();
      void whileBusy(submit, "Minting…", () =>
        call("mint_key", { label: label.value, roles: roles.selected(), expires: expires.value, restrictions: restrictions.value() }),
      )
        .then((minted) => {
          label.value = "";
          expires.value = "";
          showMinted(minted, "minted");
          return refresh();
        })
        .catch((raw: unknown) => {
          mintResult.replaceChildren(errorView(toGatehouseError(raw)));
        });
    });

    void refresh();
    return frame(
      panel("Mint a key", null, form, mintResult),
      once,
      editSlot,
      panel(
        "Keys",
        h(
          "div",
          { class: "field-pair" },
          h("span", { class: "muted" }, "secrets are never listed"),
          h("label", { for: "keys-filter", class: "field-label" }, "Show"),
          filter,
        ),
        h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { id: "keys-table", class: "table table-compact" },
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                ...["Id", "Label", "Roles", "Status", "Created", "Expires", "Uses", "Last used", "Reach", "Usage (7 days)", "Actions"].map((t) =>
                  h("th", { scope: "col" }, t),
                ),
              ),
            ),
            tbody,
          ),
        ),
        rows.bar.element,
        listStatus,
      ),
      ...grants.elements,
    );
  },
};
