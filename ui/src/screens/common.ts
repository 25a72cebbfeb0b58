import { h } from "../dom";
import type { BackendInfo } from "../ipc";
import { panel } from "./screen";

/** Shown by every screen that needs a site when none is open. */
export function noSitePanel(): HTMLElement {
  return panel(
    "No site open",
    null,
    h(
      "p",
      { id: "no-site", class: "muted" },
      "Open a site folder on the ",
      h("a", { href: "#/overview" }, "Overview"),
      " screen first.",
    ),
  );
}

const pad = (n: number) => String(n).padStart(2, "0");

/**
 * An RFC 3339 time from IPC for a table cell, local time, as
 * `2026-01-31 14:05` (short and sortable by eye); `none` when absent.
 */
export function formatTime(rfc3339: string | null, none = "—"): string {
  if (rfc3339 === null) return none;
  const d = new Date(rfc3339);
  const date = `${String(d.getFullYear())}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  return `${date} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** The header's and the Sites screen's name for where a site's data lives. */
export function backendText(backend: BackendInfo): string {
  return backend.kind === "sqlite" ? `SQLite ${backend.path}` : `PostgreSQL ${backend.url}`;
}
