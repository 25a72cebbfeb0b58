import "../styles/connections.css";
import { errorView } from "../components/error-view";
import { TailPanel } from "../components/tail-panel";
import { h } from "../dom";
import {
  type ActorChoice,
  type ActorComparison,
  type ActorManifest,
  type ComparedTool,
  type PreviewChoices,
  type Role,
  type TailMessage,
  toGatehouseError,
  call,
} from "../ipc";
import { currentSite } from "../session";
import { noSitePanel } from "./common";
import { type Screen, code, panel, screenFrame } from "./screen";

type Side = "left" | "right";

/** One side's actor picker; `read()` gives the choice (null: nobody, for the right side). */
function picker(side: Side, choices: PreviewChoices): { element: HTMLElement; read: () => ActorChoice | null } {
  const id = (s: string) => `preview-${side}-${s}`;
  const kind = h(
    "select",
    { id: id("kind"), class: "input" },
    side === "right" ? h("option", { value: "none" }, "nobody (no comparison)") : null,
    h("option", { value: "public" }, "anonymous (public)"),
    h("option", { value: "roles", disabled: !choices.scratch }, choices.scratch ? "roles (scratch site)" : "roles (scratch sites only)"),
    h("option", { value: "user", disabled: choices.users.length === 0 }, "a user"),
    h("option", { value: "key", disabled: choices.keys.length === 0 }, "a key"),
  );
  const roles = h(
    "fieldset",
    { id: id("roles"), class: "inline-checks" },
    h("legend", {}, "Roles"),
    ...choices.roles.map((r) =>
      h("label", { class: "check" }, h("input", { type: "checkbox", value: r, id: id(`role-${r}`) }), ` ${r}`),
    ),
  );
  const user = h("select", { id: id("user"), class: "input" }, ...choices.users.map((u) => h("option", { value: u }, u)));
  const key = h(
    "select",
    { id: id("key"), class: "input" },
    ...choices.keys.map((k) => h("option", { value: k.id }, `${k.label} (${k.id}, ${k.roles.join(", ")})`)),
  );
  const userField = h("label", { class: "field" }, "User", user);
  const keyField = h("label", { class: "field" }, "Key", key);
  const sync = () => {
    roles.hidden = kind.value !== "roles";
    userField.hidden = kind.value !== "user";
    keyField.hidden = kind.value !== "key";
  };
  kind.addEventListener("change", sync);
  sync();
  const read = (): ActorChoice | null => {
    switch (kind.value) {
      case "public":
        return { kind: "public" };
      case "roles":
        return {
          kind: "roles",
          roles: Array.from(roles.querySelectorAll<HTMLInputElement>("input:checked"), (i) => i.value as Role),
        };
      case "user":
        return { kind: "user", email: user.value };
      case "key":
        return { kind: "key", key_id: key.value };
      default:
        return null;
    }
  };
  return {
    element: h(
      "div",
      { class: "preview-picker", "data-side": side },
      h("label", { class: "field", for: kind.id }, side === "left" ? "Actor" : "Compare with"),
      kind,
      roles,
      userField,
      keyField,
    ),
    read,
  };
}

/** The server's stderr in the tail panel connections use; its run is over, so the stream is too. */
function stderrView(side: Side, actor: string, messages: TailMessage[]): HTMLElement {
  const tail = new TailPanel(`stderr · ${actor}`);
  tail.setActive(false);
  for (const message of messages) tail.push(message);
  tail.element.id = `preview-${side}-stderr`;
  return tail.element;
}

function manifestView(side: Side, m: ActorManifest, rows: ComparedTool[], stderr: TailMessage[]): HTMLElement {
  const only = side === "left" ? "only_left" : "only_right";
  const presence = new Map(rows.map((r) => [r.name, r]));
  return h(
    "section",
    { id: `preview-${side}`, class: "preview-side", "data-actor": m.actor },
    h("h3", {}, m.actor),
    h(
      "p",
      { class: "muted small" },
      `${[m.server_name, m.server_version].filter(Boolean).join(" ")} · ${m.protocol_version} · ${String(m.tools.length)} tools · sandbox grants ${m.granted_paths.join(", ")}`,
    ),
    ...m.isolation_warnings.map((w) => h("p", { class: "notice" }, w)),
    h(
      "ul",
      { id: `preview-${side}-tools`, class: "tool-list" },
      ...m.tools.map((t) => {
        const row = presence.get(t.name);
        const mine = row?.presence === only;
        return h(
          "li",
          { "data-tool": t.name, "data-only": String(mine), class: mine ? "tool-only" : undefined },
          h("span", { class: "tool-name mono" }, t.name),
          mine ? h("span", { class: "badge badge-warn" }, "only here") : null,
          row?.differs ? h("span", { class: "badge" }, "differs") : null,
          t.description ? h("div", { class: "muted small" }, t.description) : null,
        );
      }),
    ),
    stderrView(side, m.actor, stderr),
  );
}

function comparisonView(c: ActorComparison): HTMLElement {
  return h(
    "div",
    { id: "preview-result", class: c.right ? "preview-grid" : undefined },
    manifestView("left", c.left, c.rows, c.left_stderr),
    c.right ? manifestView("right", c.right, c.rows, c.right_stderr) : null,
  );
}

/** What `gatehouse mcp` really serves an actor, and two actors side by side. */
export const actorPreview: Screen = {
  id: "actor-preview",
  title: "Actor preview",
  render(signal) {
    const frame = (...body: HTMLElement[]) =>
      screenFrame(
        "Actor preview",
        ["The tools ", code("gatehouse mcp"), " really serves an actor: it is started sandboxed with access to this site only, as the actor you pick."],
        ...body,
      );
    if (!currentSite()) return frame(noSitePanel());
    const pickers = h("div", { class: "preview-pickers" });
    const run = h("button", { type: "button", id: "preview-run", class: "button button-primary" }, "Preview");
    const out = h("div", { id: "preview-out", "aria-live": "polite" });
    let left: ReturnType<typeof picker> | null = null;
    let right: ReturnType<typeof picker> | null = null;
    call("preview_choices", {})
      .then((choices) => {
        left = picker("left", choices);
        right = picker("right", choices);
        pickers.replaceChildren(left.element, right.element);
      })
      .catch((raw: unknown) => {
        out.replaceChildren(errorView(toGatehouseError(raw)));
      });
    run.addEventListener("click", () => {
      const l = left?.read();
      if (!l) return;
      run.disabled = true;
      out.replaceChildren(h("p", { class: "muted", id: "preview-running" }, "starting gatehouse mcp…"));
      call("preview_actors", { left: l, right: right?.read() ?? null })
        .then((c) => {
          if (!signal.aborted) out.replaceChildren(comparisonView(c));
        })
        .catch((raw: unknown) => {
          out.replaceChildren(errorView(toGatehouseError(raw)));
        })
        .finally(() => {
          run.disabled = false;
        });
    });
    return frame(panel("Who", run, pickers), out);
  },
};
