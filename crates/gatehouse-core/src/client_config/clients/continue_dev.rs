//! Continue: a block file in `.continue/mcpServers/`, with `name`, `version`,
//! `schema: v1` and a `mcpServers` list of `name`, `type`, `command`, `args`,
//! `env` (<https://docs.continue.dev/customize/deep-dives/mcp>). Remote:
//! `type: streamable-http`, `url` and `requestOptions.headers`
//! (continuedev/continue `packages/config-yaml/src/schemas/mcp/index.ts`,
//! snapshot 2026-08).
//!
//! The global folder is `$CONTINUE_GLOBAL_DIR` when set (a relative value is
//! taken from the current directory), else `~/.continue` (`core/util/paths.ts`).
//!
//! Secrets are `${{ secrets.NAME }}`. The Hub connection was removed (March
//! 2026); secrets now resolve, in this order, from the global folder's `.env`,
//! `<workspace>/.continue/.env`, `<workspace>/.env`, then the process
//! environment (`core/config/yaml/LocalPlatformClient.ts`,
//! `findSecretInEnvFiles`; the FAQ lists the files in another order, the code is
//! what runs). IDE extensions often do not see a shell's exported variables, so
//! a `.env` file is the dependable place.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::super::paths::{Home, Scope, Syntax, join};
use super::super::spec::{ServerSpec, StdioEntry, internal, project, user};
use super::super::validate::{MCP_SERVERS, Shape, map};
use super::super::{API_KEY_ENV, Format, Snippet};
use super::{ClientFile, ClientSpec, Remote, RemoteShape, remote_entry};
use crate::error::Result;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "Continue",
    aliases: &[],
    shape: Shape {
        list: true,
        kind: Some(("type", "stdio")),
        ..map(MCP_SERVERS)
    },
    secret_ref: Some(|_| format!("${{{{ secrets.{API_KEY_ENV} }}}}")),
    render,
    check,
    cli: None,
    default_scope: Scope::Project,
    file,
    also_read,
    no_file: None,
    remote: Remote::Form {
        shape: REMOTE,
        render,
    },
};

const REMOTE: RemoteShape = RemoteShape {
    url: "url",
    kind: Some(("type", "streamable-http")),
    headers: &["requestOptions", "headers"],
    header_ref: true,
    bearer_env: None,
};

/// `$CONTINUE_GLOBAL_DIR` or `~/.continue`.
fn global_dir(home: &Home) -> PathBuf {
    home.var("CONTINUE_GLOBAL_DIR")
        .unwrap_or_else(|| home.dir.join(".continue"))
}

fn file(home: &Home, scope: Scope, project: &Path, name: &str) -> Option<ClientFile> {
    let dir = match scope {
        Scope::User => global_dir(home).join("mcpServers"),
        Scope::Project => join(project, &[".continue", "mcpServers"]),
        Scope::Local => return None,
    };
    Some(ClientFile::new(
        dir.join(format!("{name}.yaml")),
        Syntax::YamlFile,
    ))
}

/// Every block file in either `mcpServers` folder (an admin may have named its
/// file anything) and the `mcpServers` of the global `config.yaml`.
fn also_read(home: &Home, project: &Path) -> Vec<(Scope, ClientFile)> {
    let mut all = Vec::new();
    for (scope, dir) in [
        (Scope::User, global_dir(home).join("mcpServers")),
        (Scope::Project, join(project, &[".continue", "mcpServers"])),
    ] {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut blocks: Vec<PathBuf> = entries
            .filter_map(|e| Some(e.ok()?.path()))
            .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
            .collect();
        blocks.sort();
        all.extend(
            blocks
                .into_iter()
                .map(|path| (scope, ClientFile::new(path, Syntax::YamlFile))),
        );
    }
    all.push((
        Scope::User,
        ClientFile::new(global_dir(home).join("config.yaml"), Syntax::Yaml),
    ));
    all
}

fn render(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    #[derive(Serialize)]
    struct Server<'a, E: Serialize> {
        name: &'a str,
        #[serde(flatten)]
        entry: E,
    }
    #[derive(Serialize)]
    struct Block<S: Serialize> {
        name: String,
        version: &'static str,
        schema: &'static str,
        #[serde(rename = "mcpServers")]
        mcp_servers: [S; 1],
    }
    fn block<S: Serialize>(spec: &ServerSpec, server: S) -> Result<String> {
        let block = Block {
            name: format!("Gatehouse ({})", spec.name),
            version: "0.0.1",
            schema: "v1",
            mcp_servers: [server],
        };
        serde_yaml_ng::to_string(&block)
            .map_err(|e| internal(format!("YAML rendering failed: {e}")))
    }
    let name = &spec.name;
    let text = if spec.url.is_some() {
        block(
            spec,
            Server {
                name,
                entry: remote_entry(spec, &REMOTE),
            },
        )?
    } else {
        block(
            spec,
            Server {
                name,
                entry: StdioEntry::new(spec, Some("stdio")),
            },
        )?
    };
    let file = format!(".continue/mcpServers/{}.yaml", spec.name);
    let locations = vec![project(&file), user(&format!("~/{file}"))];
    let mut what = format!(
        "Save as {file} in the workspace (or under ~/.continue/mcpServers/, or \
         $CONTINUE_GLOBAL_DIR/mcpServers/ when that is set, for every workspace); Continue uses \
         MCP tools in agent mode."
    );
    if spec.by_reference() {
        what.push_str(&format!(
            " Put the line {API_KEY_ENV}=<your key> in ~/.continue/.env (the global folder's \
             .env), or the workspace's .continue/.env or .env; Continue reads them in that \
             order, then its own process environment. Keep that file out of git."
        ));
    }
    Ok(vec![spec.snippet(Format::Yaml, locations, text, &what)])
}

/// A block file needs its own `name`, `version` and `schema`.
fn check(_: &ServerSpec, doc: &Value, _: &Value) -> std::result::Result<(), &'static str> {
    for key in ["name", "version", "schema"] {
        if !doc.get(key).is_some_and(Value::is_string) {
            return Err("lacks the block's name, version or schema");
        }
    }
    Ok(())
}
