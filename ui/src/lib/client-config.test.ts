import { describe, expect, it } from "vitest";
import type { ClientChoice, Snippet } from "../generated/ipc-types";
import { KEY_MASK, installState, pickClient, secretRefState, snippetModel } from "./client-config";

const desktop: ClientChoice = { id: "claude-desktop", name: "Claude Desktop", secret_ref: false, installable: true };
const vscode: ClientChoice = { id: "vscode", name: "VS Code", secret_ref: true, installable: true };
const jetbrains: ClientChoice = { id: "jetbrains", name: "JetBrains AI Assistant", secret_ref: false, installable: false };
const choices = [desktop, vscode, jetbrains];

describe("pickClient", () => {
  it("keeps the client shown while core offers it, else takes core's first", () => {
    expect(pickClient(choices, "vscode")).toBe(vscode);
    expect(pickClient(choices, "")).toBe(desktop);
    expect(pickClient(choices, "gone")).toBe(desktop);
    expect(pickClient([], "vscode")).toBeNull();
  });
});

describe("secretRefState", () => {
  it("keeps the choice for a client that can reference the key", () => {
    expect(secretRefState(vscode, true)).toMatchObject({ enabled: true, checked: true });
    expect(secretRefState(vscode, false)).toMatchObject({ enabled: true, checked: false });
  });

  it("unticks and explains for a client that cannot", () => {
    const s = secretRefState(desktop, true);
    expect(s).toMatchObject({ enabled: false, checked: false });
    expect(s.title).toContain("Claude Desktop cannot reference a secret");
    expect(secretRefState(null, true).enabled).toBe(false);
  });
});

describe("installState", () => {
  it("offers install for a client with a file and says why not otherwise", () => {
    expect(installState(vscode)).toEqual({ available: true, note: "" });
    const j = installState(jetbrains);
    expect(j.available).toBe(false);
    expect(j.note).toContain("JetBrains AI Assistant");
    expect(installState(null).available).toBe(false);
  });
});

describe("snippetModel", () => {
  const file: Snippet = {
    format: "json",
    locations: [
      { scope: "user", os: "macOS", path: "~/Library/Application Support/Claude/claude_desktop_config.json" },
      { scope: "project", path: ".vscode/mcp.json" },
      { scope: "local", path: "~/.claude.json" },
    ],
    text: "{}",
    instructions: "Restart the client.",
    contains_secret: true,
  };
  const shell: Snippet = { format: "shell", locations: [], text: "claude mcp add …", instructions: "Run it.", contains_secret: false };

  it("shows a file snippet's paths with their scope, and its secret warning", () => {
    const m = snippetModel(file, 0);
    expect(m.idSuffix).toBe("");
    expect(m.where).toEqual({
      kind: "files",
      paths: [
        "User, macOS: ~/Library/Application Support/Claude/claude_desktop_config.json",
        "Project: .vscode/mcp.json",
        "Local: ~/.claude.json",
      ],
    });
    expect(m.warnSecret).toBe(true);
  });

  it("shows a snippet without a file as a command line, with suffixed ids", () => {
    const m = snippetModel(shell, 1);
    expect(m.where).toEqual({ kind: "command" });
    expect(m.idSuffix).toBe("-1");
    expect(m.warnSecret).toBe(false);
    expect(m.format).toBe("shell");
  });

  const withKey: Snippet = {
    ...file,
    text: `{"env": {"GATEHOUSE_API_KEY": "${KEY_MASK}"}, "also": "${KEY_MASK}"}`,
  };

  it("puts the key the mint panel holds in place of every mask", () => {
    const m = snippetModel(withKey, 0, "gatehouse_sk_abc");
    expect(m.text).toBe('{"env": {"GATEHOUSE_API_KEY": "gatehouse_sk_abc"}, "also": "gatehouse_sk_abc"}');
    expect(m.keyMasked).toBe(false);
    expect(m.warnSecret).toBe(true);
  });

  it("keeps the mask, and says so instead of warning, without the key", () => {
    const m = snippetModel(withKey, 0);
    expect(m.text).toBe(withKey.text);
    expect(m.keyMasked).toBe(true);
    expect(m.warnSecret).toBe(false);
  });

  it("leaves a text without the mask as it is, key or not", () => {
    expect(snippetModel(shell, 1, "gatehouse_sk_abc").text).toBe(shell.text);
    expect(snippetModel(shell, 1, "gatehouse_sk_abc").keyMasked).toBe(false);
  });
});
