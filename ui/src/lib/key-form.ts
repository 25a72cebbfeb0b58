/**
 * The key form's pure parts: the restriction fields turned into what core
 * takes (core checks every field and words the errors), and the tool
 * checkboxes to show for a key's roles and current allowlist.
 */
import type { RestrictionForm, StatusScope, ToolChoice } from "../ipc";

/** What the restriction fields hold. */
export interface RestrictionFields {
  /** Whether only the ticked tools may be called. */
  limitTools: boolean;
  tools: readonly string[];
  readOnly: boolean;
  content: string;
  status: StatusScope;
  rate: string;
  from: string;
}

/** The fields as core's form: an unticked limit is no allowlist at all. */
export function restrictionForm(f: RestrictionFields): RestrictionForm {
  return {
    tools: f.limitTools ? [...f.tools] : null,
    read_only: f.readOnly,
    content: f.content.trim(),
    content_status: f.status,
    rate: f.rate.trim(),
    from: f.from.trim(),
  };
}

/** One tool checkbox. */
export interface ToolBox {
  name: string;
  title: string;
  effect: string;
  checked: boolean;
  /** Listed on the key, but its roles do not allow it (so it stays unusable). */
  beyondRoles: boolean;
}

/**
 * The roles' tools, ticked when the allowlist names them; tools the list
 * names that the roles do not allow come last, so an edit never drops them
 * unseen.
 */
export function toolBoxes(choices: readonly ToolChoice[], allowlist: readonly string[] | null): ToolBox[] {
  const listed = new Set(allowlist ?? []);
  const boxes: ToolBox[] = choices.map((c) => ({
    name: c.name,
    title: c.title,
    effect: c.effect,
    checked: listed.has(c.name),
    beyondRoles: false,
  }));
  for (const name of allowlist ?? []) {
    if (!choices.some((c) => c.name === name)) {
      boxes.push({ name, title: name, effect: "", checked: true, beyondRoles: true });
    }
  }
  return boxes;
}
