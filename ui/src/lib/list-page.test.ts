import { describe, expect, it } from "vitest";
import { Pager } from "../paging";
import { pageOf } from "./list-page";

describe("pageOf", () => {
  it("pages a whole list through a Pager and back", () => {
    const items = Array.from({ length: 7 }, (_, i) => i);
    const pager = new Pager(3);
    const seen: number[][] = [];
    const labels: string[] = [];
    for (;;) {
      const page = pageOf(items, pager.cursor, pager.size);
      pager.loaded(page.result);
      seen.push(page.items);
      labels.push(pager.describe("keys"));
      if (pager.next() === null) break;
    }
    expect(seen).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
    expect(labels).toEqual(["1–3 of 7", "4–6 of 7", "7–7 of 7"]);
    expect(pager.previous()).toBe(true);
    expect(pageOf(items, pager.cursor, pager.size).items).toEqual([3, 4, 5]);
  });

  it("has no next page when the list ends exactly at a page boundary", () => {
    expect(pageOf([1, 2, 3, 4], 2, 2).result).toEqual({ count: 2, total: 4, nextBefore: null });
    expect(pageOf([1, 2, 3, 4], null, 2).result).toEqual({ count: 2, total: 4, nextBefore: 2 });
  });

  it("gives an empty page past the end (the list shrank) and for an empty list", () => {
    expect(pageOf([1, 2], 4, 2)).toEqual({ items: [], result: { count: 0, total: 2, nextBefore: null } });
    expect(pageOf([], null, 50)).toEqual({ items: [], result: { count: 0, total: 0, nextBefore: null } });
  });
});
