import { errorView } from "../components/error-view";
import { h } from "../dom";
import { whileBusy } from "../components/busy";
import { twoStep } from "../components/confirm-button";
import { type GrantOverview, type GrantPrincipal, toGatehouseError, call } from "../ipc";
import { connectGuide } from "../components/connect-guide";
import { connectorUrl } from "../lib/serve";
import { countText } from "../lib/usage-chart";
import { formatTime } from "./common";
import { panel } from "./screen";

/** How a grant's actor reads in the table and the picker. */
export function principalText(p: GrantPrincipal): string {
  return p.kind === "key" ? `key ${p.id}` : `user ${p.id}`;
}

/** The picker's value for a principal, and back. */
function principalValue(p: GrantPrincipal): string {
  return `${p.kind}:${p.id}`;
}

function parsePrincipal(value: string): GrantPrincipal | null {
  const at = value.indexOf(":");
  const kind = value.slice(0, at);
  const id = value.slice(at + 1);
  if (kind === "key") return { kind: "key", id };
  if (kind === "user") return { kind: "user", id };
  return null;
}

function statusCell(g: GrantOverview): HTMLElement {
  if (g.revoked_at === null) return h("td", {}, h("span", { class: "pill grant-status", "data-tone": "ok" }, "active"));
  return h(
    "td",
    {},
    h("span", { class: "pill grant-status", "data-tone": "error", title: g.revoked_reason ?? "" }, "revoked"),
    g.revoked_reason ? h("div", { class: "muted" }, g.revoked_reason) : null,
  );
}

function usageCell(g: GrantOverview): HTMLElement {
  const u = g.usage;
  return h(
    "td",
    { class: "grant-usage", "data-calls-week": u.calls_week },
    `24h: ${countText(u.calls_day, u.refused_day)} · 7d: ${countText(u.calls_week, u.refused_week)}`,
    u.by_tool.length === 0
      ? null
      : h("div", { class: "muted" }, u.by_tool.map((t) => `${t.tool} ${String(t.week)}`).join(", ")),
  );
}

/**
 * The Keys screen's OAuth part: the grants applications hold (listed like
 * keys, revocable like keys) and the form that approves a pairing code a
 * consent page shows, choosing the key or user the application acts as.
 */
