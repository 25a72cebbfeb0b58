import { h } from "../dom";
import type { TailCounters, TailMessage } from "../ipc";

const numbers = new Intl.NumberFormat("en");
const n = (value: number) => numbers.format(value);

/**
 * A live, bounded view of a connection's stderr.
 *
 * Messages arrive through {@link push}. The panel keeps at most `maxLines`
 * lines in the page and marks every gap where it shows one: core's truncation
 * marker (pinned on top once the kept head scrolls away), lines the page was
 * too slow to receive (`missed`, told by the Rust side) and lines it dropped
 * itself to stay small. Truncation is never silent. The header shows the
 * tail's byte counters as of the last message.
 */
export class TailPanel {
  readonly element: HTMLElement;
  private readonly list: HTMLOListElement;
  private readonly status: HTMLElement;
  private readonly counters: HTMLElement;
  private readonly maxLines: number;
  private lines = 0;
  private missed = 0;
  private dropped = 0;
  private droppedMarker: HTMLLIElement | null = null;
  private pinned: HTMLLIElement | null = null;

  constructor(title: string, maxLines = 2000) {
    this.maxLines = maxLines;
    this.status = h("span", { id: "tail-status", class: "tail-status", "data-state": "idle" }, "idle");
    this.counters = h("div", { id: "tail-counters", class: "tail-counters muted" });
    this.list = h("ol", { id: "tail-lines", class: "tail-lines mono", "aria-live": "off" });
    this.element = h(
      "section",
      { class: "panel tail-panel" },
      h("header", { class: "panel-header" }, h("h2", { id: "tail-title" }, title), this.status),
      this.counters,
      this.list,
    );
  }

  /** Starts over for a new stream titled `title`. */
  reset(title?: string): void {
    if (title !== undefined) {
      const heading = this.element.querySelector("h2");
      if (heading) heading.textContent = title;
    }
    this.list.replaceChildren();
    this.counters.replaceChildren();
    delete this.counters.dataset.truncated;
    this.lines = 0;
    this.missed = 0;
    this.dropped = 0;
    this.droppedMarker = null;
    this.pinned = null;
    this.setStatus("streaming", "streaming…");
  }

  push(message: TailMessage): void {
    switch (message.kind) {
      case "snapshot":
        this.appendLines(message.before);
        if (message.marker !== null) {
          this.pinned = this.marker(message.marker, "tail-origin");
          this.list.append(this.pinned);
        }
        this.appendLines(message.after);
        break;
      case "lines":
        this.appendLines(message.lines);
        break;
      case "missed":
        this.missed += message.lines;
        this.list.append(
          this.marker(`[missed ${n(message.lines)} lines, ${n(message.bytes)} bytes: the page fell behind]`, "tail-missed"),
        );
        this.trim();
        break;
      case "end": {
        const parts = [`ended: ${n(this.lines)} lines`, `${n(message.counters.bytes_seen)} bytes`];
        if (this.missed > 0) parts.push(`${n(this.missed)} missed`);
        this.setStatus(this.missed > 0 || message.counters.truncated ? "warn" : "ended", parts.join(", "));
        break;
      }
    }
    this.showCounters(message.counters);
  }

  fail(message: string): void {
    this.setStatus("error", message);
  }

  private showCounters(c: TailCounters): void {
    const parts = [`${n(c.bytes_seen)} bytes seen`, `${n(c.bytes_retained)} kept`];
    if (c.truncated) parts.push(`truncated: ${n(c.bytes_seen - c.bytes_retained)} bytes dropped`);
    this.counters.textContent = parts.join(" · ");
    this.counters.dataset.bytesSeen = String(c.bytes_seen);
    this.counters.dataset.truncated = String(c.truncated);
  }

  private marker(text: string, kind: string): HTMLLIElement {
    return h("li", { class: `tail-marker ${kind}` }, text);
  }

  private appendLines(lines: string[]): void {
    if (lines.length === 0) return;
    const stick = this.atBottom();
    this.list.append(...lines.map((line) => h("li", {}, line)));
    this.lines += lines.length;
    this.trim();
    if (stick) this.list.scrollTop = this.list.scrollHeight;
  }

  /**
   * Drops the oldest entries past the cap, counting the lines in one marker
   * where they were; core's truncation marker is never dropped.
   */
  private trim(): void {
    const fixed = (this.pinned ? 1 : 0) + (this.droppedMarker ? 1 : 0);
    let excess = this.list.childElementCount - fixed - this.maxLines;
    if (excess <= 0) return;
    this.droppedMarker?.remove();
    let node = this.list.firstElementChild;
    while (excess > 0 && node) {
      const next = node.nextElementSibling;
      if (node !== this.pinned) {
        if (!node.classList.contains("tail-marker")) this.dropped += 1;
        node.remove();
        excess -= 1;
      }
      node = next;
    }
    this.droppedMarker = this.marker(`[${n(this.dropped)} older lines not shown here]`, "tail-dropped");
    if (this.pinned && this.list.firstElementChild === this.pinned) this.pinned.after(this.droppedMarker);
    else this.list.prepend(this.droppedMarker);
  }

  /** Follow new lines only while the reader has not scrolled up. */
  private atBottom(): boolean {
    return this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 24;
  }

  private setStatus(state: string, text: string): void {
    this.status.dataset.state = state;
    this.status.textContent = text;
  }
}
