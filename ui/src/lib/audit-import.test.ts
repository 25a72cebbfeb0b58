import { describe, expect, it } from "vitest";
import { importedText } from "./audit-import";

describe("importedText", () => {
  const at = "2026-12-06T14:00:00.000Z";

  it("says an unsigned import was taken on the importer's word", () => {
    expect(importedText({ upto_seq: 6, imported_at: at, trust: "unsigned" }, "2026-12-06 14:00")).toBe(
      "Entries 1–6 came in by an import on 2026-12-06 14:00, from an export unsigned: taken on the importer's word.",
    );
  });

  it("names the start of a trusted key, and this machine's without one", () => {
    const key = "ab".repeat(32);
    expect(importedText({ upto_seq: 1, imported_at: at, trust: "trusted_key", signed_by: key }, "then")).toBe(
      `Entry 1 came in by an import on then, from an export signed by key ${"ab".repeat(8)}…, trusted when imported.`,
    );
    expect(importedText({ upto_seq: 0, imported_at: at, trust: "this_machine", signed_by: key }, "then")).toBe(
      "No entries came in by an import on then, from an export signed by this machine's key.",
    );
  });
});
