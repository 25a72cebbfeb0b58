import { errorView, successView } from "../components/error-view";
import { copyButton } from "../components/copy-button";
import { h } from "../dom";
import { type KeyInfo, type RemoteConfig, type ServeStatus, call, toGatehouseError } from "../ipc";
import { listEntries, rateText } from "../lib/serve";
import { currentSite } from "../session";
import { noSitePanel } from "./common";
import { type Screen, code, panel, screenFrame } from "./screen";

/** How often the counters are read again while the panel is open. */
const POLL_MS = 1000;

function fact(label: string, value: HTMLElement | string): HTMLElement {
  return h("div", { class: "held-row" }, h("span", { class: "muted" }, label), " ", value);
}

function stat(id: string, label: string, value: string | number): HTMLElement {
  return h("div", { class: "serve-stat" }, h("span", { class: "muted" }, label), " ", h("strong", { id }, String(value)));
}

/** The running server's facts and counters. */
function statusView(status: ServeStatus): HTMLElement {
  const s = status.stats;
  const limited = s?.limited_keys ?? [];
  return h(
    "div",
    { id: "serve-status", "data-state": status.running ? "running" : "stopped" },
    fact("URL", h("span", {}, h("code", { id: "serve-url", class: "inline-code" }, status.url), " ", copyButton("serve-url-copy", () => status.url))),
    fact("State", h("span", { id: "serve-state" }, status.running ? `running (pid ${String(status.pid ?? "?")})` : `stopped: ${status.exit ?? ""}`)),
    fact("Host allowlist", h("span", { id: "serve-hosts-list", class: "mono" }, status.hosts.join(", "))),
    fact("Origin allowlist", h("span", { id: "serve-origins-list", class: "mono" }, status.origins.join(", "))),
    s
      ? h(
          "div",
          { id: "serve-stats", class: "serve-stats" },
          stat("serve-rate", "Requests", rateText(s.requests_per_second)),
          stat("serve-requests", "Total", s.requests),
          stat("serve-in-flight", "In flight", s.in_flight),
          stat("serve-errors", "Errors", s.errors),
          stat("serve-tool-errors", "Tool errors", s.calls_error),
          stat("serve-refused", "Refused calls", s.calls_refused),
          stat("serve-auth-failures", "Auth failures", s.auth_failures),
          stat("serve-rate-limited", "Rate limited", s.rate_limited),
        )
      : status.stats_error
        ? h("p", { id: "serve-stats-error", class: "muted" }, status.stats_error)
        : null,
    h("h3", {}, "Rate-limited keys"),
    limited.length === 0
      ? h("p", { id: "serve-limited-none", class: "muted" }, "No key has gone over its rate.")
      : h(
          "table",
          { id: "serve-limited-keys", class: "table" },
          h("thead", {}, h("tr", {}, h("th", {}, "Key"), h("th", {}, "Requests refused"))),
          h("tbody", {}, ...limited.map((k) => h("tr", { "data-key": k.key_id }, h("td", { class: "mono" }, k.key_id), h("td", {}, String(k.requests))))),
        ),
    h("h3", {}, "Server output"),
    h("pre", { id: "serve-stderr", class: "mono tail-text" }, status.stderr),
  );
}

/** One client's remote config, or why it has none. */
function configView(r: RemoteConfig): HTMLElement {
  const body = r.config
    ? r.config.snippets.map((snippet, i) =>
        h(
          "div",
          { class: "snippet" },
          h("p", { class: "muted" }, snippet.instructions),
          ...snippet.locations.map((l) => h("div", { class: "muted mono" }, `${l.scope}: ${l.path}`)),
          h("pre", { class: "mono snippet-text", "data-format": snippet.format }, snippet.text),
          copyButton(`serve-config-copy-${r.client}-${String(i)}`, () => snippet.text),
        ),
      )
    : [h("p", { class: "muted serve-config-unavailable" }, r.unavailable?.message ?? "", r.unavailable?.hint ? ` (${r.unavailable.hint})` : "")];
  return h(
    "details",
    { class: "serve-config", "data-client": r.client, "data-available": r.config ? "true" : "false" },
    h("summary", {}, r.client_name, r.config ? "" : " (no remote form)"),
    ...body,
  );
}

