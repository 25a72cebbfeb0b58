/**
 * Pure helpers of the Approvals screen: the navigation badge's text and the
 * lines of a recorded diff with their kind (so the page can colour them).
 */

/** The badge beside "Approvals": empty when nothing waits, `99+` past 99. */
export function badgeText(waiting: number): string {
  if (waiting <= 0) return "";
  return waiting > 99 ? "99+" : String(waiting);
}

export type DiffLineKind = "add" | "del" | "hunk" | "context";

/** One line of a unified diff and what it is. */
export function diffLines(diff: string): { kind: DiffLineKind; text: string }[] {
  return diff.split("\n").map((text) => {
    if (text.startsWith("@@")) return { kind: "hunk", text };
    if (text.startsWith("+") && !text.startsWith("+++")) return { kind: "add", text };
    if (text.startsWith("-") && !text.startsWith("---")) return { kind: "del", text };
    return { kind: "context", text };
  });
}

/**
 * The waiting calls the owner has not been notified of yet, in `waiting`'s
 * order; marks them in `seen`, so each hold raises one notification at most.
 */
export function takeUnseen(waiting: readonly string[], seen: Set<string>): string[] {
  const fresh = waiting.filter((id) => !seen.has(id));
  for (const id of fresh) seen.add(id);
  return fresh;
}
