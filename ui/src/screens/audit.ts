import { whileBusy } from "../components/busy";
import { errorView, successView } from "../components/error-view";
import { PagerBar } from "../components/pager-bar";
import { importedText } from "../lib/audit-import";
import { h } from "../dom";
import {
  type AuditEntry,
  type AuditFilter,
  type AuditReport,
  toGatehouseError,
  call,
} from "../ipc";
import { Pager } from "../paging";
import { currentSite } from "../session";
import { formatTime, noSitePanel } from "./common";
import { type Screen, panel, screenFrame } from "./screen";

const PAGE_SIZE = 50;

/** A `datetime-local` value (local time) as RFC 3339 UTC; empty stays empty. */
export function localToRfc3339(value: string): string {
  if (!value) return "";
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? value : d.toISOString();
}

function entryRow(e: AuditEntry): HTMLTableRowElement {
  const detail = JSON.stringify(e.detail);
  return h(
    "tr",
    { "data-seq": e.seq },
    h("td", { class: "mono nowrap" }, String(e.seq)),
    h("td", { class: "nowrap" }, formatTime(e.ts)),
    h("td", { class: "mono" }, e.actor),
    h("td", { class: "mono" }, e.action),
    h("td", { class: "mono audit-subject" }, e.subject),
    h("td", { class: "mono audit-detail", title: detail }, detail === "{}" ? "" : detail),
  );
}

function reportView(report: AuditReport): HTMLElement {
  if (report.ok) {
    const anchored =
      report.anchored_at !== undefined ? `, matching the signed checkpoint at entry ${String(report.anchored_at)}` : "";
    const view = successView(`Chain intact: ${String(report.entries)} entries${anchored}`);
    for (const imported of report.imported) {
      const line = importedText(imported, formatTime(imported.imported_at));
      view.append(h("div", { class: "notice-hint", "data-imported": imported.trust }, line));
    }
    return view;
  }
  return h(
    "div",
    { class: "notice notice-error", role: "alert", "data-code": "AUDIT_CHAIN_BROKEN", "data-first-bad": report.first_bad_seq ?? "" },
    h("div", { class: "notice-title" }, `Chain broken at entry ${String(report.first_bad_seq ?? "?")}`),
    h("div", { class: "notice-hint" }, report.problem ?? ""),
    h("div", { class: "notice-hint" }, "Restore the database from a backup; the entries before this one are intact."),
    h("code", { class: "error-code" }, "AUDIT_CHAIN_BROKEN"),
  );
}

