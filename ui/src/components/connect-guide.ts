import { h } from "../dom";
import { copyButton } from "./copy-button";

/**
 * Which URL to paste into claude.ai, Claude Desktop or ChatGPT, and what
 * happens next. `url` is the running server's connector URL (its public URL
 * followed by `/mcp`) when the Serve panel runs it with OAuth on; otherwise
 * the guide says how to get one.
 */
export function connectGuide(url: string | null): HTMLElement {
  const step = (...children: (string | HTMLElement)[]) => h("li", {}, ...children);
  const code = (text: string) => h("code", { class: "mono" }, text);
  const intro = url
    ? h(
        "p",
        { id: "connect-guide-running" },
        "These apps cannot send a pasted key: they connect with OAuth, and the site decides whom they act as. The Serve panel runs this site with OAuth on.",
      )
    : h(
        "div",
        {},
        h(
          "p",
          {},
          "These apps cannot send a pasted key: they connect with OAuth, and the site decides whom they act as. The site must be served at a public HTTPS address (directly with TLS, or behind a proxy) with OAuth on: start it from the Serve panel with a public URL, or by hand:",
        ),
        h(
          "pre",
          { class: "mono" },
          "gatehouse --site ./my-site serve --listen 127.0.0.1:8808 --behind-proxy 127.0.0.1 \\\n    --public-url https://mcp.example.org",
        ),
      );
  return h(
    "details",
    { id: "connect-guide", class: "panel guide", "data-oauth": url ? "on" : "off" },
    h("summary", {}, h("strong", {}, "Connect claude.ai, Claude Desktop or ChatGPT")),
    intro,
    h(
      "ol",
      {},
      url
        ? step("Paste this URL: ", h("code", { id: "connect-guide-url", class: "mono" }, url), " ", copyButton("connect-guide-url-copy", () => url))
        : step("The URL to paste is the public URL followed by ", code("/mcp"), ", e.g. ", code("https://mcp.example.org/mcp"), "."),
      step(
        h("strong", {}, "claude.ai and Claude Desktop: "),
        "Settings → Connectors → Add custom connector, paste the URL, then Connect. A browser tab opens Gatehouse's consent page.",
      ),
      step(
        h("strong", {}, "ChatGPT (developer mode): "),
        "add an MCP server with the URL and authentication OAuth. ChatGPT registers itself and opens the same consent page.",
      ),
      step(
        "The consent page names the app, where its answer goes, and the scopes it asks for in words. Either paste a key (the app acts as that key, never more), or press \u201cAsk an admin to approve\u201d: the page shows a code; approve it on the Keys screen, choosing the key or user the app acts as, then press Continue on the page.",
      ),
      step("The app appears under OAuth grants on the Keys screen, with its last use. Revoke it there (or revoke the key it acts as) to end it at once."),
    ),
  );
}
