import { errorView } from "../components/error-view";
import { TailPanel } from "../components/tail-panel";
import { h } from "../dom";
import {
  type ConnectionView,
  type LiveView,
  closeConnection,
  listConnections,
  openConnection,
  toGatehouseError,
  watchStderr,
} from "../ipc";
import { currentSite } from "../session";
import { noSitePanel } from "./common";
import { type Screen, code, panel, screenFrame } from "./screen";

const STATE_TONE: Record<LiveView["state"], string> = {
  connected: "ok",
  exited: "error",
  closed: "muted",
};

function exitText(live: LiveView): string {
  if (!live.exit) return live.state;
  if (live.exit.signal !== null) return `${live.state}: signal ${String(live.exit.signal)}`;
  return `${live.state}: exit ${String(live.exit.code)}`;
}

function serverText(live: LiveView | null): string {
  if (!live) return "—";
  const name = [live.server_name ?? "unnamed server", live.server_version].filter(Boolean).join(" ");
  return `${name} · ${live.protocol_version} · pid ${String(live.pid)}`;
}

/** The site's stored MCP servers, started from here, each with its live stderr. */
export const connections: Screen = {
  id: "connections",
  title: "Connections",
  render(signal) {
    const frame = (...body: HTMLElement[]) =>
      screenFrame(
        "Connections",
        [
          "MCP servers stored in this site (add them with ",
          code("gatehouse connections add"),
          "), with each server's stderr as it happens.",
        ],
        ...body,
      );
    if (!currentSite()) return frame(noSitePanel());

    const tail = new TailPanel("stderr");
    const rows = h("tbody", { id: "conn-rows" });
    const status = h("div", { id: "conn-status", class: "result" });
    let watching: string | null = null;
    /** Messages of a stream the page stopped showing are dropped here. */
    let watchToken = 0;

    const fail = (raw: unknown) => {
      status.replaceChildren(errorView(toGatehouseError(raw)));
    };

    const watch = (name: string) => {
      const token = ++watchToken;
      watching = name;
      tail.reset(`stderr · ${name}`);
      for (const row of rows.querySelectorAll("tr")) row.toggleAttribute("aria-selected", row.dataset.connection === name);
      watchStderr(name, (message) => {
        if (token === watchToken && !signal.aborted) tail.push(message);
      })
        .then(() => (token === watchToken ? refresh() : undefined))
        .catch((raw: unknown) => {
          if (token === watchToken) tail.fail(toGatehouseError(raw).message);
        });
    };

    const row = (c: ConnectionView): HTMLTableRowElement => {
      const live = c.live;
      const running = live?.state === "connected";
      const action = running
        ? h("button", { type: "button", class: "button button-small", "data-action": "close" }, "Disconnect")
        : h("button", { type: "button", class: "button button-small button-primary", "data-action": "open" }, "Connect");
      action.addEventListener("click", () => {
        action.disabled = true;
        status.replaceChildren();
        const done = running ? closeConnection(c.name) : openConnection(c.name);
        done
          .then(async () => {
            await refresh();
            if (!running) watch(c.name);
          })
          .catch(fail)
          .finally(() => {
            action.disabled = false;
          });
      });
      const view = h("button", { type: "button", class: "button button-small", "data-action": "watch" }, "stderr");
      view.addEventListener("click", () => {
        watch(c.name);
      });
      return h(
        "tr",
        {
          "data-connection": c.name,
          "data-state": live?.state ?? "idle",
          "aria-selected": watching === c.name,
        },
        h("td", {}, h("div", { class: "conn-name" }, c.name), h("div", { class: "muted small" }, serverText(live))),
        h("td", { class: "mono small conn-command", title: [c.program, ...c.args].join(" ") }, [c.program, ...c.args].join(" ")),
        h(
          "td",
          {},
          h(
            "span",
            { class: "pill conn-state", "data-tone": live ? STATE_TONE[live.state] : "muted" },
            live ? exitText(live) : "not started",
          ),
        ),
        h("td", { class: "row-actions" }, action, live ? view : null),
      );
    };

    const refresh = async (): Promise<void> => {
      try {
        const list = await listConnections();
        rows.replaceChildren(...list.map(row));
        if (list.length === 0) {
          status.replaceChildren(
            h("p", { class: "muted" }, "No connections stored in this site yet: add one with ", code("gatehouse connections add"), "."),
          );
        }
      } catch (raw) {
        fail(raw);
      }
    };

    void refresh();
    return frame(
      panel(
        "Stored connections",
        null,
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
        status,
      ),
      tail.element,
    );
  },
};
