/**
 * The geometry of a key's usage chart: one bar per day, the refused calls
 * stacked on top of the others, scaled to a round maximum so two keys'
 * charts read alike. Pure, so it is unit-tested; the SVG is drawn by
 * `components/usage-chart.ts`.
 */

/** One day as the chart needs it. */
export interface DayCount {
  calls: number;
  refused: number;
}

/** One bar: its slot, and the heights of its answered and refused parts. */
export interface Bar {
  x: number;
  width: number;
  /** Height of the calls that were not refused. */
  answered: number;
  /** Height of the refused calls, drawn above the answered ones. */
  refused: number;
}

/** The smallest 1, 2 or 5 × 10ⁿ at or above `n` (1 for nothing). */
export function niceCeiling(n: number): number {
  if (!(n > 1)) return 1;
  const power = 10 ** Math.floor(Math.log10(n));
  for (const step of [1, 2, 5, 10]) {
    if (step * power >= n) return step * power;
  }
  return 10 * power;
}

/** The least height a non-zero count gets, so a single call is visible. */
export const MIN_VISIBLE = 1.5;

function scaled(count: number, max: number, height: number): number {
  if (count <= 0) return 0;
  return Math.max(MIN_VISIBLE, (count / max) * height);
}

/**
 * Bars for `days` in a `width` × `height` box, `gap` apart; the maximum is
 * the busiest day rounded up by {@link niceCeiling}.
 */
export function chartBars(days: readonly DayCount[], width: number, height: number, gap = 2): { max: number; bars: Bar[] } {
  const max = niceCeiling(Math.max(0, ...days.map((d) => d.calls)));
  const slot = days.length === 0 ? 0 : width / days.length;
  const bars = days.map((d, i) => {
    const refusedCount = Math.min(Math.max(d.refused, 0), Math.max(d.calls, 0));
    const total = scaled(d.calls, max, height);
    const refused = refusedCount === 0 ? 0 : Math.min(total, scaled(refusedCount, max, height));
    return { x: i * slot + gap / 2, width: Math.max(slot - gap, 1), answered: total - refused, refused };
  });
  return { max, bars };
}

/** "5 calls, 1 refused" / "no calls" for a bar's tooltip and the chart's label. */
export function countText(calls: number, refused: number): string {
  if (calls === 0) return "no calls";
  const noun = calls === 1 ? "call" : "calls";
  return refused > 0 ? `${String(calls)} ${noun}, ${String(refused)} refused` : `${String(calls)} ${noun}`;
}
