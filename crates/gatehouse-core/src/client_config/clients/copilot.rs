//! GitHub Copilot CLI: `~/.copilot/mcp-config.json` (`COPILOT_HOME` moves
//! `~/.copilot`); projects may add `.mcp.json` or `.github/mcp.json`, loaded once
//! the folder is trusted. `mcpServers` → `type` (`local`, the default, or
//! `stdio`), `command`, `args`, `env`, and `tools` (documented as required;
//! `["*"]` for all). `env` expands `$VAR`, `${VAR}` and `${VAR:-default}`; only
//! PATH is inherited. Remote: `type: "http"`, `url`, `headers` (with the same
//! `${VAR}` expansion), `tools`. Sources: github/docs
//! `content/copilot/how-tos/copilot-cli/customize-copilot/add-mcp-servers.md`,
//! `content/copilot/reference/copilot-cli-reference/cli-command-reference.md`;
//! rechecked 2026-12-03 against docs.github.com "Adding MCP servers for GitHub
//! Copilot CLI" (Local/STDIO behave the same; only PATH is inherited; Tools `*`
//! for all; `copilot mcp add NAME --env K=V -- COMMAND ARGS`).
//!
//! The project file is `.github/mcp.json`, not `.mcp.json`: Claude Code owns
//! `.mcp.json` and keeps its entry there under the same `mcpServers.gatehouse`
//! key in another shape (`type: "stdio"`, no `tools`), so writing Copilot's
//! entry there replaced Claude Code's. A project file is committed, so it only
//! ever holds a reference to the key (`install` refuses a raw key there).

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::super::paths::{Home, Scope, Syntax, join};
use super::super::spec::{ServerSpec, StdioEntry, project, servers_file, user_os};
use super::super::validate::{MCP_SERVERS, Shape, map};
use super::super::{API_KEY_ENV, Format, Location, Snippet};
use super::{
    ClientFile, ClientSpec, Remote, RemoteShape, braces, env_reference_flag, no_more_files,
    remote_entry, remote_file, shell_key_note, shell_line,
};
use crate::error::Result;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "GitHub Copilot CLI",
    aliases: &["copilot-cli", "github-copilot", "github-copilot-cli"],
    shape: Shape {
        kind: Some(("type", "local")),
        ..map(MCP_SERVERS)
    },
    secret_ref: Some(braces),
    render: |spec| Ok(vec![json(spec)?, shell(spec)?]),
    check,
    cli: Some("copilot"),
    default_scope: Scope::User,
    file,
    also_read: no_more_files,
    no_file: None,
    remote: Remote::Form {
        shape: REMOTE,
        render: remote,
    },
};

const REMOTE: RemoteShape = RemoteShape::url(Some(("type", "http")), true);

fn file(home: &Home, scope: Scope, project: &Path, _: &str) -> Option<ClientFile> {
    let path = match scope {
        Scope::User => home
            .var("COPILOT_HOME")
            .unwrap_or_else(|| home.dir.join(".copilot"))
            .join("mcp-config.json"),
        Scope::Project => join(project, &[".github", "mcp.json"]),
        Scope::Local => return None,
    };
    Some(ClientFile::new(path, Syntax::Json))
}

fn locations() -> Vec<Location> {
    vec![
        user_os("macOS/Linux", "~/.copilot/mcp-config.json"),
        user_os("Windows", "%USERPROFILE%\\.copilot\\mcp-config.json"),
        project(".github/mcp.json"),
    ]
}

fn what(spec: &ServerSpec) -> String {
    let mut what = String::from(
        "Merge this entry into \"mcpServers\" of ~/.copilot/mcp-config.json (or a project's \
         .github/mcp.json, loaded after you trust the folder; .mcp.json is Claude Code's file).",
    );
    if spec.by_reference() {
        what.push_str(&format!(
            " Copilot CLI expands ${{{API_KEY_ENV}}} from the environment copilot runs in: \
             export {API_KEY_ENV} first."
        ));
    }
    what
}

fn json(spec: &ServerSpec) -> Result<Snippet> {
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
    Ok(spec.snippet(Format::Json, locations(), text, &what(spec)))
}

fn remote(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    let mut entry = remote_entry(spec, &REMOTE);
    entry.push("tools", vec!["*"]);
    let text = remote_file(spec, "mcpServers", entry)?;
    Ok(vec![spec.snippet(
        Format::Json,
        locations(),
        text,
        &what(spec),
    )])
}

/// `copilot mcp add NAME [--env K=${K}] --tools '*' -- BIN ARGS` (user scope).
fn shell(spec: &ServerSpec) -> Result<Snippet> {
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

fn check(_: &ServerSpec, _: &Value, entry: &Value) -> std::result::Result<(), &'static str> {
    match entry.get("tools").and_then(Value::as_array) {
        Some(tools) if !tools.is_empty() => Ok(()),
        _ => Err("lacks the required tools list"),
    }
}
