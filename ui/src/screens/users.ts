import { whileBusy } from "../components/busy";
import { errorView } from "../components/error-view";
import { PagedRows } from "../components/paged-rows";
import { h } from "../dom";
import {
  GRANTABLE_ROLES,
  type PermissionRow,
  type Role,
  type User,
  toGatehouseError,
  call,
} from "../ipc";
import { currentSite } from "../session";
import { formatTime, noSitePanel } from "./common";
import { type Screen, panel, screenFrame } from "./screen";

/** Users per page. */
const PAGE_SIZE = 50;

/** Every role, lowest first, for the permission table's columns. */
const ALL_ROLES: readonly Role[] = ["public", ...GRANTABLE_ROLES];

/** Checkboxes for the grantable roles; `prefix` keeps their ids unique. */
function roleChecks(prefix: string, groupLabel: string, checked: readonly Role[]) {
  const boxes = GRANTABLE_ROLES.map((role) =>
    h("input", { id: `${prefix}-${role}`, type: "checkbox", value: role, checked: checked.includes(role) }),
  );
  return {
    element: h(
      "div",
      { class: "checks", role: "group", "aria-label": groupLabel },
      ...boxes.map((box) => h("label", { class: "check" }, box, box.value)),
    ),
    selected: (): Role[] => GRANTABLE_ROLES.filter((_, i) => boxes[i]?.checked === true),
  };
}

/** Where a role's rank meets an action's lowest role. */
function permissionsTable(rows: PermissionRow[]): HTMLElement {
  const rank = (role: Role) => ALL_ROLES.indexOf(role);
  return h(
    "table",
    { id: "permissions-table", class: "table table-compact" },
    h(
      "thead",
      {},
      h("tr", {}, h("th", { scope: "col" }, "Action"), ...ALL_ROLES.map((r) => h("th", { scope: "col" }, r))),
    ),
    h(
      "tbody",
      {},
      ...rows.map((row) =>
        h(
          "tr",
          { "data-action": row.action },
          h("th", { scope: "row", class: "perm-action" }, h("code", { class: "inline-code" }, row.action), h("div", { class: "muted small" }, row.description)),
          ...ALL_ROLES.map((role) => {
            const yes = rank(role) >= rank(row.min_role);
            return h("td", { class: "perm-cell", "data-allowed": String(yes) }, yes ? "yes" : "–");
          }),
        ),
      ),
    ),
  );
}

/** Site users: list, create, change roles, disable; and what each role may do. */
export const users: Screen = {
  id: "users",
  title: "Users",
  render() {
    const frame = (...body: HTMLElement[]) =>
      screenFrame("Users", ["People with an account on this site. A disabled user keeps its history but can no longer act."], ...body);
    if (!currentSite()) return frame(noSitePanel());

    const tbody = h("tbody", { id: "users-rows" });
    const listStatus = h("div", { id: "users-status", class: "result", "aria-live": "polite" });

    const row = (user: User): HTMLTableRowElement => {
      const disabled = user.disabled_at !== null;
      const slug = user.email.replace(/[^a-zA-Z0-9]/g, "-");
      const roles = roleChecks(`user-${slug}-role`, `Roles of ${user.email}`, user.roles);
      const save = h(
        "button",
        { type: "button", class: "button button-small", "data-action": "save-roles", "aria-label": `Save the roles of ${user.email}` },
        "Save roles",
      );
      const toggle = h(
        "button",
        {
          type: "button",
          class: disabled ? "button button-small" : "button button-small button-danger",
          "data-action": disabled ? "enable" : "disable",
          "aria-label": `${disabled ? "Enable" : "Disable"} ${user.email}`,
        },
        disabled ? "Enable" : "Disable",
      );
      const rowError = h("div", { class: "row-error", "aria-live": "polite" });
      const fail = (raw: unknown) => { rowError.replaceChildren(errorView(toGatehouseError(raw))); };
      save.addEventListener("click", () => {
        rowError.replaceChildren();
        void whileBusy(save, "Saving…", () => call("set_user_roles", { email: user.email, roles: roles.selected() }))
          .then(() => refresh())
          .catch(fail);
      });
      toggle.addEventListener("click", () => {
        rowError.replaceChildren();
        void whileBusy(toggle, disabled ? "Enabling…" : "Disabling…", () => call("set_user_disabled", { email: user.email, disabled: !disabled }))
          .then(() => refresh())
          .catch(fail);
      });
      return h(
        "tr",
        { "data-email": user.email, "data-state": disabled ? "disabled" : "enabled" },
        h("td", { class: "user-email" }, user.email),
        h("td", {}, roles.element),
        h(
          "td",
          {},
          h("span", { class: "pill user-state", "data-tone": disabled ? "error" : "ok" }, disabled ? "disabled" : "enabled"),
        ),
        h("td", { class: "nowrap" }, formatTime(user.created_at)),
        h("td", { class: "row-actions" }, save, toggle, rowError),
      );
    };

    // The list comes whole; the table shows a page of it.
    const rows = new PagedRows(tbody, "users", "users", row, PAGE_SIZE);

    const refresh = async (): Promise<void> => {
      try {
        const list = await call("list_users", {});
        rows.set(list);
        listStatus.replaceChildren(list.length === 0 ? h("p", { class: "muted" }, "No users yet: create one above.") : "");
      } catch (raw) {
        listStatus.replaceChildren(errorView(toGatehouseError(raw)));
      }
    };

    const email = h("input", { id: "user-email", type: "email", class: "input", placeholder: "name@example.com", autocomplete: "off" });
    const roles = roleChecks("user-role", "Roles", ["viewer"]);
    const submit = h("button", { id: "user-create", type: "submit", class: "button button-primary" }, "Create user");
    const result = h("div", { id: "user-result", class: "result", "aria-live": "polite" });
    const form = h(
      "form",
      { id: "user-form", class: "form-grid" },
      h("label", { for: "user-email", class: "field-label" }, "Email"),
      email,
      h("span", { class: "field-label" }, "Roles"),
      roles.element,
      h("span", {}),
      h("div", { class: "toolbar" }, submit),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      result.replaceChildren();
      void whileBusy(submit, "Creating…", () => call("create_user", { email: email.value, roles: roles.selected() }))
        .then(() => {
          email.value = "";
          return refresh();
        })
        .catch((raw: unknown) => {
          // Next to the form that caused it.
          result.replaceChildren(errorView(toGatehouseError(raw)));
          email.focus();
        });
    });

    const perms = h("div", { id: "permissions", class: "table-wrap" }, h("p", { class: "muted" }, "Loading…"));
    void call("permission_table", {})
      .then((rows) => { perms.replaceChildren(permissionsTable(rows)); })
      .catch((raw: unknown) => { perms.replaceChildren(errorView(toGatehouseError(raw))); });

    void refresh();
    return frame(
      panel("Create a user", null, form, result),
      panel(
        "Users",
        null,
        h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { id: "users-table", class: "table table-compact" },
            h("thead", {}, h("tr", {}, ...["Email", "Roles", "State", "Created", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
            tbody,
          ),
        ),
        rows.bar.element,
        listStatus,
      ),
      panel("What each role may do", h("span", { class: "muted" }, "from core's permission table"), perms),
    );
  },
};
