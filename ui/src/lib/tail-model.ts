/**
 * The state of one stderr tail in the page, without the DOM: a bounded list
 * of lines and Gatehouse's markers, fed by {@link TailMessage}s.
 *
 * Messages are applied as they arrive (cheap: arrays only); the panel renders
 * at most once per animation frame, so a flood of small messages costs one
 * render ({@link TailModel.takeDirty} says whether anything changed since the
 * last one). At most `maxLines` lines are kept: the oldest go first and are
 * counted in one "not shown" marker where they were. Core's truncation marker
 * is never dropped, and no gap is silent.
 *
 * The page's own notes start with `[gatehouse`, a prefix core defangs at the
 * start of every child line (`text::OWN_LINE_PREFIXES`): in a copied tail,
 * where no styling is left, a child still cannot pass a line off as one.
 */
import type { TailCounters, TailMessage } from "../generated/ipc-types";

export type MarkerKind = "tail-origin" | "tail-missed" | "tail-dropped";

export type TailEntry = { kind: "line"; text: string } | { kind: "marker"; marker: MarkerKind; text: string };

/** An entry with its place in the stream (increasing, never reused). */
export type Numbered = TailEntry & { seq: number };

const numbers = new Intl.NumberFormat("en");
export const n = (value: number): string => numbers.format(value);

export class TailModel {
  readonly maxLines: number;
  /** Lines and in-stream markers, oldest first (without the dropped marker). */
  private list: Numbered[] = [];
  private nextSeq = 1;
  /** Lines received in total (shown or not). */
  lines = 0;
  /** Lines the Rust side dropped because the page was slow. */
  missed = 0;
  /** Lines this model dropped to stay within `maxLines` (read after {@link entries}). */
  dropped = 0;
  counters: TailCounters | null = null;
  ended = false;
  private kept = 0;
  private dirty = false;
  private readonly slack: number;

  constructor(maxLines = 2000) {
    this.maxLines = maxLines;
    this.slack = Math.max(16, Math.floor(maxLines / 4));
  }

  push(message: TailMessage): void {
    switch (message.kind) {
      case "snapshot":
        this.append(message.before);
        if (message.marker !== null) this.add({ kind: "marker", marker: "tail-origin", text: message.marker });
        this.append(message.after);
        break;
      case "lines":
        this.append(message.lines);
        break;
      case "missed":
        this.missed += message.lines;
        this.add({
          kind: "marker",
          marker: "tail-missed",
          text: `[gatehouse: missed ${n(message.lines)} lines, ${n(message.bytes)} bytes: the page fell behind]`,
        });
        break;
      case "end":
        this.ended = true;
        break;
    }
    this.counters = message.counters;
    // Trimming copies the list: do it once per `slack` lines, not per message.
    if (this.kept > this.maxLines + this.slack) this.trim();
    this.dirty = true;
  }

  /** True once after anything changed (the panel then renders). */
  takeDirty(): boolean {
    const was = this.dirty;
    this.dirty = false;
    return was;
  }

  /**
   * What to show, oldest first: the dropped marker sits right after core's
   * origin marker when that is on top, else first. `filter` keeps lines that
   * contain it (case-insensitive); markers always show.
   */
  entries(filter = ""): TailEntry[] {
    this.trim();
    const needle = filter.trim().toLowerCase();
    const shown: TailEntry[] = (
      needle ? this.list.filter((e) => e.kind === "marker" || e.text.toLowerCase().includes(needle)) : this.list
    ).map((e): TailEntry => (e.kind === "line" ? { kind: "line", text: e.text } : { kind: "marker", marker: e.marker, text: e.text }));
    if (this.dropped > 0) {
      const marker: TailEntry = {
        kind: "marker",
        marker: "tail-dropped",
        text: `[gatehouse: ${n(this.dropped)} older lines not shown here]`,
      };
      const first = shown[0];
      const at = first?.kind === "marker" && first.marker === "tail-origin" ? 1 : 0;
      shown.splice(at, 0, marker);
    }
    return shown;
  }

  /** The shown entries as text, one per line (for copy and save). */
  text(filter = ""): string {
    return this.entries(filter)
      .map((e) => e.text)
      .join("\n");
  }

  /**
   * What changed since the entry numbered `after` was drawn, for a panel that
   * draws incrementally: the entries added since, and the number of the
   * oldest line still kept (lines before it were dropped; markers never are).
   */
  since(after: number): { added: Numbered[]; oldestLine: number } {
    this.trim();
    const oldestLine = this.list.find((e) => e.kind === "line")?.seq ?? this.nextSeq;
    let from = this.list.length;
    while (from > 0 && (this.list[from - 1]?.seq ?? 0) > after) from -= 1;
    return { added: this.list.slice(from), oldestLine };
  }

  /** The number the next entry gets (everything before it exists or existed). */
  get lastSeq(): number {
    return this.nextSeq - 1;
  }

  /** Lines currently kept (markers not counted). */
  get keptLines(): number {
    this.trim();
    return this.kept;
  }

  private add(entry: TailEntry): void {
    this.list.push({ ...entry, seq: this.nextSeq++ });
  }

  private append(lines: string[]): void {
    for (const text of lines) this.list.push({ kind: "line", text, seq: this.nextSeq++ });
    this.lines += lines.length;
    this.kept += lines.length;
  }

  /** Drops the oldest lines past the cap; core's origin marker stays. */
  private trim(): void {
    let excess = this.kept - this.maxLines;
    if (excess <= 0) return;
    const next: Numbered[] = [];
    for (const e of this.list) {
      if (excess > 0 && e.kind === "line") {
        excess -= 1;
        this.kept -= 1;
        this.dropped += 1;
        continue;
      }
      // A "missed" marker whose lines around it are gone says nothing more
      // than the dropped count; keep it anyway: it names lines never received.
      next.push(e);
    }
    this.list = next;
  }
}