/** The audit log: filtered pages newest first, chain verification, export. */
export const audit: Screen = {
  id: "audit",
  title: "Audit",
  render() {
    const frame = (...body: HTMLElement[]) =>
      screenFrame("Audit log", ["Every change and every call, hash-chained: an edited, removed or reordered entry breaks the chain."], ...body);
    if (!currentSite()) return frame(noSitePanel());

    const pager = new Pager(PAGE_SIZE);
    const field = (id: string, label: string, type: string, placeholder: string) => {
      const input = h("input", { id, type, class: "input", placeholder, autocomplete: "off", spellcheck: "false" });
      return { input, row: [h("label", { for: id, class: "field-label" }, label), input] };
    };
    const actor = field("audit-actor", "Actor starts with", "text", "e.g. key: or user:ada@example.com");
    const action = field("audit-action", "Action starts with", "text", "e.g. key. or tool.");
    const since = field("audit-since", "From", "datetime-local", "");
    const until = field("audit-until", "To", "datetime-local", "");
    const apply = h("button", { id: "audit-apply", type: "submit", class: "button button-primary" }, "Apply filter");
    const filterResult = h("div", { id: "audit-filter-result", class: "result", "aria-live": "polite" });
    const filterForm = h(
      "form",
      { id: "audit-filter", class: "form-grid" },
      ...actor.row,
      ...action.row,
      ...since.row,
      ...until.row,
      h("span", {}),
      h("div", { class: "toolbar" }, apply),
    );
    const filter = (): AuditFilter => ({
      actor: actor.input.value,
      action: action.input.value,
      since: localToRfc3339(since.input.value),
      until: localToRfc3339(until.input.value),
    });

    const tbody = h("tbody", { id: "audit-rows" });
    const bar = new PagerBar(
      pager,
      { ids: { label: "audit-page-label", back: "audit-newer", forward: "audit-older" }, back: "Newer", forward: "Older", noun: "entries" },
      (trigger) => void load(trigger),
    );

    let loading = 0;
    const load = async (trigger: HTMLButtonElement) => {
      const mine = ++loading;
      filterResult.replaceChildren();
      try {
        const page = await whileBusy(trigger, "Loading…", () => call("audit_page", { filter: filter(), before_seq: pager.cursor, limit: pager.size }));
        if (mine !== loading) return;
        pager.loaded({ count: page.entries.length, total: page.total, nextBefore: page.next_before });
        tbody.replaceChildren(...page.entries.map(entryRow));
        tbody.dataset.page = String(pager.index);
        bar.update();
      } catch (raw) {
        if (mine !== loading) return;
        pager.loaded({ count: 0, total: 0, nextBefore: null });
        tbody.replaceChildren();
        bar.update("");
        filterResult.replaceChildren(errorView(toGatehouseError(raw)));
      } finally {
        // A superseded load's button came back enabled: disable what the newer page cannot do.
        if (mine !== loading) bar.update();
      }
    };
    filterForm.addEventListener("submit", (event) => {
      event.preventDefault();
      pager.reset();
      void load(apply);
    });

    // ---- verify ----
    const verify = h("button", { id: "audit-verify", type: "button", class: "button button-primary" }, "Verify chain");
    const verifyResult = h("div", { id: "audit-verify-result", class: "result", "aria-live": "polite" });
    verify.addEventListener("click", () => {
      verifyResult.replaceChildren();
      void whileBusy(verify, "Verifying…", () => call("verify_audit", {}))
        .then((report) => { verifyResult.replaceChildren(reportView(report)); })
        .catch((raw: unknown) => { verifyResult.replaceChildren(errorView(toGatehouseError(raw))); });
    });

    // ---- export ----
    const dir = h("input", { id: "audit-export-dir", type: "text", class: "input mono", placeholder: "/path/to/folder", spellcheck: "false", autocomplete: "off" });
    const choose = h("button", { id: "audit-export-choose", type: "button", class: "button", "aria-label": "Choose the export folder" }, "Choose folder…");
    choose.addEventListener("click", () => {
      void call("pick_folder", { title: "Export the audit log into" })
        .then((path) => {
          if (path !== null) dir.value = path;
          dir.focus();
        })
        .catch(() => { dir.focus(); });
    });
    const exportButton = h("button", { id: "audit-export", type: "submit", class: "button" }, "Export JSON");
    const exportResult = h("div", { id: "audit-export-result", class: "result", "aria-live": "polite" });
    const exportForm = h(
      "form",
      { class: "field-row" },
      h("label", { for: "audit-export-dir", class: "field-label" }, "Export folder"),
      dir,
      choose,
      exportButton,
    );
    exportForm.addEventListener("submit", (event) => {
      event.preventDefault();
      exportResult.replaceChildren();
      void whileBusy(exportButton, "Exporting…", () => call("export_audit", { filter: filter(), dir: dir.value }))
        .then((done) => { exportResult.replaceChildren(successView(`Exported ${String(done.entries)} entries (the current filter)`, done.path)); },
        )
        .catch((raw: unknown) => { exportResult.replaceChildren(errorView(toGatehouseError(raw))); });
    });

    void load(apply);
    return frame(
      panel("Integrity", null, h("div", { class: "toolbar" }, verify), verifyResult),
      panel("Filter", null, filterForm, filterResult),
      panel(
        "Entries",
        bar.element,
        h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { id: "audit-table", class: "table table-compact" },
            h("thead", {}, h("tr", {}, ...["#", "Time", "Actor", "Action", "Subject", "Detail"].map((t) => h("th", { scope: "col" }, t)))),
            tbody,
          ),
        ),
      ),
      panel("Export", h("span", { class: "muted" }, "the entries matching the filter, with their hashes"), exportForm, exportResult),
    );
  },
};
