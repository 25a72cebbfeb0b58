import { describe, expect, it } from "vitest";
import { Pager } from "./paging";

/** A log of `total` entries with seqs total..1, served newest first like `audit_page`. */
function serve(total: number, before: number | null, size: number) {
  const top = before === null ? total : before - 1;
  const seqs: number[] = [];
  for (let s = top; s >= 1 && seqs.length < size; s--) seqs.push(s);
  const last = seqs[seqs.length - 1];
  const more = last !== undefined && last > 1;
  return { seqs, result: { count: seqs.length, total, nextBefore: more ? last : null } };
}

describe("Pager", () => {
  it("walks every entry once, newest first, and back again", () => {
    const pager = new Pager(10);
    const seen: number[] = [];
    const labels: string[] = [];
    for (;;) {
      const page = serve(25, pager.cursor, pager.size);
      pager.loaded(page.result);
      seen.push(...page.seqs);
      labels.push(pager.describe());
      if (pager.next() === null) break;
    }
    expect(seen).toEqual(Array.from({ length: 25 }, (_, i) => 25 - i));
    expect(labels).toEqual(["1–10 of 25", "11–20 of 25", "21–25 of 25"]);
    expect(pager.index).toBe(2);
    expect(pager.hasNext).toBe(false);
    expect(pager.pages).toBe(3);

    expect(pager.previous()).toBe(true);
    expect(pager.cursor).toBe(16);
    pager.loaded(serve(25, pager.cursor, 10).result);
    expect(pager.describe()).toBe("11–20 of 25");
    expect(pager.previous()).toBe(true);
    expect(pager.cursor).toBeNull();
    expect(pager.previous()).toBe(false);
    expect(pager.hasPrevious).toBe(false);
  });

  it("does not move past the last page or before it is loaded", () => {
    const pager = new Pager(50);
    expect(pager.next()).toBeNull();
    pager.loaded(serve(3, null, 50).result);
    expect(pager.hasNext).toBe(false);
    expect(pager.next()).toBeNull();
    expect(pager.index).toBe(0);
  });

  it("reset returns to the newest page", () => {
    const pager = new Pager(2);
    pager.loaded(serve(5, null, 2).result);
    pager.next();
    pager.loaded(serve(5, pager.cursor, 2).result);
    pager.reset();
    expect(pager.cursor).toBeNull();
    expect(pager.index).toBe(0);
    expect(pager.describe()).toBe("No entries");
  });

  it("describes an empty result and large totals", () => {
    const pager = new Pager(50);
    pager.loaded({ count: 0, total: 0, nextBefore: null });
    expect(pager.describe("keys")).toBe("No keys");
    expect(pager.pages).toBe(1);
    pager.loaded({ count: 50, total: 12345, nextBefore: 12296 });
    expect(pager.describe()).toBe("1–50 of 12,345");
    expect(pager.pages).toBe(247);
  });

  it("refuses a page size that cannot page", () => {
    expect(() => new Pager(0)).toThrow(RangeError);
    expect(() => new Pager(1.5)).toThrow(RangeError);
  });
});
