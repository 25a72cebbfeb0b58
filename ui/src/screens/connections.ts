import { whileBusy } from "../components/busy";
import { twoStep } from "../components/confirm-button";
import { PagedRows } from "../components/paged-rows";
import { askConsent, askToolApproval } from "../components/consent-dialog";
import { connectionDetail } from "../components/connection-detail";
import { connectionForm } from "../components/connection-form";
import "../styles/connections.css";
import { errorView } from "../components/error-view";
import { TailTabs } from "../components/tail-tabs";
import { h } from "../dom";
import {
  type ConnectionView,
  type ConsentRequest,
  type DefinitionForm,
  type LiveView,
  toGatehouseError,
  call,
} from "../ipc";
import { copyName } from "../lib/copy-name";
import { stateLabel } from "../lib/tools-change";
import { currentSite } from "../session";
import { noSitePanel } from "./common";
import { type Screen, code, panel, screenFrame } from "./screen";

const EMPTY_FORM: DefinitionForm = { name: "", command: "", args: [], env: [], timeout: "", max_rss: "", max_cpu: "" };

function serverText(live: LiveView | null): string {
  if (!live) return "—";
  const name = [live.server_name ?? "unnamed server", live.server_version].filter(Boolean).join(" ");
  return `${name} · ${live.protocol_version} · pid ${String(live.pid)}`;
}

/**
 * Starts `name`, asking first when the Rust side refuses for a reason the
 * admin can lift here: consent to a new or changed definition
 * (`CONSENT_REQUIRED`, with what to show), or approval of changed tools
 * (`CONNECTION_TOOLS_CHANGED`). False when the admin declined.
 */
async function connect(name: string): Promise<boolean> {
  for (;;) {
    try {
      await call("open_connection", { name });
      return true;
    } catch (raw) {
      const err = toGatehouseError(raw);
      if (err.code === "CONSENT_REQUIRED") {
        const req = err.body.detail as ConsentRequest;
        if (!(await askConsent(req))) return false;
        await call("grant_consent", { name, definition_sha256: req.definition_sha256 });
      } else if (err.code === "CONNECTION_TOOLS_CHANGED") {
        if (!(await askToolApproval(name, err.body))) return false;
        await call("approve_tools", { name });
      } else {
        throw err;
      }
    }
  }
}

/** Stored connections per page. */
const PAGE_SIZE = 50;

/**
 * The site's stored MCP servers: add, edit, duplicate, remove; start one
 * (after consent) and see its state, tools, calls and stderr tails.
 */
