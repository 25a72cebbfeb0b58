import type { PageResult } from "../paging";

/**
 * One page of a list the Rust side returns whole (keys, users), for a
 * {@link Pager} whose cursor is the offset of the page's first item (null:
 * the first page). Such lists are small enough to fetch whole; paging keeps
 * the table short.
 */
export function pageOf<T>(items: readonly T[], offset: number | null, size: number): { items: T[]; result: PageResult } {
  const start = Math.max(0, offset ?? 0);
  const page = items.slice(start, start + size);
  const end = start + page.length;
  return {
    items: page,
    result: { count: page.length, total: items.length, nextBefore: end < items.length ? end : null },
  };
}
