//! Gemini CLI: `~/.gemini/settings.json` (user) or `.gemini/settings.json`
//! (project, overrides user), `mcpServers` → `command`, `args`, `env`, no `type`
//! (google-gemini/gemini-cli `docs/tools/mcp-server.md` and
//! `docs/reference/configuration.md`, snapshot 2026-08-21; `settings.ts` reads
//! the file through `strip-json-comments`, so comments are kept on install).
//!
//! `env` values expand `$VAR` and `${VAR}`. The CLI strips variables named like
//! `*KEY*`/`*TOKEN*` from what a server inherits, so the key must be named in
//! `env` explicitly, as here. The docs warn against `_` in server names (tool
//! names are split on the first `_`). `gemini mcp add` defaults to project
//! scope, and wants `--` before the first argument that starts with `-`.

use super::super::spec::{ServerSpec, StdioEntry, project, servers_file, user_os};
use super::super::{API_KEY_ENV, Format, Snippet};
use super::{env_reference_flag, shell_key_note, shell_line};
use crate::error::Result;

pub(super) fn json(spec: &ServerSpec) -> Result<Snippet> {
    let text = servers_file("mcpServers", &spec.name, StdioEntry::new(spec, None))?;
    let locations = vec![
        user_os("macOS/Linux", "~/.gemini/settings.json"),
        user_os("Windows", "%USERPROFILE%\\.gemini\\settings.json"),
        project(".gemini/settings.json"),
    ];
    let mut what = String::from(
        "Merge this entry into \"mcpServers\" of ~/.gemini/settings.json (every project) or \
         .gemini/settings.json (this project). Gemini CLI shows stdio servers as connected only \
         in a trusted folder (`gemini trust`).",
    );
    if spec.name.contains('_') {
        what.push_str(" Gemini CLI advises against '_' in server names; prefer '-'.");
    }
    if spec.by_reference() {
        what.push_str(&format!(
            " Gemini CLI expands ${{{API_KEY_ENV}}} from the environment gemini is started in: \
             export {API_KEY_ENV} first."
        ));
    }
    Ok(spec.snippet(Format::Json, locations, text, &what))
}

/// `gemini mcp add -s user [-e K=$K] NAME BIN mcp -- --site DIR ...`.
pub(super) fn shell(spec: &ServerSpec) -> Result<Snippet> {
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
