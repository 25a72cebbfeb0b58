/**
 * The WAI-ARIA tabs pattern's keys: Left/Right move to the previous/next tab
 * (wrapping), Home/End to the first/last. Returns the index of the tab that
 * should take focus and be selected, or null when the key is not one of these
 * (so the caller leaves the event alone).
 */
export function tabKeyTarget(key: string, current: number, count: number): number | null {
  if (count < 1) return null;
  switch (key) {
    case "ArrowRight":
      return (current + 1) % count;
    case "ArrowLeft":
      return (current - 1 + count) % count;
    case "Home":
      return 0;
    case "End":
      return count - 1;
    default:
      return null;
  }
}
