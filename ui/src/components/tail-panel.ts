import { h } from "../dom";
import {
  type GatehouseError,
  type TailCounters,
  type TailMessage,
  toGatehouseError,
} from "../ipc";
import { type TailEntry, TailModel, n } from "../lib/tail-model";
import { copyButton } from "./copy-button";
import { errorView } from "./error-view";

let panels = 0;

/** What one panel's frame will do, decided by reading the layout only. */
interface FramePlan {
  draw: boolean;
  /** The list was scrolled to its end: keep it there. */
  stick: boolean;
}

/**
 * Panels due for a frame and whether each must redraw. All are drawn in one
 * animation-frame callback, in passes: every panel reads its scroll position,
 * then every panel changes its list, then every panel scrolls. With one
 * callback per panel, each read came after the previous panel's writes, and
 * WebKit laid the whole page out once per busy tail per frame.
 */
const due = new Map<TailPanel, boolean>();
let frame = 0;

function scheduleDraw(panel: TailPanel, force: boolean): void {
  due.set(panel, force || (due.get(panel) ?? false));
  if (frame === 0) frame = requestAnimationFrame(drawDue);
}

function drawDue(): void {
  frame = 0;
  // A panel in a hidden tab draws nothing until it is shown again.
  const batch = [...due].filter(([panel]) => panel.element.isConnected);
  due.clear();
  const plans = batch.map(([panel, force]) => [panel, panel.plan(force)] as const);
  for (const [panel, plan] of plans) panel.draw(plan);
  for (const [panel, plan] of plans) panel.scroll(plan);
}

/**
 * A live, bounded view of one connection's stderr, drawn from a
 * {@link TailModel}: messages go into the model as they arrive, the list is
 * drawn at most once per animation frame. Controls: pause/resume (the view
 * stops moving; the stream and counters go on), a filter, copy, and save
 * (through `onSave`, which writes what core kept to a file).
 *
 * Only the active panel carries the element ids (`tail-lines`, …) the tests
 * and labels use, so several panels can sit side by side.
 */
export class TailPanel {
  readonly element: HTMLElement;
  readonly model: TailModel;
  private readonly list: HTMLOListElement;
  private readonly status: HTMLElement;
  private readonly counters: HTMLElement;
  private readonly heading: HTMLHeadingElement;
  private readonly filter: HTMLInputElement;
  private readonly pause: HTMLButtonElement;
  private readonly note: HTMLElement;
  private readonly save: HTMLButtonElement | null;
  private paused = false;
  private active = false;
  /** The last entry drawn while drawing incrementally; 0: redraw whole. */
  private drawnTo = 0;
  /** The "older lines not shown" item, while drawn. */
  private droppedItem: HTMLLIElement | null = null;

  constructor(title: string, onSave: (() => Promise<string>) | null = null, maxLines = 2000) {
    this.model = new TailModel(maxLines);
    this.status = h("span", { class: "tail-status", "data-state": "idle" }, "idle");
    this.counters = h("div", { class: "tail-counters muted" });
    this.list = h("ol", { class: "tail-lines mono", "aria-live": "off" });
    this.heading = h("h2", {}, title);
    this.filter = h("input", { type: "search", class: "input input-small", placeholder: "filter lines" });
    this.filter.addEventListener("input", () => {
      this.drawnTo = 0;
      const plan = this.plan(true);
      this.draw(plan);
      this.scroll(plan);
    });
    this.pause = h("button", { type: "button", class: "button button-small", "aria-pressed": "false" }, "Pause");
    this.pause.addEventListener("click", () => {
      this.setPaused(!this.paused);
    });
    this.note = h("div", { class: "muted small", role: "status" });
    const save = onSave
      ? h("button", { type: "button", class: "button button-small", "data-action": "save-tail" }, "Save")
      : null;
    this.save = save;
    save?.addEventListener("click", () => {
      save.disabled = true;
      onSave?.()
        .then((path) => {
          this.note.replaceChildren(`saved to ${path}`);
          this.note.dataset.path = path;
        })
        .catch((raw: unknown) => {
          delete this.note.dataset.path;
          this.note.replaceChildren(errorView(toGatehouseError(raw)));
        })
        .finally(() => {
          save.disabled = false;
        });
    });
    const filterLabel = h("label", { class: "tail-filter" }, h("span", { class: "visually-hidden" }, "Filter stderr lines"), this.filter);
    this.element = h(
      "section",
      { class: "panel tail-panel" },
      h("header", { class: "panel-header" }, this.heading, this.status),
      h(
        "div",
        { class: "tail-tools" },
        filterLabel,
        this.pause,
        copyButton(`tail-copy-${String(++panels)}`, () => this.model.text(this.filter.value), "Copy"),
        save,
        this.note,
      ),
      this.counters,
      this.list,
    );
    this.setActive(true);
  }

  /** Gives this panel the ids the page's tests and labels use (one panel at a time). */
  setActive(active: boolean): void {
    this.active = active;
    const ids: [HTMLElement, string][] = [
      [this.list, "tail-lines"],
      [this.status, "tail-status"],
      [this.counters, "tail-counters"],
      [this.heading, "tail-title"],
      [this.filter, "tail-filter"],
      [this.pause, "tail-pause"],
      [this.note, "tail-note"],
    ];
    if (this.save) ids.push([this.save, "tail-save"]);
    for (const [el, id] of ids) {
      if (active) el.id = id;
      else el.removeAttribute("id");
    }
  }

