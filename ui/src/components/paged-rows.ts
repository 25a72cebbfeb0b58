import { pageOf } from "../lib/list-page";
import { Pager } from "../paging";
import { PagerBar } from "./pager-bar";

/**
 * A list that comes whole from Rust, shown a page at a time in `tbody` with
 * a {@link PagerBar} (`prefix-page-label`, `prefix-previous`, `prefix-next`).
 * When the list shrinks under the page shown (a revoke under "Active"), it
 * steps back to the last page that still has rows.
 */
export class PagedRows<T> {
  readonly bar: PagerBar;
  private readonly pager: Pager;
  private list: T[] = [];

  constructor(
    private readonly tbody: HTMLElement,
    prefix: string,
    noun: string,
    private readonly row: (item: T) => HTMLElement,
    size: number,
  ) {
    this.pager = new Pager(size);
    this.bar = new PagerBar(
      this.pager,
      { ids: { label: `${prefix}-page-label`, back: `${prefix}-previous`, forward: `${prefix}-next` }, back: "Previous", forward: "Next", noun },
      () => { this.show(); },
    );
  }

  /** Shows `list` from the current page on (the first page after {@link reset}). */
  set(list: T[]): void {
    this.list = list;
    this.show();
  }

  /** Back to the first page (a new filter). */
  reset(): void {
    this.pager.reset();
  }

  private show(): void {
    const { pager } = this;
    let page = pageOf(this.list, pager.cursor, pager.size);
    while (page.items.length === 0 && pager.previous()) page = pageOf(this.list, pager.cursor, pager.size);
    pager.loaded(page.result);
    this.tbody.replaceChildren(...page.items.map(this.row));
    this.tbody.dataset.page = String(pager.index);
    this.bar.update();
  }
}
