import { h } from "../dom";
import type { TailMessage } from "../ipc";

const numbers = new Intl.NumberFormat("en");

/**
 * A live, bounded view of a connection's stderr.
 *
 * Lines arrive through {@link push}. The panel keeps at most `maxLines` lines
 * in the page and marks every gap where it shows one: lines the page was too
 * slow to receive (`missed`, told by the Rust side) and lines it dropped itself
 * to stay small. Truncation is never silent.
 */
export class TailPanel {
  readonly element: HTMLElement;
  private readonly list: HTMLOListElement;
  private readonly status: HTMLElement;
  private readonly maxLines: number;
  private lines = 0;
  private missed = 0;
  private dropped = 0;
  private droppedMarker: HTMLLIElement | null = null;

  constructor(title: string, maxLines = 2000) {
    this.maxLines = maxLines;
    this.status = h("span", { id: "tail-status", class: "tail-status", "data-state": "idle" }, "idle");
    this.list = h("ol", { id: "tail-lines", class: "tail-lines mono", "aria-live": "off" });
    this.element = h(
      "section",
      { class: "panel tail-panel" },
      h("header", { class: "panel-header" }, h("h2", {}, title), this.status),
      this.list,
    );
  }

  reset(): void {
    this.list.replaceChildren();
    this.lines = 0;
    this.missed = 0;
    this.dropped = 0;
    this.droppedMarker = null;
    this.setStatus("streaming", "streaming…");
  }

  push(message: TailMessage): void {
    switch (message.kind) {
      case "lines":
        this.appendLines(message.lines);
        break;
      case "missed":
        this.missed += message.lines;
        this.list.append(
          h(
            "li",
            { class: "tail-marker" },
            `[missed ${numbers.format(message.lines)} lines, ${numbers.format(message.bytes)} bytes]`,
          ),
        );
        break;
      case "end": {
        const parts = [
          `ended: ${numbers.format(this.lines)} lines`,
          `${numbers.format(message.bytesSeen)} bytes`,
        ];
        if (message.truncated) parts.push(`kept ${numbers.format(message.bytesRetained)}`);
        if (this.missed > 0) parts.push(`${numbers.format(this.missed)} missed`);
        this.setStatus(this.missed > 0 ? "warn" : "ended", parts.join(", "));
        break;
      }
    }
  }

  fail(message: string): void {
    this.setStatus("error", message);
  }

  private appendLines(lines: string[]): void {
    const stick = this.atBottom();
    this.list.append(...lines.map((line) => h("li", {}, line)));
    this.lines += lines.length;
    this.trim();
    if (stick) this.list.scrollTop = this.list.scrollHeight;
  }

  /** Drops the oldest lines past the cap, counting them in one marker on top. */
  private trim(): void {
    let excess = this.list.childElementCount - this.maxLines;
    if (excess <= 0) return;
    if (this.droppedMarker) {
      this.droppedMarker.remove();
      excess -= 1;
    }
    for (; excess > 0; excess -= 1) {
      this.list.firstElementChild?.remove();
      this.dropped += 1;
    }
    this.droppedMarker = h(
      "li",
      { class: "tail-marker" },
      `[${numbers.format(this.dropped)} older lines not shown]`,
    );
    this.list.prepend(this.droppedMarker);
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