  get isActive(): boolean {
    return this.active;
  }

  setTitle(title: string): void {
    this.heading.textContent = title;
  }

  start(): void {
    this.setStatus("streaming", "streaming…");
  }

  push(message: TailMessage): void {
    this.model.push(message);
    if (message.kind === "end") {
      const m = this.model;
      const parts = [`ended: ${n(m.lines)} lines`, `${n(message.counters.bytes_seen)} bytes`];
      if (m.missed > 0) parts.push(`${n(m.missed)} missed`);
      this.setStatus(m.missed > 0 || message.counters.truncated ? "warn" : "ended", parts.join(", "));
    }
    this.schedule();
  }

  /** The stream failed: the status says so, the note shows why (code, message, hint). */
  fail(err: GatehouseError): void {
    this.setStatus("error", "failed");
    this.note.replaceChildren(errorView(err));
  }

  setPaused(paused: boolean): void {
    this.paused = paused;
    this.pause.textContent = paused ? "Resume" : "Pause";
    this.pause.setAttribute("aria-pressed", String(paused));
    this.element.dataset.paused = String(paused);
    if (!paused) this.refresh();
  }

  /** Draws what arrived while the panel was hidden or paused. */
  refresh(): void {
    this.schedule(true);
  }

  /** Stops drawing (the screen was left). */
  dispose(): void {
    due.delete(this);
  }

  private schedule(force = false): void {
    scheduleDraw(this, force);
  }

  /** Decides this frame's work; reads the layout, changes nothing. */
  plan(force: boolean): FramePlan {
    const draw = this.model.takeDirty() || force;
    const stick = draw && !this.paused && this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 24;
    return { draw, stick };
  }

  /** Keeps a list that was at its end at its end (after every panel drew). */
  scroll(plan: FramePlan): void {
    if (plan.stick) this.list.scrollTop = this.list.scrollHeight;
  }

  /**
   * Draws the model: only what changed since the last frame (new entries
   * appended, dropped lines removed from the top), so ten busy tails cost
   * their new lines, not ten redraws of 2,000 items each. A filter redraws
   * whole. Changes the page without reading its layout (see `drawDue`).
   */
  draw(plan: FramePlan): void {
    if (!plan.draw) return;
    const counters = this.model.counters;
    if (counters) this.showCounters(counters);
    if (this.paused) return;
    const filter = this.filter.value.trim();
    if (filter) {
      this.list.replaceChildren(...this.model.entries(filter).map(item));
      this.droppedItem = null;
      this.drawnTo = 0;
    } else {
      if (this.drawnTo === 0) {
        this.list.replaceChildren();
        this.droppedItem = null;
      }
      const { added, oldestLine } = this.model.since(this.drawnTo);
      this.list.append(
        ...added.map((e) => {
          const li = item(e);
          li.dataset.seq = String(e.seq);
          return li;
        }),
      );
      this.dropLinesBefore(oldestLine);
      this.drawnTo = this.model.lastSeq;
    }
  }

  /** Removes the drawn lines the model dropped, and counts them where the model does. */
  private dropLinesBefore(oldestLine: number): void {
    // From the top only, and only as far as the first kept line: no copy of
    // the whole list per frame.
    let li = this.list.firstElementChild as HTMLLIElement | null;
    while (li) {
      const next = li.nextElementSibling as HTMLLIElement | null;
      if (!li.classList.contains("tail-marker")) {
        const seq = Number(li.dataset.seq ?? Number.NaN);
        if (!(seq < oldestLine)) break;
        li.remove();
      }
      li = next;
    }
    if (this.model.dropped === 0) return;
    const text = `[gatehouse: ${n(this.model.dropped)} older lines not shown here]`;
    this.droppedItem ??= item({ kind: "marker", marker: "tail-dropped", text });
    this.droppedItem.textContent = text;
    const first = this.list.firstElementChild;
    const anchor = first?.classList.contains("tail-origin") ? first.nextElementSibling : first;
    if (anchor !== this.droppedItem) this.list.insertBefore(this.droppedItem, anchor);
  }

  private showCounters(c: TailCounters): void {
    const parts = [`${n(c.bytes_seen)} bytes seen`, `${n(c.bytes_retained)} kept`];
    if (c.truncated) parts.push(`truncated: ${n(c.bytes_seen - c.bytes_retained)} bytes dropped`);
    this.counters.textContent = parts.join(" · ");
    this.counters.dataset.bytesSeen = String(c.bytes_seen);
    this.counters.dataset.truncated = String(c.truncated);
  }

  private setStatus(state: string, text: string): void {
    this.status.dataset.state = state;
    this.status.textContent = text;
  }
}

/** One list item for `entry`. */
function item(entry: TailEntry): HTMLLIElement {
  return entry.kind === "line" ? h("li", {}, entry.text) : h("li", { class: `tail-marker ${entry.marker}` }, entry.text);
}
