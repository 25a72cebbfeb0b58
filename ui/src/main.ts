/**
 * The app shell: header, sidebar and the current screen, chosen by the URL
 * hash (`#/connections`) so a reload keeps the place.
 */
import "./styles.css";
import { h, required } from "./dom";
import { type SiteSummary, appInfo, toGatehouseError } from "./ipc";
import { actorPreview } from "./screens/actor-preview";
import { clientConfig } from "./screens/client-config";
import { connections } from "./screens/connections";
import { keys } from "./screens/keys";
import { overview } from "./screens/overview";
import type { Screen } from "./screens/screen";
import { onSiteChange } from "./session";

const SCREENS: readonly Screen[] = [overview, keys, connections, actorPreview, clientConfig];
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
    ...SCREENS.map((s) => h("a", { id: `nav-${s.id}`, class: "nav-link", href: `#/${s.id}` }, s.title)),
  );
}

function show(): void {
  const current = screenFromHash();
  for (const link of nav.querySelectorAll<HTMLAnchorElement>(".nav-link")) {
    if (link.id === `nav-${current.id}`) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  leaving?.abort();
  leaving = new AbortController();
  main.replaceChildren(current.render(leaving.signal));
  main.dataset.screen = current.id;
}

function showSite(site: SiteSummary | null): void {
  const el = required("current-site");
  el.dataset.state = site ? (site.scratch ? "scratch" : "open") : "none";
  el.title = site?.path ?? "";
  if (!site) {
    el.replaceChildren("No site open");
    return;
  }
  el.replaceChildren(h("span", {}, site.name));
  if (site.scratch) el.append(h("span", { class: "badge badge-warn" }, "scratch"));
}

async function showAppInfo(): Promise<void> {
  const version = required("core-version");
  try {
    const info = await appInfo();
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
show();
window.addEventListener("hashchange", show);
onSiteChange(showSite);
void showAppInfo();