export const connections: Screen = {
  id: "connections",
  title: "Connections",
  render(signal) {
    const frame = (...body: HTMLElement[]) =>
      screenFrame(
        "Connections",
        ["MCP servers stored in this site, each started sandboxed after you agree to what it runs (also from the CLI: ", code("gatehouse connections add"), ")."],
        ...body,
      );
    if (!currentSite()) return frame(noSitePanel());

    const tails = new TailTabs();
    const rows = h("tbody", { id: "conn-rows" });
    /** The stored connections' names, as last listed (a duplicate's name avoids them). */
    let names = new Set<string>();
    const status = h("div", { id: "conn-status", class: "result" });
    const formSlot = h("div", { id: "conn-form-slot" });
    const detailSlot = h("div", { id: "conn-detail-slot" });
    let detailAbort: AbortController | null = null;
    let selected: string | null = null;
    signal.addEventListener("abort", () => {
      tails.stopAll();
      detailAbort?.abort();
    });

    /** A failure of the whole list (not of one row's action). */
    const fail = (raw: unknown) => {
      status.replaceChildren(errorView(toGatehouseError(raw)));
    };

    const showDetail = (name: string | null) => {
      detailAbort?.abort();
      selected = name;
      if (!name) {
        detailSlot.replaceChildren();
        return;
      }
      detailAbort = new AbortController();
      detailSlot.replaceChildren(connectionDetail(name, detailAbort.signal, () => void refresh()));
    };

    const edit = (original: string | null, initial: DefinitionForm) => {
      formSlot.replaceChildren(
        panel(
          original ? `Edit ${original}` : "Add a connection",
          null,
          connectionForm(
            original,
            initial,
            (name) => {
              formSlot.replaceChildren();
              status.replaceChildren(h("p", { class: "muted", role: "status" }, `Saved ${name}. It asks for consent at its next start.`));
              void refresh();
            },
            () => {
              formSlot.replaceChildren();
            },
          ),
        ),
      );
      formSlot.querySelector<HTMLInputElement>("#conn-form-name")?.focus();
    };

    // A row's failure stays under that row (also across a refresh) until its next action.
    const rowErrors = new Map<string, unknown>();
    /** A row button; its accessible name names the connection ("Connect docs"). */
    const button = (label: string, action: string, ariaLabel: string, primary = false) =>
      h(
        "button",
        { type: "button", class: `button button-small${primary ? " button-primary" : ""}`, "data-action": action, "aria-label": ariaLabel },
        label,
      );

    const row = (c: ConnectionView): HTMLTableRowElement => {
      const live = c.live;
      const pill = stateLabel(live);
      const running = live?.state === "connected";
      const rowError = h("div", { class: "row-error", "aria-live": "polite" });
      const stored = rowErrors.get(c.name);
      if (stored !== undefined) rowError.replaceChildren(errorView(toGatehouseError(stored)));
      const fail = (raw: unknown) => {
        rowErrors.set(c.name, raw);
        rowError.replaceChildren(errorView(toGatehouseError(raw)));
      };
      const clear = () => {
        rowErrors.delete(c.name);
        rowError.replaceChildren();
        status.replaceChildren();
      };
      const action = running
        ? button("Disconnect", "close", `Disconnect ${c.name}`)
        : button("Connect", "open", `Connect ${c.name}`, true);
      action.addEventListener("click", () => {
        clear();
        void whileBusy(action, running ? "Disconnecting…" : "Connecting…", () =>
          running ? call("close_connection", { name: c.name }).then(() => true) : connect(c.name),
        )
          .then(async (started) => {
            await refresh();
            if (!running && started) {
              tails.watch(c.name, () => void refresh());
              showDetail(c.name);
            } else if (selected === c.name) showDetail(c.name);
          })
          .catch(fail);
      });
      const view = button("stderr", "watch", `Show the stderr of ${c.name}`);
      view.addEventListener("click", () => {
        tails.watch(c.name, () => void refresh());
      });
      const details = button("Details", "details", `Details of ${c.name}`);
      details.addEventListener("click", () => {
        showDetail(c.name);
      });
      const editButton = button("Edit", "edit", `Edit ${c.name}`);
      editButton.addEventListener("click", () => {
        clear();
        void whileBusy(editButton, "Loading…", () => call("connection_form", { name: c.name }))
          .then((form) => {
            edit(c.name, form);
          })
          .catch(fail);
      });
      const dup = button("Duplicate", "duplicate", `Duplicate ${c.name}`);
      dup.addEventListener("click", () => {
        clear();
        void whileBusy(dup, "Duplicating…", async () => {
          const copy = await call("duplicate_connection", { name: c.name, new_name: copyName(c.name, names) });
          return { copy, form: await call("connection_form", { name: copy }) };
        })
          .then(async ({ copy, form }) => {
            await refresh();
            edit(copy, form);
          })
          .catch(fail);
      });
      const remove = h("button", { type: "button", class: "button button-small", "data-action": "remove" });
      // Removing is immediate and final: the first click only arms the button.
      const { disarm } = twoStep(
        remove,
        { text: "Remove", label: `Remove ${c.name}` },
        { text: "Confirm remove", label: `Confirm remove of ${c.name}` },
        () => {
          void whileBusy(remove, "Removing…", () => call("remove_connection", { name: c.name }))
            .then(() => {
              rowErrors.delete(c.name);
              tails.stop(c.name);
              if (selected === c.name) showDetail(null);
              return refresh();
            })
            .catch((raw: unknown) => {
              disarm();
              fail(raw);
            });
        },
        clear,
      );
      return h(
        "tr",
        { "data-connection": c.name, "data-state": live?.state ?? "idle", "data-hold": String(live?.on_hold ?? false), "aria-selected": selected === c.name },
        h("td", {}, h("div", { class: "conn-name" }, c.name), h("div", { class: "muted small" }, serverText(live))),
        h("td", { class: "mono small conn-command", title: [c.program, ...c.args].join(" ") }, [c.program, ...c.args].join(" ")),
        h("td", {}, h("span", { class: "pill conn-state", "data-tone": pill.tone }, pill.text)),
        h("td", { class: "row-actions" }, action, live ? view : null, live ? details : null, editButton, dup, remove, rowError),
      );
    };

    // The list comes whole; the table shows a page of it.
    const paged = new PagedRows(rows, "conn", "connections", row, PAGE_SIZE);

    const refresh = async (): Promise<void> => {
      try {
        const list = await call("list_connections", {});
        names = new Set(list.map((c) => c.name));
        paged.set(list);
        if (list.length === 0) {
          status.replaceChildren(h("p", { class: "muted" }, "No connections stored in this site yet: add one above."));
        }
      } catch (raw) {
        fail(raw);
      }
    };

    const add = h("button", { type: "button", id: "conn-add", class: "button button-small button-primary" }, "Add connection");
    add.addEventListener("click", () => {
      edit(null, EMPTY_FORM);
    });

    void refresh();
    return frame(
      formSlot,
      panel(
        "Stored connections",
        add,
        h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { id: "conn-table", class: "table table-compact" },
            h("thead", {}, h("tr", {}, ...["Name", "Command", "State", ""].map((t) => h("th", {}, t)))),
            rows,
          ),
        ),
        paged.bar.element,
        status,
      ),
      detailSlot,
      tails.element,
    );
  },
};