/** Starts and stops `gatehouse serve` for the open site, and shows what it does. */
export const serve: Screen = {
  id: "serve",
  title: "Serve",
  render(signal) {
    const frame = (...body: HTMLElement[]) =>
      screenFrame(
        "Serve",
        ["Runs ", code("gatehouse serve"), " for this site, for MCP clients that connect over HTTP. It stops when you stop it or close the app."],
        ...body,
      );
    if (!currentSite()) return frame(noSitePanel());

    const listen = h("input", { id: "serve-listen", class: "input mono", value: "127.0.0.1:8808", autocomplete: "off", spellcheck: false });
    const hosts = h("textarea", { id: "serve-hosts", class: "input mono", rows: 2, spellcheck: false, placeholder: "gatehouse.example.org" });
    const origins = h("textarea", { id: "serve-origins", class: "input mono", rows: 2, spellcheck: false, placeholder: "https://app.example.org" });
    const start = h("button", { id: "serve-start", type: "button", class: "button button-primary" }, "Start");
    const stop = h("button", { id: "serve-stop", type: "button", class: "button button-danger" }, "Stop");
    const result = h("div", { id: "serve-result", class: "result", "aria-live": "polite" });
    const live = h("div", { id: "serve-live" }, h("p", { id: "serve-none", class: "muted" }, "Not running."));
    const keySelect = h("select", { id: "serve-key", class: "input" }, h("option", { value: "" }, "public (no key)"));
    const configs = h("div", { id: "serve-configs" });
    let url: string | null = null;

    const setRunning = (running: boolean): void => {
      for (const input of [listen, hosts, origins]) input.disabled = running;
      start.disabled = running;
      stop.disabled = !running;
    };
    setRunning(false);

    const showConfigs = async (): Promise<void> => {
      if (!url) {
        configs.replaceChildren(h("p", { class: "muted" }, "Start the server to see each client's remote config."));
        return;
      }
      try {
        const all = await call("serve_client_configs", { url, key_id: keySelect.value || null });
        if (!signal.aborted) configs.replaceChildren(...all.map(configView));
      } catch (raw) {
        configs.replaceChildren(errorView(toGatehouseError(raw)));
      }
    };

    const show = (status: ServeStatus | null): void => {
      const running = status?.running ?? false;
      setRunning(running);
      live.replaceChildren(status ? statusView(status) : h("p", { id: "serve-none", class: "muted" }, "Not running."));
      const now = running && status ? status.url : null;
      if (now !== url) {
        url = now;
        void showConfigs();
      }
    };

    const refresh = async (): Promise<void> => {
      try {
        const status = await call("serve_status", {});
        if (!signal.aborted) show(status);
      } catch (raw) {
        if (!signal.aborted) result.replaceChildren(errorView(toGatehouseError(raw)));
      }
    };

    start.addEventListener("click", () => {
      start.disabled = true;
      result.replaceChildren(h("p", { class: "muted" }, "Starting…"));
      call("start_serve", { listen: listen.value, hosts: listEntries(hosts.value), origins: listEntries(origins.value) })
        .then((status) => {
          result.replaceChildren(successView("Serving", status.url));
          show(status);
        })
        .catch((raw: unknown) => {
          result.replaceChildren(errorView(toGatehouseError(raw)));
          setRunning(false);
        });
    });
    stop.addEventListener("click", () => {
      stop.disabled = true;
      call("stop_serve", {})
        .then((status) => {
          result.replaceChildren(successView("Stopped", status.exit ?? ""));
          show(status);
        })
        .catch((raw: unknown) => {
          result.replaceChildren(errorView(toGatehouseError(raw)));
        });
    });
    keySelect.addEventListener("change", () => void showConfigs());

    call("list_keys", {})
      .then((keys: KeyInfo[]) => {
        keySelect.append(...keys.filter((k) => k.status === "active").map((k) => h("option", { value: k.id }, `${k.label} (${k.id})`)));
      })
      .catch(() => {
        // The key list is a convenience; public configs still work.
      });

    const timer = setInterval(() => void refresh(), POLL_MS);
    signal.addEventListener("abort", () => {
      clearInterval(timer);
    });
    void refresh();
    void showConfigs();
    return frame(
      panel(
        "Server",
        null,
        h(
          "div",
          { class: "form-grid" },
          h("label", { for: "serve-listen", class: "field-label" }, "Listen on"),
          listen,
          h("label", { for: "serve-hosts", class: "field-label" }, "Extra Host names (one per line)"),
          hosts,
          h("label", { for: "serve-origins", class: "field-label" }, "Extra browser origins (one per line)"),
          origins,
          h("div", { class: "toolbar" }, start, stop),
        ),
        result,
        live,
      ),
      panel(
        "Client configs",
        h("label", { class: "check" }, "Key ", keySelect),
        h("p", { class: "muted" }, "A key is written in only right after it was minted in this window; otherwise each client reads it from GATEHOUSE_API_KEY."),
        configs,
      ),
    );
  },
};
