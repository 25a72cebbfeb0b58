//! Gemini CLI: `~/.gemini/settings.json` (user) or `.gemini/settings.json`
//! (project, overrides user), `mcpServers` → `command`, `args`, `env`, no `type`
//! (google-gemini/gemini-cli `docs/tools/mcp-server.md` and
//! `docs/reference/configuration.md`, snapshot 2026-08-21; `settings.ts` reads
//! the file through `strip-json-comments`, so comments are kept on install).
//! The home is `$GEMINI_CLI_HOME` when set (`packages/core/src/utils/paths.ts`,
//! `homedir()`), so the user file is `$GEMINI_CLI_HOME/.gemini/settings.json`.
//!
//! `$VAR` and `${VAR}` are expanded across the whole settings file
//! (`resolveEnvVarsInObject` in `packages/cli/src/config/settings.ts`). The CLI
//! strips variables named like `*KEY*`/`*TOKEN*` from what a server inherits,
//! so the key must be named in `env` explicitly, as here. The docs warn
//! against `_` in server names (tool names are split on the first `_`).
//! `gemini mcp add` defaults to project scope, and wants `--` before the first
//! argument that starts with `-`. Remote: `httpUrl` + `headers` (docs,
//! "HTTP-based MCP Server with custom headers").

use std::path::Path;

use super::super::paths::{Home, Scope, Syntax, join};
use super::super::spec::{ServerSpec, StdioEntry, project, servers_file, user_os};
use super::super::validate::{MCP_SERVERS, map};
use super::super::{API_KEY_ENV, Format, Location, Snippet};
use super::{
    ClientFile, ClientSpec, Remote, RemoteShape, braces, env_reference_flag, no_check,
    no_more_files, remote_entry, remote_file, shell_key_note, shell_line,
};
use crate::error::Result;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "Gemini CLI",
    aliases: &["gemini-cli"],
    shape: map(MCP_SERVERS),
    secret_ref: Some(braces),
    render: |spec| Ok(vec![json(spec)?, shell(spec)?]),
    check: no_check,
    cli: Some("gemini"),
    default_scope: Scope::User,
    file,
    also_read: no_more_files,
    no_file: None,
    remote: Remote::Form {
        shape: REMOTE,
        render: remote,
    },
};

const REMOTE: RemoteShape = RemoteShape {
    url: "httpUrl",
    ..RemoteShape::url(None, true)
};

fn file(home: &Home, scope: Scope, project: &Path, _: &str) -> Option<ClientFile> {
    let base = match scope {
        Scope::User => home
            .var("GEMINI_CLI_HOME")
            .unwrap_or_else(|| home.dir.clone()),
        Scope::Project => project.to_path_buf(),
        Scope::Local => return None,
    };
    Some(ClientFile::new(
        join(&base, &[".gemini", "settings.json"]),
        Syntax::Jsonc,
    ))
}

fn locations() -> Vec<Location> {
    vec![
        user_os("macOS/Linux", "~/.gemini/settings.json"),
        user_os("Windows", "%USERPROFILE%\\.gemini\\settings.json"),
        user_os(
            "with GEMINI_CLI_HOME set",
            "$GEMINI_CLI_HOME/.gemini/settings.json",
        ),
        project(".gemini/settings.json"),
    ]
}

fn what(spec: &ServerSpec, stdio: bool) -> String {
    let mut what = String::from(
        "Merge this entry into \"mcpServers\" of ~/.gemini/settings.json (every project) or \
         .gemini/settings.json (this project).",
    );
    if stdio {
        what.push_str(
            " Gemini CLI shows stdio servers as connected only in a trusted folder (`gemini \
             trust`).",
        );
    }
    if spec.name.contains('_') {
        what.push_str(" Gemini CLI advises against '_' in server names; prefer '-'.");
    }
    if spec.by_reference() {
        what.push_str(&format!(
            " Gemini CLI expands ${{{API_KEY_ENV}}} from the environment gemini is started in: \
             export {API_KEY_ENV} first."
        ));
    }
    what
}

fn json(spec: &ServerSpec) -> Result<Snippet> {
    let text = servers_file("mcpServers", &spec.name, StdioEntry::new(spec, None))?;
    Ok(spec.snippet(Format::Json, locations(), text, &what(spec, true)))
}

fn remote(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    let text = remote_file(spec, "mcpServers", remote_entry(spec, &REMOTE))?;
    Ok(vec![spec.snippet(
        Format::Json,
        locations(),
        text,
        &what(spec, false),
    )])
}

/// `gemini mcp add -s user [-e K=$K] NAME BIN mcp -- --site DIR ...`.
fn shell(spec: &ServerSpec) -> Result<Snippet> {
    let mut words: Vec<String> = ["gemini", "mcp", "add", "-s", "user"]
        .map(String::from)
        .to_vec();
    if spec.key.is_some() {
        words.extend(["-e".into(), env_reference_flag()]);
    }
    words.push(spec.name.clone());
    words.push(spec.command.clone());
    let dash = spec.args.iter().position(|a| a.starts_with('-'));
    for (i, arg) in spec.args.iter().enumerate() {
        if Some(i) == dash {
            words.push("--".into());
        }
        words.push(arg.clone());
    }
    let mut instructions = String::from(
        "Or run this (POSIX shell); -s user writes ~/.gemini/settings.json (drop it for this \
         project only).",
    );
    instructions.push_str(&shell_key_note(spec));
    Ok(Snippet {
        format: Format::Shell,
        locations: Vec::new(),
        text: shell_line(&words),
        instructions,
        contains_secret: false,
    })
}
