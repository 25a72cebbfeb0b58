import { h } from "../dom";
import type { TailEvent } from "../ipc";

/**
 * A live, bounded view of a text stream (a connection's stderr tail).
 *
 * The panel keeps at most `maxLines` lines in the page and says how many it
 * dropped, mirroring the rule that truncation is visible and exact; the Rust
 * side already bounds what it sends.
 */
export class TailPanel {
  readonly element: HTMLElement;
  private readonly list: HTMLOListElement;
  private readonly status: HTMLElement;
  private readonly maxLines: number;
  private received = 0;
  private dropped = 0;
  private lastSeq = 0;
  private gaps = 0;

  constructor(title: string, maxLines = 500) {
    this.maxLines = maxLines;
    this.status = h("span", { id: "tail-status", class: "tail-status" }, "idle");
    this.list = h("ol", { id: "tail-lines", class: "tail-lines mono" });
    this.element = h(
      "section",
      { class: "panel tail-panel" },
      h("header", { class: "panel-header" }, h("h2", {}, title), this.status),
      this.list,
    );
  }

  reset(): void {
    this.list.replaceChildren();
    this.received = 0;
    this.dropped = 0;
    this.lastSeq = 0;
    this.gaps = 0;
    this.setStatus("streaming", "streaming…");
  }

  push(event: TailEvent): void {
    if (event.kind === "line") {
      if (event.seq !== this.lastSeq + 1) this.gaps += 1;
      this.lastSeq = event.seq;
      this.received += 1;
      this.list.append(h("li", { "data-seq": event.seq }, event.text));
      while (this.list.childElementCount > this.maxLines) {
        this.list.firstElementChild?.remove();
        this.dropped += 1;
      }
      this.list.scrollTop = this.list.scrollHeight;
      return;
    }
    const kept = this.received - this.dropped;
    const parts = [`ended: ${String(event.lines)} lines`];
    if (this.dropped > 0) parts.push(`showing last ${String(kept)}`);
    if (this.gaps > 0) parts.push(`${String(this.gaps)} gaps`);
    this.setStatus(this.gaps > 0 ? "error" : "ended", parts.join(", "));
  }

  fail(message: string): void {
    this.setStatus("error", message);
  }

  private setStatus(state: string, text: string): void {
    this.status.dataset.state = state;
    this.status.textContent = text;
  }
}
