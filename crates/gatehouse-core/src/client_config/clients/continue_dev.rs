//! Continue: a block file in `.continue/mcpServers/`, with `name`, `version`,
//! `schema: v1` and a `mcpServers` list of `name`, `type`, `command`, `args`,
//! `env` (<https://docs.continue.dev/customize/deep-dives/mcp>).
//!
//! Secrets are `${{ secrets.NAME }}`. The Hub connection was removed (March
//! 2026); secrets now resolve, in this order, from `~/.continue/.env`,
//! `<workspace>/.continue/.env`, `<workspace>/.env`, then the process
//! environment (continuedev/continue `core/config/yaml/LocalPlatformClient.ts`,
//! `findSecretInEnvFiles`; the FAQ lists the files in another order, the code is
//! what runs). IDE extensions often do not see a shell's exported variables, so
//! a `.env` file is the dependable place.

use serde::Serialize;
use serde_json::Value;

use super::super::spec::{ServerSpec, StdioEntry, internal, project, user};
use super::super::{API_KEY_ENV, Format, Snippet};
use crate::error::Result;

pub(super) fn render(spec: &ServerSpec) -> Result<Snippet> {
    #[derive(Serialize)]
    struct Server<'a> {
        name: &'a str,
        #[serde(flatten)]
        entry: StdioEntry<'a>,
    }
    #[derive(Serialize)]
    struct Block<'a> {
        name: String,
        version: &'static str,
        schema: &'static str,
        #[serde(rename = "mcpServers")]
        mcp_servers: [Server<'a>; 1],
    }
    let block = Block {
        name: format!("Gatehouse ({})", spec.name),
        version: "0.0.1",
        schema: "v1",
        mcp_servers: [Server {
            name: &spec.name,
            entry: StdioEntry::new(spec, Some("stdio")),
        }],
    };
    let text = serde_yaml_ng::to_string(&block)
        .map_err(|e| internal(format!("YAML rendering failed: {e}")))?;
    let file = format!(".continue/mcpServers/{}.yaml", spec.name);
    let locations = vec![project(&file), user(&format!("~/{file}"))];
    let mut what = format!(
        "Save as {file} in the workspace (or under ~/.continue/mcpServers/ for every workspace); \
         Continue uses MCP tools in agent mode."
    );
    if spec.by_reference() {
        what.push_str(&format!(
            " Put the line {API_KEY_ENV}=<your key> in ~/.continue/.env (or the workspace's \
             .continue/.env or .env; Continue reads them in that order, then its own process \
             environment). Keep that file out of git."
        ));
    }
    Ok(spec.snippet(Format::Yaml, locations, text, &what))
}

/// A block file needs its own `name`, `version` and `schema`.
pub(super) fn check(doc: &Value) -> std::result::Result<(), &'static str> {
    for key in ["name", "version", "schema"] {
        if !doc.get(key).is_some_and(Value::is_string) {
            return Err("lacks the block's name, version or schema");
        }
    }
    Ok(())
}
