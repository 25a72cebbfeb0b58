/** The longest connection name core accepts. */
const MAX_NAME = 64;

/**
 * The name a duplicate of connection `name` gets: `name-copy`, then
 * `name-copy-2`, `-3`… the first that no connection in `taken` has, cut so
 * the suffix always fits (a second duplicate must not fail as a clash).
 */
export function copyName(name: string, taken: ReadonlySet<string>): string {
  for (let n = 1; ; n++) {
    const suffix = n === 1 ? "-copy" : `-copy-${String(n)}`;
    const candidate = name.slice(0, MAX_NAME - suffix.length) + suffix;
    if (!taken.has(candidate)) return candidate;
  }
}
