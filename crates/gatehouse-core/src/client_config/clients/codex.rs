//! Codex CLI: `~/.codex/config.toml` (`CODEX_HOME` moves it), a
//! `[mcp_servers.NAME]` table with `command`, `args`, `env`, and `env_vars`, the
//! names of variables Codex forwards from its own environment (Codex docs, MCP
//! page: "env_vars (optional): Environment variables to allow and forward";
//! openai/codex `docs/config.md`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::super::spec::{ServerSpec, internal, project, user_os};
use super::super::{API_KEY_ENV, Format, Snippet};
use crate::error::Result;

pub(super) fn render(spec: &ServerSpec) -> Result<Snippet> {
    #[derive(Serialize)]
    struct Server<'a> {
        command: &'a str,
        args: &'a [String],
        #[serde(skip_serializing_if = "Vec::is_empty")]
        env_vars: Vec<&'static str>,
        // Tables last: TOML cannot put a plain key after a sub-table.
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
    }
    let server = Server {
        command: &spec.command,
        args: &spec.args,
        env_vars: if spec.by_reference() {
            vec![API_KEY_ENV]
        } else {
            Vec::new()
        },
        env: spec.env(),
    };
    let file = BTreeMap::from([(
        "mcp_servers",
        BTreeMap::from([(spec.name.as_str(), server)]),
    )]);
    let text =
        toml::to_string(&file).map_err(|e| internal(format!("TOML rendering failed: {e}")))?;
    let locations = vec![
        user_os("macOS/Linux", "~/.codex/config.toml"),
        user_os("Windows", "%USERPROFILE%\\.codex\\config.toml"),
        project(".codex/config.toml"),
    ];
    let mut what = String::from(
        "Append to ~/.codex/config.toml (or .codex/config.toml in a trusted project), replacing \
         any older table of the same name.",
    );
    if spec.by_reference() {
        what.push_str(&format!(
            " Codex forwards {API_KEY_ENV} from the environment codex runs in: export it first."
        ));
    }
    Ok(spec.snippet(Format::Toml, locations, text, &what))
}
