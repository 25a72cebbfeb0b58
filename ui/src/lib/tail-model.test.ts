import { describe, expect, it } from "vitest";
import type { TailCounters, TailMessage } from "../generated/ipc-types";
import { TailModel } from "./tail-model";

const counters = (seen: number, kept = seen): TailCounters => ({
  bytes_seen: seen,
  bytes_retained: kept,
  truncated: kept < seen,
});
const lines = (from: number, to: number): TailMessage => ({
  kind: "lines",
  lines: Array.from({ length: to - from + 1 }, (_, i) => `line ${String(from + i)}`),
  counters: counters(to),
});

describe("TailModel", () => {
  it("coalesces many messages into one render", () => {
    const m = new TailModel(100);
    expect(m.takeDirty()).toBe(false);
    for (let i = 1; i <= 50; i++) m.push(lines(i, i));
    expect(m.takeDirty()).toBe(true);
    expect(m.takeDirty()).toBe(false);
    expect(m.entries().map((e) => e.text)).toEqual(Array.from({ length: 50 }, (_, i) => `line ${String(i + 1)}`));
    expect(m.counters?.bytes_seen).toBe(50);
  });

  it("keeps at most maxLines lines and counts the rest in one marker on top", () => {
    const m = new TailModel(10);
    m.push(lines(1, 25));
    const shown = m.entries();
    expect(shown[0]).toEqual({ kind: "marker", marker: "tail-dropped", text: "[gatehouse: 15 older lines not shown here]" });
    expect(shown.slice(1).map((e) => e.text)).toEqual(Array.from({ length: 10 }, (_, i) => `line ${String(i + 16)}`));
    expect(m.keptLines).toBe(10);
    expect(m.dropped).toBe(15);
    expect(m.lines).toBe(25);
  });

  it("never drops core's truncation marker and puts the dropped count under it", () => {
    const m = new TailModel(3);
    m.push({
      kind: "snapshot",
      before: ["head 1"],
      marker: "[stderr truncated: kept first 7 and last 9 of 99 bytes]",
      after: ["tail 1", "tail 2"],
      counters: counters(99, 16),
    });
    m.push(lines(1, 4));
    const shown = m.entries();
    expect(shown[0]).toMatchObject({ marker: "tail-origin" });
    expect(shown[1]).toMatchObject({ marker: "tail-dropped", text: "[gatehouse: 4 older lines not shown here]" });
    expect(shown.slice(2).map((e) => e.text)).toEqual(["line 2", "line 3", "line 4"]);
  });

  it("marks lines the page missed, and filters lines but never markers", () => {
    const m = new TailModel(100);
    m.push(lines(1, 3));
    m.push({ kind: "missed", lines: 1200, bytes: 54321, counters: counters(60000) });
    m.push({ kind: "lines", lines: ["error: boom", "ok"], counters: counters(60010) });
    expect(m.missed).toBe(1200);
    expect(m.entries("ERROR").map((e) => e.text)).toEqual([
      "[gatehouse: missed 1,200 lines, 54,321 bytes: the page fell behind]",
      "error: boom",
    ]);
    expect(m.text("boom")).toBe("[gatehouse: missed 1,200 lines, 54,321 bytes: the page fell behind]\nerror: boom");
  });

  it("stays bounded under a flood of small messages", () => {
    const m = new TailModel(2000);
    for (let i = 0; i < 20000; i++) m.push({ kind: "lines", lines: ["y"], counters: counters(i * 2) });
    expect(m.keptLines).toBe(2000);
    expect(m.entries()).toHaveLength(2001);
    expect(m.dropped + m.keptLines).toBe(m.lines);
    m.push({ kind: "end", counters: counters(40000) });
    expect(m.ended).toBe(true);
  });

  it("tells an incremental view what was added and which lines were dropped", () => {
    const m = new TailModel(4);
    m.push(lines(1, 3));
    const first = m.since(0);
    expect(first.added.map((e) => e.text)).toEqual(["line 1", "line 2", "line 3"]);
    expect(first.oldestLine).toBe(1);
    const drawn = m.lastSeq;
    m.push(lines(4, 8));
    const next = m.since(drawn);
    // Only what is new and still kept; lines 1-4 are gone (cap 4).
    expect(next.added.map((e) => e.text)).toEqual(["line 5", "line 6", "line 7", "line 8"]);
    expect(next.oldestLine).toBe(next.added[0]?.seq);
    expect(m.since(m.lastSeq).added).toEqual([]);
  });
});
