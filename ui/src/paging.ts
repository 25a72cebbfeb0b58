/**
 * Paging through a list that the Rust side serves newest first, a page at a
 * time, with a cursor (`before_seq`): the next page is "older than the last
 * entry shown". A cursor does not shift when new entries arrive meanwhile,
 * unlike an offset; going back needs the cursors of the pages already seen,
 * which this class keeps.
 */

/** What a loaded page says about itself. */
export interface PageResult {
  /** Entries on this page. */
  count: number;
  /** Entries matching the filter, on all pages. */
  total: number;
  /** The cursor of the next (older) page; null on the last page. */
  nextBefore: number | null;
}

export class Pager {
  /** The cursor each visited page was loaded with (null: the newest page). */
  private cursors: (number | null)[] = [null];
  private last: PageResult | null = null;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`page size ${String(size)}`);
  }

  /** The cursor to load the current page with. */
  get cursor(): number | null {
    return this.cursors[this.cursors.length - 1] ?? null;
  }

  /** 0 for the newest page. */
  get index(): number {
    return this.cursors.length - 1;
  }

  get hasPrevious(): boolean {
    return this.cursors.length > 1;
  }

  get hasNext(): boolean {
    return this.last?.nextBefore != null;
  }

  /** Back to the newest page (a new filter, or a refresh from the top). */
  reset(): void {
    this.cursors = [null];
    this.last = null;
  }

  /** Records what the current page turned out to hold. */
  loaded(result: PageResult): void {
    this.last = result;
  }

  /** Moves to the next (older) page; returns its cursor, or null if there is none. */
  next(): number | null {
    const cursor = this.last?.nextBefore ?? null;
    if (cursor === null) return null;
    this.cursors.push(cursor);
    this.last = null;
    return cursor;
  }

  /** Moves to the previous (newer) page; false when already on the newest. */
  previous(): boolean {
    if (!this.hasPrevious) return false;
    this.cursors.pop();
    this.last = null;
    return true;
  }

  /** How many pages the total fills (at least 1). */
  get pages(): number {
    return Math.max(1, Math.ceil((this.last?.total ?? 0) / this.size));
  }

  /** "1–50 of 312", "No entries", for the current page. */
  describe(noun = "entries"): string {
    const last = this.last;
    if (!last || last.total === 0 || last.count === 0) return `No ${noun}`;
    const first = this.index * this.size + 1;
    const end = Math.min(first + last.count - 1, last.total);
    const fmt = new Intl.NumberFormat("en");
    return `${fmt.format(first)}–${fmt.format(end)} of ${fmt.format(last.total)}`;
  }
}
