//! GitHub Copilot CLI: `~/.copilot/mcp-config.json` (`COPILOT_HOME` moves
//! `~/.copilot`); projects may add `.mcp.json` or `.github/mcp.json`, loaded once
//! the folder is trusted. `mcpServers` → `type` (`local`, the default, or
//! `stdio`), `command`, `args`, `env`, and `tools` (documented as required;
//! `["*"]` for all). `env` expands `$VAR`, `${VAR}` and `${VAR:-default}`; only
//! PATH is inherited. Sources: github/docs
//! `content/copilot/how-tos/copilot-cli/customize-copilot/add-mcp-servers.md`,
//! `content/copilot/reference/copilot-cli-reference/cli-command-reference.md`;
//! rechecked 2026-12-03 against docs.github.com "Adding MCP servers for GitHub
//! Copilot CLI" (Local/STDIO behave the same; only PATH is inherited; Tools `*`
//! for all; `copilot mcp add NAME --env K=V -- COMMAND ARGS`).

use serde::Serialize;
use serde_json::Value;

use super::super::spec::{ServerSpec, StdioEntry, project, servers_file, user_os};
use super::super::{API_KEY_ENV, Format, Snippet};
use super::{env_reference_flag, shell_key_note, shell_line};
use crate::error::Result;

pub(super) fn json(spec: &ServerSpec) -> Result<Snippet> {
    #[derive(Serialize)]
    struct Entry<'a> {
        #[serde(flatten)]
        entry: StdioEntry<'a>,
        tools: [&'static str; 1],
    }
    let entry = Entry {
        entry: StdioEntry::new(spec, Some("local")),
        tools: ["*"],
    };
    let text = servers_file("mcpServers", &spec.name, entry)?;
    let locations = vec![
        user_os("macOS/Linux", "~/.copilot/mcp-config.json"),
        user_os("Windows", "%USERPROFILE%\\.copilot\\mcp-config.json"),
        project(".mcp.json"),
    ];
    let mut what = String::from(
        "Merge this entry into \"mcpServers\" of ~/.copilot/mcp-config.json (or a project's \
         .mcp.json, loaded after you trust the folder).",
    );
    if spec.by_reference() {
        what.push_str(&format!(
            " Copilot CLI expands ${{{API_KEY_ENV}}} from the environment copilot runs in: \
             export {API_KEY_ENV} first."
        ));
    }
    Ok(spec.snippet(Format::Json, locations, text, &what))
}

/// `copilot mcp add NAME [--env K=${K}] --tools '*' -- BIN ARGS` (user scope).
pub(super) fn shell(spec: &ServerSpec) -> Result<Snippet> {
    let mut words: Vec<String> = ["copilot", "mcp", "add", &spec.name]
        .map(String::from)
        .to_vec();
    if spec.key.is_some() {
        words.extend(["--env".into(), env_reference_flag()]);
    }
    words.extend(["--tools".into(), "*".into(), "--".into()]);
    words.push(spec.command.clone());
    words.extend(spec.args.iter().cloned());
    let mut instructions =
        String::from("Or run this (POSIX shell); it writes ~/.copilot/mcp-config.json.");
    instructions.push_str(&shell_key_note(spec));
    Ok(Snippet {
        format: Format::Shell,
        locations: Vec::new(),
        text: shell_line(&words),
        instructions,
        contains_secret: false,
    })
}

pub(super) fn check(entry: &Value) -> std::result::Result<(), &'static str> {
    match entry.get("tools").and_then(Value::as_array) {
        Some(tools) if !tools.is_empty() => Ok(()),
        _ => Err("lacks the required tools list"),
    }
}
