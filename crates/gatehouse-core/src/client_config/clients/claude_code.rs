//! Claude Code: a project's `.mcp.json`, `mcpServers` → `type: "stdio"`,
//! `command`, `args`, `env`, and the `claude mcp add` line
//! (<https://code.claude.com/docs/en/mcp>, "Environment variable expansion in
//! .mcp.json" and "MCP installation scopes").
//!
//! The CLI expands `${VAR}` in `command`, `args`, `env`, `url` and `headers`;
//! the Claude desktop app's Code tab does not expand it in `.mcp.json`. Scopes:
//! `local` (the default of `claude mcp add`, kept in `~/.claude.json` under the
//! project's path, never committed), `project` (`.mcp.json`, committed) and
//! `user` (top-level `mcpServers` in `~/.claude.json`). An inline key therefore
//! goes to `local`, never to the committed `.mcp.json`.

use super::super::spec::{ServerSpec, StdioEntry, local, project, servers_file, user};
use super::super::{API_KEY_ENV, Format, Snippet};
use super::{env_reference_flag, shell_key_note, shell_line};
use crate::error::Result;

pub(super) fn json(spec: &ServerSpec) -> Result<Snippet> {
    let text = servers_file(
        "mcpServers",
        &spec.name,
        StdioEntry::new(spec, Some("stdio")),
    )?;
    let (locations, mut what) = if spec.inline_key().is_some() {
        (
            vec![local(
                "~/.claude.json (projects → this project → mcpServers)",
            )],
            String::from(
                "With the key inline, keep this out of the committed .mcp.json: run `gatehouse \
                 config install claude-code --scope local` in the project (it writes \
                 ~/.claude.json under this project), or `--scope user` for every project.",
            ),
        )
    } else {
        (
            vec![project(".mcp.json"), user("~/.claude.json (mcpServers)")],
            String::from(
                "Save as .mcp.json at the project root (merge into \"mcpServers\" if the file \
                 exists); Claude Code asks you to approve project servers on first use.",
            ),
        )
    };
    if spec.by_reference() {
        what.push_str(&format!(
            " The claude CLI expands ${{{API_KEY_ENV}}} from the environment it is started in: \
             export {API_KEY_ENV} before running claude. The Claude desktop app does not expand \
             variables in .mcp.json; use the CLI, or an inline key with --scope local, there."
        ));
    }
    Ok(spec.snippet(Format::Json, locations, text, &what))
}

/// The `claude mcp add` line equivalent to [`json`].
///
/// The name comes before `-e`: `-e/--env` is variadic and swallows a following
/// positional (anthropics/claude-code#62332). The line never carries a raw key,
/// since a command line lands in shell history and in `ps`: it stores the
/// `${GATEHOUSE_API_KEY}` reference, single-quoted so the shell leaves it alone.
/// With a key at all it targets `--scope local`, which stays out of git.
pub(super) fn shell(spec: &ServerSpec) -> Result<Snippet> {
    let scope = if spec.key.is_some() && !spec.by_reference() {
        "local"
    } else {
        "project"
    };
    let mut words: Vec<String> = ["claude", "mcp", "add", &spec.name, "--scope", scope]
        .map(String::from)
        .to_vec();
    words.extend(["--transport".into(), "stdio".into()]);
    if spec.key.is_some() {
        words.extend(["-e".into(), env_reference_flag()]);
    }
    words.push("--".into());
    words.push(spec.command.clone());
    words.extend(spec.args.iter().cloned());
    let mut instructions = if scope == "local" {
        String::from(
            "Or run this in the project folder (POSIX shell); --scope local keeps the entry in \
             ~/.claude.json for this project only, out of git.",
        )
    } else {
        String::from(
            "Or run this in the project folder (POSIX shell); it writes the same entry to \
             .mcp.json. Use --scope user instead to have it in every project.",
        )
    };
    instructions.push_str(&shell_key_note(spec));
    Ok(Snippet {
        format: Format::Shell,
        locations: Vec::new(),
        text: shell_line(&words),
        instructions,
        contains_secret: false,
    })
}
