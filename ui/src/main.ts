/**
 * The app shell: header, sidebar and the current screen, chosen by the URL
 * hash (`#/connections`) so a reload keeps the place. At start it returns to
 * the screen shown last and reopens the most recent site (both remembered
 * on the Rust side, in the app's config directory).
 */
import "./styles.css";
import { h, required } from "./dom";
import { errorView } from "./components/error-view";
import {
  type SiteSummary,
  toGatehouseError,
  call,
} from "./ipc";
import { approvals, startApprovalsBadge } from "./screens/approvals";
import { audit } from "./screens/audit";
import { actorPreview } from "./screens/actor-preview";
import { clientConfig } from "./screens/client-config";
import { backendText } from "./screens/common";
import { connections } from "./screens/connections";
import { keys } from "./screens/keys";
import { serve } from "./screens/serve";
import { overview } from "./screens/overview";
import { siteConfig } from "./screens/site-config";
import type { Screen } from "./screens/screen";
import { users } from "./screens/users";
import { onSiteChange, setCurrentSite } from "./session";

const SCREENS: readonly Screen[] = [overview, keys, approvals, users, siteConfig, audit, connections, actorPreview, clientConfig, serve];
const DEFAULT_SCREEN = overview;

const nav = required("nav");
const main = required("screen");
let leaving: AbortController | null = null;

function screenFromHash(): Screen {
  const id = location.hash.replace(/^#\/?/, "");
  return SCREENS.find((s) => s.id === id) ?? DEFAULT_SCREEN;
}

function renderNav(): void {
  nav.replaceChildren(
    ...SCREENS.map((s) =>
      h(
        "a",
        { id: `nav-${s.id}`, class: "nav-link", href: `#/${s.id}` },
        s.title,
        s === approvals ? h("span", { id: "nav-approvals-count", class: "badge badge-warn nav-count", hidden: true }) : null,
      ),
    ),
  );
}

function show(focus = false): void {
  const current = screenFromHash();
  for (const link of nav.querySelectorAll<HTMLAnchorElement>(".nav-link")) {
    if (link.id === `nav-${current.id}`) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  leaving?.abort();
  leaving = new AbortController();
  main.replaceChildren(current.render(leaving.signal));
  main.dataset.screen = current.id;
  if (focus) {
    // Keyboard users land on the new screen's heading, not back at the top.
    const heading = main.querySelector("h1");
    heading?.setAttribute("tabindex", "-1");
    heading?.focus();
  }
}

function remember(): void {
  call("remember_screen", { id: screenFromHash().id }).catch(() => {
    // Not remembering the screen is no reason to bother the user.
  });
}

function showSite(site: SiteSummary | null): void {
  const el = required("current-site");
  el.dataset.state = site ? (site.scratch ? "scratch" : "open") : "none";
  el.title = site?.path ?? "";
  if (!site) {
    el.replaceChildren("No site open");
    return;
  }
  el.replaceChildren(h("span", { id: "current-site-name" }, site.name));
  if (site.scratch) el.append(h("span", { class: "badge badge-warn" }, "scratch"));
  el.append(
    h("span", { id: "current-backend", class: "topbar-backend mono", "data-kind": site.backend.kind }, backendText(site.backend)),
  );
}

/** Returns to the last screen and reopens the most recent site. */
async function restore(): Promise<void> {
  if (!location.hash) {
    const id = await call("last_screen", {}).catch(() => null);
    if (id && SCREENS.some((s) => s.id === id)) history.replaceState(null, "", `#/${id}`);
  }
  show();
  const last = (await call("recent_sites", {}).catch(() => []))[0];
  if (!last) return;
  try {
    setCurrentSite(await call("open_site", { path: last.path }));
    show();
  } catch (raw) {
    // Say so where the site is chosen, with the reason.
    if (screenFromHash() !== overview) history.replaceState(null, "", `#/${overview.id}`);
    show();
    const err = toGatehouseError(raw);
    document.getElementById("site-result")?.replaceChildren(
      h("p", { class: "muted" }, `Could not reopen the last site, “${last.name}” (${last.path}):`),
      errorView(err),
    );
  }
}

async function showAppInfo(): Promise<void> {
  const version = required("core-version");
  try {
    const info = await call("app_info", {});
    required("app-name").textContent = info.name;
    version.textContent = info.version;
    required("build-commit").textContent = info.commit;
    required("about-version").textContent = info.version;
    required("about-commit").textContent = info.commit;
    required("about-license").textContent = info.license;
    const cli = required("about-cli");
    cli.textContent = info.cli ?? info.cli_error ?? "";
    cli.dataset.state = info.cli ? "found" : "missing";
  } catch (raw) {
    const err = toGatehouseError(raw);
    version.textContent = "unknown";
    version.title = `${err.code}: ${err.body.message}`;
  }
}

const about = required("about") as HTMLDialogElement;
required("about-button").addEventListener("click", () => {
  about.showModal();
});

renderNav();
onSiteChange(showSite);
window.addEventListener("hashchange", () => {
  show(true);
  remember();
});
void restore();
startApprovalsBadge();
void showAppInfo();

// When the first frame with the page painted (epoch ms), for the desktop bench's
// cold-start figure: WebKitGTK reports no paint timing entries.
requestAnimationFrame(() =>
  requestAnimationFrame(() => {
    document.documentElement.dataset.firstPaint = String(performance.timeOrigin + performance.now());
  }),
);
