//! One renderer per client. Each file holds the client's snippet(s), the
//! documentation or source its format was checked against, and any check its
//! entry needs beyond the common [`Shape`](super::Shape).

mod claude_code;
mod claude_desktop;
mod cline;
mod codex;
mod continue_dev;
mod copilot;
mod cursor;
mod gemini;
mod goose;
mod jetbrains;
mod kiro;
mod lm_studio;
mod opencode;
mod roo_code;
mod vscode;
mod windsurf;
mod zed;

use serde_json::Value;

use super::spec::{ServerSpec, sh_quote};
use super::{API_KEY_ENV, Client, Snippet};
use crate::error::Result;

pub(super) use vscode::input_id as vscode_input_id;

/// Every snippet for `spec.client`, the main one (the one `install` writes) first.
pub(super) fn render(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    Ok(match spec.client {
        Client::ClaudeDesktop => vec![claude_desktop::render(spec)?],
        Client::ClaudeCode => vec![claude_code::json(spec)?, claude_code::shell(spec)?],
        Client::Cursor => vec![cursor::render(spec)?],
        Client::VsCode => vec![vscode::render(spec)?],
        Client::Windsurf => vec![windsurf::render(spec)?],
        Client::Zed => vec![zed::render(spec)?],
        Client::Codex => vec![codex::render(spec)?],
        Client::Continue => vec![continue_dev::render(spec)?],
        Client::Gemini => vec![gemini::json(spec)?, gemini::shell(spec)?],
        Client::Cline => vec![cline::render(spec)?],
        Client::RooCode => vec![roo_code::render(spec)?],
        Client::JetBrains => vec![jetbrains::render(spec)?],
        Client::Goose => vec![goose::render(spec)?],
        Client::Opencode => vec![opencode::render(spec)?],
        Client::Kiro => vec![kiro::render(spec)?],
        Client::Copilot => vec![copilot::json(spec)?, copilot::shell(spec)?],
        Client::LmStudio => vec![lm_studio::render(spec)?],
    })
}

/// Checks beyond the common shape (documented required keys, extra blocks).
pub(super) fn check_extra(
    spec: &ServerSpec,
    doc: &Value,
    entry: &Value,
) -> std::result::Result<(), &'static str> {
    match spec.client {
        Client::VsCode => vscode::check(spec, doc),
        Client::Continue => continue_dev::check(doc),
        Client::Goose => goose::check(spec, entry),
        Client::Copilot => copilot::check(entry),
        Client::Opencode => opencode::check(doc, entry),
        Client::Zed if entry.get("source").is_some() => {
            Err("carries \"source\", which Zed's settings migration deletes")
        }
        _ => Ok(()),
    }
}

/// The program of a client's own `mcp add` command line, for the clients that
/// have a non-interactive one.
pub(super) fn cli_program(client: Client) -> Option<&'static str> {
    match client {
        Client::ClaudeCode => Some("claude"),
        Client::Gemini => Some("gemini"),
        Client::Copilot => Some("copilot"),
        _ => None,
    }
}

/// `NAME=${NAME}`: the env flag value every `mcp add` line uses. It is stored
/// as written and expanded by the client when it starts the server, so the
/// key never appears in shell history or in `ps`.
fn env_reference_flag() -> String {
    format!("{API_KEY_ENV}=${{{API_KEY_ENV}}}")
}

/// Joins words into one POSIX shell line, quoting where needed.
fn shell_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| sh_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
        + "\n"
}

/// The sentence the `mcp add` lines share: the key is referenced, never written.
fn shell_key_note(spec: &ServerSpec) -> String {
    match spec.key {
        Some(_) => format!(
            " The line references the key, it does not write it: export {API_KEY_ENV} in the \
             environment the client starts from. The server runs as {}.",
            super::ConfigActor::ApiKey(super::KeyDelivery::Reference).describe()
        ),
        None => format!(" {}", spec.runs_as()),
    }
}
