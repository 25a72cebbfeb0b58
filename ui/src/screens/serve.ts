import { errorView, successView } from "../components/error-view";
import { connectGuide } from "../components/connect-guide";
import { copyButton } from "../components/copy-button";
import { h } from "../dom";
import { type KeyInfo, type RemoteConfig, type ServeStatus, call, toGatehouseError } from "../ipc";
import { type ServeForm, connectorUrl, formOf, rateText, settingsOf } from "../lib/serve";
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
    fact(
      "OAuth",
      status.oauth_issuer
        ? h("span", { id: "serve-oauth", "data-oauth": "on" }, "on, issuer ", h("code", { id: "serve-oauth-issuer", class: "inline-code" }, status.oauth_issuer))
        : h("span", { id: "serve-oauth", "data-oauth": "off" }, "off: give a public URL to let claude.ai, Claude Desktop and ChatGPT connect"),
    ),
    status.oauth_issuer
      ? fact(
          "Paste into claude.ai / ChatGPT",
          h("span", {}, h("code", { id: "serve-connector-url", class: "inline-code" }, status.url), " ", copyButton("serve-connector-url-copy", () => status.url)),
        )
      : null,
    fact(
      "Transport",
      h(
        "span",
        { id: "serve-transport" },
        status.settings.tls_cert ? "TLS" : status.settings.behind_proxy.length > 0 ? `behind proxy ${status.settings.behind_proxy.join(", ")}` : "plain HTTP",
      ),
    ),
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

    const input = (id: string, placeholder: string) =>
      h("input", { id, class: "input mono", autocomplete: "off", spellcheck: false, placeholder });
    const listen = input("serve-listen", "127.0.0.1:8808");
    listen.value = "127.0.0.1:8808";
    const hosts = h("textarea", { id: "serve-hosts", class: "input mono", rows: 2, spellcheck: false, placeholder: "gatehouse.example.org" });
    const origins = h("textarea", { id: "serve-origins", class: "input mono", rows: 2, spellcheck: false, placeholder: "https://app.example.org" });
    const publicUrl = input("serve-public-url", "https://mcp.example.org");
    const tlsCert = input("serve-tls-cert", "/etc/gatehouse/cert.pem");
    const tlsKey = input("serve-tls-key", "/etc/gatehouse/key.pem");
    const proxies = h("textarea", { id: "serve-proxies", class: "input mono", rows: 1, spellcheck: false, placeholder: "127.0.0.1" });
    const requireKey = h("input", { id: "serve-require-key", type: "checkbox" });
    const fields = { listen, hosts, origins, publicUrl, tlsCert, tlsKey, proxies };
    const readForm = (): ServeForm => ({
      listen: listen.value,
      hosts: hosts.value,
      origins: origins.value,
      publicUrl: publicUrl.value,
      tlsCert: tlsCert.value,
      tlsKey: tlsKey.value,
      proxies: proxies.value,
      requireKey: requireKey.checked,
    });
    const fillForm = (form: ServeForm): void => {
      for (const [name, field] of Object.entries(fields)) field.value = form[name as keyof typeof fields];
      requireKey.checked = form.requireKey;
    };
    /** Whether the form was filled from a running server (once, when the panel opens). */
    let filled = false;
    /** Whether the admin has touched the form: the saved settings then arrive too late to replace it. */
    let touched = false;
    for (const field of [...Object.values(fields), requireKey]) {
      for (const event of ["focus", "input", "change"]) {
        field.addEventListener(event, () => {
          touched = true;
        });
      }
    }
    const start = h("button", { id: "serve-start", type: "button", class: "button button-primary" }, "Start");
    const save = h("button", { id: "serve-save", type: "button", class: "button" }, "Save");
    const stop = h("button", { id: "serve-stop", type: "button", class: "button button-danger" }, "Stop");
    const result = h("div", { id: "serve-result", class: "result", "aria-live": "polite" });
    // "Not running." appears once the saved settings and the server's state are read.
    const live = h("div", { id: "serve-live" });
    const keySelect = h("select", { id: "serve-key", class: "input" }, h("option", { value: "" }, "public (no key)"));
    const configs = h("div", { id: "serve-configs" });
    const guide = h("div", { id: "serve-guide" }, connectGuide(null));
    let url: string | null = null;
    let guideUrl: string | null = null;
    // How the server stopped from this panel ended, kept in view until the next
    // start: the backend forgets a stopped server, and the next poll (within a
    // second) would otherwise replace "stopped: exit status 0" with "Not running."
    let stopped: ServeStatus | null = null;

    const setRunning = (running: boolean): void => {
      for (const field of Object.values(fields)) field.disabled = running;
      requireKey.disabled = running;
      start.disabled = running;
      save.disabled = running;
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
      if (running && status && !filled) {
        // The panel opened on a server already running: show its settings.
        fillForm(formOf(status.settings));
      }
      filled = true;
      setRunning(running);
      const connector = connectorUrl(status);
      if (connector !== guideUrl) {
        guideUrl = connector;
        guide.replaceChildren(connectGuide(connector));
      }
      const shown = status ?? stopped;
      live.replaceChildren(shown ? statusView(shown) : h("p", { id: "serve-none", class: "muted" }, "Not running."));
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
        if (signal.aborted) return;
        result.replaceChildren(errorView(toGatehouseError(raw)));
        if (live.childElementCount === 0) live.replaceChildren(h("p", { id: "serve-none", class: "muted" }, "Not running."));
      }
    };

    /** Opens on the settings kept in gatehouse.toml, unless a server runs (then its own) or the admin typed first. */
    const opening = async (): Promise<void> => {
      try {
        const saved = await call("serve_saved_settings", {});
        if (!signal.aborted && !touched) fillForm(formOf(saved));
      } catch (raw) {
        if (!signal.aborted) result.replaceChildren(errorView(toGatehouseError(raw)));
      }
      await refresh();
    };

    start.addEventListener("click", () => {
      start.disabled = true;
      save.disabled = true;
      result.replaceChildren(h("p", { class: "muted" }, "Starting…"));
      call("start_serve", { settings: settingsOf(readForm()) })
        .then((status) => {
          stopped = null;
          result.replaceChildren(successView("Serving, settings saved", status.url));
          show(status);
        })
        .catch((raw: unknown) => {
          result.replaceChildren(errorView(toGatehouseError(raw)));
          setRunning(false);
        });
    });
    save.addEventListener("click", () => {
      save.disabled = true;
      call("save_serve_settings", { settings: settingsOf(readForm()) })
        .then((saved) => {
          fillForm(formOf(saved));
          result.replaceChildren(successView("Saved", "[serve] in gatehouse.toml: the defaults of this panel and of gatehouse serve"));
        })
        .catch((raw: unknown) => {
          result.replaceChildren(errorView(toGatehouseError(raw)));
        })
        .finally(() => {
          save.disabled = start.disabled;
        });
    });
    stop.addEventListener("click", () => {
      stop.disabled = true;
      call("stop_serve", {})
        .then((status) => {
          stopped = status;
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
    void opening();
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
          h("label", { for: "serve-public-url", class: "field-label" }, "Public URL (--public-url)"),
          publicUrl,
          h("label", { for: "serve-tls-cert", class: "field-label" }, "TLS certificate, PEM (--tls-cert)"),
          tlsCert,
          h("label", { for: "serve-tls-key", class: "field-label" }, "TLS private key, PEM (--tls-key)"),
          tlsKey,
          h("label", { for: "serve-proxies", class: "field-label" }, "Proxies in front (--behind-proxy)"),
          proxies,
          h("span", { class: "field-label" }, "Keys (--require-key)"),
          h("label", { class: "check" }, requireKey, " Refuse requests without a key"),
          h(
            "p",
            { class: "muted form-note" },
            "A public URL turns on OAuth, so claude.ai, Claude Desktop and ChatGPT can connect; it is https, or http for a loopback address only. Beyond loopback, serve needs TLS files or the address of the TLS-terminating proxy in front. Start and Save keep these settings in [serve] of the site's gatehouse.toml, where gatehouse serve reads them too.",
          ),
          h("div", { class: "toolbar" }, start, save, stop),
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
      guide,
    );
  },
};