export function grantsPanels(): { elements: HTMLElement[]; refresh: () => Promise<void> } {
  const tbody = h("tbody", { id: "grants-rows" });
  const listStatus = h("div", { id: "grants-status", class: "result" });

  const row = (g: GrantOverview): HTMLTableRowElement => {
    const revoke = h("button", { type: "button", class: "button button-small button-danger", "data-action": "revoke-grant" });
    const rowError = h("div", { class: "row-error", "aria-live": "polite" });
    const name = `${g.client_name} (${g.id})`;
    const { disarm } = twoStep(
      revoke,
      { text: "Revoke", label: `Revoke grant ${name}` },
      { text: "Confirm revoke", label: `Confirm revoke of grant ${name}` },
      () => {
        void whileBusy(revoke, "Revoking…", () => call("revoke_oauth_grant", { id: g.id }))
          .then(() => refresh())
          .catch((raw: unknown) => {
            disarm();
            rowError.replaceChildren(errorView(toGatehouseError(raw)));
          });
      },
      () => {
        rowError.replaceChildren();
      },
    );
    const live = g.revoked_at === null;
    return h(
      "tr",
      { "data-grant-id": g.id, "data-status": live ? "active" : "revoked", "data-acts-as": principalValue(g.acts_as) },
      h("td", {}, h("div", {}, g.client_name), h("div", { class: "mono muted small" }, g.client_id)),
      h("td", { class: "mono" }, g.redirect_host),
      h("td", { class: "grant-actor" }, principalText(g.acts_as)),
      h("td", { class: "mono grant-scopes" }, g.scopes),
      h("td", { class: "nowrap" }, formatTime(g.created_at)),
      h("td", { class: "nowrap grant-last-used" }, formatTime(g.last_used_at, "never")),
      h("td", { class: "mono grant-from" }, g.usage.last_from ?? g.created_from ?? "—"),
      statusCell(g),
      usageCell(g),
      h("td", { class: "row-actions" }, live ? revoke : null, rowError),
    );
  };

  // The guide names the Serve panel's server when it runs with OAuth on.
  const guide = h("div", { id: "connect-guide-slot" }, connectGuide(null));
  let guideUrl: string | null = null;
  const refreshGuide = async (): Promise<void> => {
    try {
      const url = connectorUrl(await call("serve_status", {}));
      if (url !== guideUrl) {
        guideUrl = url;
        guide.replaceChildren(connectGuide(url));
      }
    } catch {
      // The guide's generic form still says what to do.
    }
  };

  const refresh = async (): Promise<void> => {
    void refreshGuide();
    try {
      const list = await call("oauth_grants", {});
      tbody.replaceChildren(...list.map(row));
      listStatus.replaceChildren(
        list.length === 0 ? h("p", { class: "muted" }, "No application has connected with OAuth yet.") : "",
      );
    } catch (raw) {
      listStatus.replaceChildren(errorView(toGatehouseError(raw)));
    }
  };

  // Pairing: the code from the consent page, and whom the application acts as.
  const code = h("input", {
    id: "pair-code",
    type: "text",
    class: "input mono",
    placeholder: "ABCD-EFGH",
    autocomplete: "off",
    spellcheck: "false",
  });
  const actor = h("select", { id: "pair-actor", class: "input select" });
  const submit = h("button", { id: "pair-lookup", type: "submit", class: "button button-primary" }, "Look up");
  const result = h("div", { id: "pair-result", class: "result", "aria-live": "polite" });
  const loadActors = async (): Promise<void> => {
    try {
      const [keys, users] = await Promise.all([call("list_keys", {}), call("list_users", {})]);
      const keyOptions = keys
        .filter((k) => k.status === "active")
        .map((k) => h("option", { value: principalValue({ kind: "key", id: k.id }) }, `key ${k.label} (${k.id}) · ${k.roles.join(", ")}`));
      const userOptions = users
        .filter((u) => u.disabled_at === null)
        .map((u) => h("option", { value: principalValue({ kind: "user", id: u.email }) }, `user ${u.email} · ${u.roles.join(", ")}`));
      actor.replaceChildren(
        h("optgroup", { label: "Act as a key" }, ...keyOptions),
        h("optgroup", { label: "Act as a user" }, ...userOptions),
      );
    } catch (raw) {
      result.replaceChildren(errorView(toGatehouseError(raw)));
    }
  };
  const form = h(
    "form",
    { id: "pair-form", class: "form-grid" },
    h("label", { for: "pair-code", class: "field-label" }, "Pairing code"),
    code,
    h("label", { for: "pair-actor", class: "field-label" }, "Acts as"),
    actor,
    h("span", {}),
    h("div", { class: "toolbar" }, submit),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    result.replaceChildren();
    const actsAs = parsePrincipal(actor.value);
    if (actsAs === null) {
      result.replaceChildren(h("p", { class: "muted" }, "Choose a key or a user first (mint a key or add a user if there is none)."));
      return;
    }
    // First what the code would let in: a code is only as trustworthy as
    // whoever passed it on, and the application's name and address say whose.
    const asked = code.value;
    void whileBusy(submit, "Looking up…", () => call("pairing_request", { code: asked, acts_as: actsAs }))
      .then((r) => {
        const confirm = h("button", { id: "pair-confirm", type: "button", class: "button button-primary" }, "Approve this application");
        const cancel = h("button", { id: "pair-cancel", type: "button", class: "button" }, "Cancel");
        cancel.addEventListener("click", () => {
          result.replaceChildren();
        });
        confirm.addEventListener("click", () => {
          approve(confirm, asked, actsAs);
        });
        result.replaceChildren(
          h(
            "div",
            { id: "pair-pending", "data-client-id": r.client_id },
            h("p", {}, `${r.client_name} (${r.client_id}), returning to ${r.redirect_uri}, asks for ${r.scopes} and would act as ${principalText(actsAs)}.`),
            h("p", { class: "muted" }, "Approve only an application you expect to connect."),
            h("div", { class: "toolbar" }, confirm, cancel),
          ),
        );
      })
      .catch((raw: unknown) => {
        result.replaceChildren(errorView(toGatehouseError(raw)));
      });
  });
  const approve = (button: HTMLButtonElement, asked: string, actsAs: GrantPrincipal): void => {
    void whileBusy(button, "Approving…", () => call("approve_pairing", { code: asked, acts_as: actsAs }))
      .then((a) => {
        code.value = "";
        result.replaceChildren(
          h(
            "p",
            { id: "pair-approved", "data-client-id": a.client_id },
            `Approved: ${a.client_name} (${a.redirect_uri}) may act as ${principalText(a.acts_as)} with ${a.scopes}. `,
            "Press Continue on the consent page to finish.",
          ),
        );
        return refresh();
      })
      .catch((raw: unknown) => {
        result.replaceChildren(errorView(toGatehouseError(raw)));
      });
  };

  // Grants appear when an application exchanges its code, not when the
  // page approves: the list is read again on demand.
  const reload = h("button", { id: "grants-refresh", type: "button", class: "button button-small" }, "Refresh");
  reload.addEventListener("click", () => {
    void whileBusy(reload, "Refreshing…", () => Promise.all([refresh(), loadActors()]));
  });

  void loadActors();
  void refresh();
  return {
    refresh,
    elements: [
      panel(
        "Approve a pairing code",
        h("span", { class: "muted" }, "from an OAuth consent page"),
        h(
          "p",
          { class: "muted" },
          "An application's consent page can show a short code instead of asking for a key. Type it here and choose whom the application acts as; the next step shows which application it is before you approve it. It never gets more than that key or user may do, narrowed to the scopes it asked for.",
        ),
        form,
        result,
      ),
      panel(
        "OAuth grants",
        h("div", { class: "field-pair" }, h("span", { class: "muted" }, "applications connected with OAuth; tokens are never listed"), reload),
        h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { id: "grants-table", class: "table table-compact" },
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                ...["Client", "Redirect host", "Acts as", "Scopes", "Created", "Last used", "From", "Status", "Calls", "Actions"].map((t) =>
                  h("th", { scope: "col" }, t),
                ),
              ),
            ),
            tbody,
          ),
        ),
        listStatus,
      ),
      guide,
    ],
  };
}
