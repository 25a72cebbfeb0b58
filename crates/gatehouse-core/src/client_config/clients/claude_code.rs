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
//!
//! Remote: `type: "http"`, `url`, `headers` (same page, "Option 1: Add a remote
//! HTTP server": `claude mcp add --transport http NAME URL --header "Authorization:
//! Bearer …"`). A server that advertises OAuth metadata makes Claude Code switch
//! to OAuth and drop the configured headers; `gatehouse serve` answers 404 there.

use std::path::Path;

use super::super::paths::{Home, Scope, Syntax};
use super::super::spec::{ServerSpec, StdioEntry, local, project, servers_file, user};
use super::super::validate::{Shape, map};
use super::super::{API_KEY_ENV, Format, Location, Snippet};
use super::{
    ClientFile, ClientSpec, Remote, RemoteShape, braces, env_reference_flag, no_check,
    no_more_files, remote_entry, remote_file, shell_key_note, shell_line,
};
use crate::error::Result;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "Claude Code",
    aliases: &[],
    shape: Shape {
        kind: Some(("type", "stdio")),
        ..map(&["mcpServers"])
    },
    secret_ref: Some(braces),
    render: |spec| Ok(vec![json(spec)?, shell(spec)?]),
    check: no_check,
    cli: Some("claude"),
    default_scope: Scope::User,
    file,
    also_read: no_more_files,
    no_file: None,
    remote: Remote::Form {
        shape: REMOTE,
        render: |spec| Ok(vec![remote_json(spec)?, remote_shell(spec)?]),
    },
};

const REMOTE: RemoteShape = RemoteShape::url(Some(("type", "http")), true);

fn file(home: &Home, scope: Scope, project: &Path, _: &str) -> Option<ClientFile> {
    Some(match scope {
        Scope::User => ClientFile::new(home.dir.join(".claude.json"), Syntax::Json),
        Scope::Project => ClientFile::new(project.join(".mcp.json"), Syntax::Json),
        Scope::Local => ClientFile {
            servers: Some(vec![
                "projects".into(),
                project.to_string_lossy().into_owned(),
                "mcpServers".into(),
            ]),
            ..ClientFile::new(home.dir.join(".claude.json"), Syntax::Json)
        },
    })
}

/// Where the entry goes: `local` with a key in clear (never the committed
/// `.mcp.json`), else the project file or the user's.
fn locations(spec: &ServerSpec) -> (Vec<Location>, String) {
    if spec.inline_key().is_some() {
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
    }
}

fn json(spec: &ServerSpec) -> Result<Snippet> {
    let text = servers_file(
        "mcpServers",
        &spec.name,
        StdioEntry::new(spec, Some("stdio")),
    )?;
    let (locations, mut what) = locations(spec);
    if spec.by_reference() {
        what.push_str(&format!(
            " The claude CLI expands ${{{API_KEY_ENV}}} from the environment it is started in: \
             export {API_KEY_ENV} before running claude. The Claude desktop app does not expand \
             variables in .mcp.json; use the CLI, or an inline key with --scope local, there."
        ));
    }
    Ok(spec.snippet(Format::Json, locations, text, &what))
}

fn remote_json(spec: &ServerSpec) -> Result<Snippet> {
    let text = remote_file(spec, "mcpServers", remote_entry(spec, &REMOTE))?;
    let (locations, mut what) = locations(spec);
    if spec.by_reference() {
        what.push_str(&format!(
            " The claude CLI expands ${{{API_KEY_ENV}}} in headers from the environment it is \
             started in: export {API_KEY_ENV} before running claude."
        ));
    }
    Ok(spec.snippet(Format::Json, locations, text, &what))
}

/// The scope of the `mcp add` lines: `local` when a key is involved but not
/// referenced (the line itself never carries a raw key), else `project`.
fn shell_scope(spec: &ServerSpec) -> &'static str {
    if spec.key.is_some() && !spec.by_reference() {
        "local"
    } else {
        "project"
    }
}

fn shell_instructions(spec: &ServerSpec, scope: &str) -> String {
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
    instructions
}

/// The `claude mcp add` line equivalent to [`json`].
///
/// The name comes before `-e`: `-e/--env` is variadic and swallows a following
/// positional (anthropics/claude-code#62332). The line never carries a raw key,
/// since a command line lands in shell history and in `ps`: it stores the
/// `${GATEHOUSE_API_KEY}` reference, single-quoted so the shell leaves it alone.
/// With a key at all it targets `--scope local`, which stays out of git.
fn shell(spec: &ServerSpec) -> Result<Snippet> {
    let scope = shell_scope(spec);
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
    Ok(Snippet {
        format: Format::Shell,
        locations: Vec::new(),
        text: shell_line(&words),
        instructions: shell_instructions(spec, scope),
        contains_secret: false,
    })
}

/// `claude mcp add --transport http --scope S NAME URL [--header …]`: the
/// header references the key (expanded when claude connects), never holds it.
fn remote_shell(spec: &ServerSpec) -> Result<Snippet> {
    let scope = shell_scope(spec);
    let mut words: Vec<String> = [
        "claude",
        "mcp",
        "add",
        "--transport",
        "http",
        "--scope",
        scope,
    ]
    .map(String::from)
    .to_vec();
    words.push(spec.name.clone());
    words.push(spec.url.clone().unwrap_or_default());
    if spec.key.is_some() {
        words.extend([
            "--header".into(),
            format!("Authorization: Bearer ${{{API_KEY_ENV}}}"),
        ]);
    }
    Ok(Snippet {
        format: Format::Shell,
        locations: Vec::new(),
        text: shell_line(&words),
        instructions: shell_instructions(spec, scope),
        contains_secret: false,
    })
}
