import type { AuditImport } from "../ipc";

/**
 * The audit report's line for a site made by `site import`: which entries
 * came in, when (`when`, already formatted), and what they were taken on. The
 * import appends nothing to the log, so this is the one place that says so.
 */
export function importedText(i: AuditImport, when: string): string {
  const on =
    i.trust === "this_machine"
      ? "signed by this machine's key"
      : i.trust === "trusted_key"
        ? `signed by key ${(i.signed_by ?? "").slice(0, 16)}…, trusted when imported`
        : "unsigned: taken on the importer's word";
  const which = i.upto_seq === 0 ? "No entries" : i.upto_seq === 1 ? "Entry 1" : `Entries 1–${String(i.upto_seq)}`;
  return `${which} came in by an import on ${when}, from an export ${on}.`;
}
