/**
 * The Client config panel's decisions, apart from the DOM: which client is
 * shown, whether its key can be referenced and its file installed, and what
 * each generated snippet shows (the files it goes in, or a command line).
 */
import type { ClientChoice, Format, Location, Snippet } from "../generated/ipc-types";

/** The client shown: `wanted` while core still offers it, else core's first. */
export function pickClient(choices: readonly ClientChoice[], wanted: string): ClientChoice | null {
  return choices.find((c) => c.id === wanted) ?? choices[0] ?? null;
}

const SECRET_REF_TITLE = "The client supplies the key at start; the config never holds it";

/** The "Secret reference" box for `choice`: a client without a secret indirection cannot take one. */
export function secretRefState(
  choice: ClientChoice | null,
  checked: boolean,
): { enabled: boolean; checked: boolean; title: string } {
  const supported = choice?.secret_ref ?? false;
  return {
    enabled: supported,
    checked: supported && checked,
    title: supported ? SECRET_REF_TITLE : `${choice?.name ?? "This client"} cannot reference a secret: the key is written into its config`,
  };
}

/** Whether "Install into the client" can write `choice`'s file, and what to say when not. */
export function installState(choice: ClientChoice | null): { available: boolean; note: string } {
  if (!choice) return { available: false, note: "Choose a client first." };
  if (!choice.installable) {
    return { available: false, note: `${choice.name} keeps its MCP servers in its own settings, not in a file: paste the snippet there.` };
  }
  return { available: true, note: "" };
}

export function locationText(loc: Location): string {
  const scope = loc.scope === "project" ? "Project" : loc.scope === "local" ? "Local" : "User";
  return `${scope}${loc.os ? `, ${loc.os}` : ""}: ${loc.path}`;
}

/**
 * What the app writes in a config's text where the raw key goes (core's
 * `REDACTED_KEY`): the page gets a key once, from the mint, never again.
 */
export const KEY_MASK = "<API key, not shown>";

/** What one snippet shows; the first keeps the unsuffixed ids the page's tests use. */
export interface SnippetModel {
  idSuffix: string;
  /** The files it goes in, or a command line to run (no file). */
  where: { kind: "files"; paths: string[] } | { kind: "command" };
  /** The text holds the raw key: warn next to the copy button. */
  warnSecret: boolean;
  /** The text holds the mask where the key goes: the key was shown at its mint only. */
  keyMasked: boolean;
  format: Format;
  text: string;
  instructions: string;
}

/** `rawKey`, when the page holds it (the panel shown at the mint), goes in place of the mask. */
export function snippetModel(snippet: Snippet, index: number, rawKey?: string): SnippetModel {
  const masked = snippet.text.includes(KEY_MASK);
  const text = masked && rawKey ? snippet.text.replaceAll(KEY_MASK, rawKey) : snippet.text;
  const keyMasked = masked && !rawKey;
  return {
    idSuffix: index === 0 ? "" : `-${String(index)}`,
    where: snippet.locations.length > 0 ? { kind: "files", paths: snippet.locations.map(locationText) } : { kind: "command" },
    warnSecret: snippet.contains_secret && !keyMasked,
    keyMasked,
    format: snippet.format,
    text,
    instructions: snippet.instructions,
  };
}
