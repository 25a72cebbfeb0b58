/**
 * Pure helpers of the Serve panel: the allowlist fields' entries and how the
 * live counters read.
 */

/** One entry per line or comma, trimmed, blanks and repeats dropped. */
export function listEntries(text: string): string[] {
  const seen = new Set<string>();
  for (const entry of text.split(/[\n,]/).map((s) => s.trim())) {
    if (entry) seen.add(entry);
  }
  return [...seen];
}

/** Requests per second as the panel shows it: one decimal under 10, whole above. */
export function rateText(perSecond: number): string {
  if (!Number.isFinite(perSecond) || perSecond <= 0) return "0/s";
  return perSecond < 10 ? `${perSecond.toFixed(1)}/s` : `${String(Math.round(perSecond))}/s`;
}
