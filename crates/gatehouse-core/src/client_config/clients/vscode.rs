//! VS Code: `.vscode/mcp.json` (workspace) or the user profile's `mcp.json`,
//! `servers` → `type: "stdio"`, `command`, `args`, `env`, plus `inputs` of
//! `type: "promptString"` with `password: true`, used as `${input:ID}`
//! (<https://code.visualstudio.com/docs/copilot/reference/mcp-configuration>).
//! The file is JSON with comments, which `install` keeps. Remote: `type:
//! "http"`, `url`, `headers` (same page, "HTTP and SSE servers"), the key as the
//! same password input, which VS Code keeps in its secret storage.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::super::paths::{Home, Scope, Syntax, join};
use super::super::spec::{ServerSpec, StdioEntry, project, to_json, user_os};
use super::super::validate::{Shape, map};
use super::super::{Format, Location, Snippet};
use super::{ClientFile, ClientSpec, Remote, RemoteShape, no_more_files, remote_entry};
use crate::error::Result;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "VS Code",
    aliases: &["vs-code"],
    shape: Shape {
        kind: Some(("type", "stdio")),
        ..map(&["servers"])
    },
    secret_ref: Some(|name| format!("${{input:{}}}", input_id(name))),
    render,
    check,
    cli: None,
    default_scope: Scope::User,
    file,
    also_read: no_more_files,
    no_file: None,
    remote: Remote::Form {
        shape: REMOTE,
        render,
    },
};

const REMOTE: RemoteShape = RemoteShape::url(Some(("type", "http")), true);

pub(in crate::client_config) fn input_id(server_name: &str) -> String {
    format!("{server_name}-api-key")
}

fn file(home: &Home, scope: Scope, project: &Path, _: &str) -> Option<ClientFile> {
    let path = match scope {
        Scope::User => home.vscode_user().join("mcp.json"),
        Scope::Project => join(project, &[".vscode", "mcp.json"]),
        Scope::Local => return None,
    };
    Some(ClientFile::new(path, Syntax::Jsonc))
}

fn locations() -> Vec<Location> {
    vec![
        project(".vscode/mcp.json"),
        user_os("macOS", "~/Library/Application Support/Code/User/mcp.json"),
        user_os("Linux", "~/.config/Code/User/mcp.json"),
        user_os("Windows", "%APPDATA%\\Code\\User\\mcp.json"),
    ]
}

/// The stdio or the remote entry, with the password input a referenced key
/// needs.
fn render(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    #[derive(Serialize)]
    struct Input {
        #[serde(rename = "type")]
        kind: &'static str,
        id: String,
        description: String,
        password: bool,
    }
    #[derive(Serialize)]
    struct File<'a, E: Serialize> {
        #[serde(skip_serializing_if = "Vec::is_empty")]
        inputs: Vec<Input>,
        servers: BTreeMap<&'a str, E>,
    }
    let mut inputs = Vec::new();
    if spec.by_reference() {
        inputs.push(Input {
            kind: "promptString",
            id: input_id(&spec.name),
            description: format!("Gatehouse API key for the MCP server \"{}\"", spec.name),
            password: true,
        });
    }
    let name = spec.name.as_str();
    let text = if spec.url.is_some() {
        to_json(&File {
            inputs,
            servers: BTreeMap::from([(name, remote_entry(spec, &REMOTE))]),
        })?
    } else {
        to_json(&File {
            inputs,
            servers: BTreeMap::from([(name, StdioEntry::new(spec, Some("stdio")))]),
        })?
    };
    let mut what = String::from(
        "Save as .vscode/mcp.json in the workspace (merge into \"servers\" and \"inputs\" if the \
         file exists), or run \"MCP: Open User Configuration\" for every workspace.",
    );
    if spec.by_reference() {
        what.push_str(
            " VS Code prompts for the key when it first starts the server and keeps it in its \
             secret storage.",
        );
    }
    Ok(vec![spec.snippet(Format::Json, locations(), text, &what)])
}

/// The password input the env refers to is there exactly when it is needed.
fn check(spec: &ServerSpec, doc: &Value, _: &Value) -> std::result::Result<(), &'static str> {
    let inputs = doc.get("inputs").and_then(Value::as_array);
    if spec.by_reference() {
        let id = input_id(&spec.name);
        let ok = inputs.is_some_and(|list| {
            list.iter().any(|i| {
                i.get("id").and_then(Value::as_str) == Some(id.as_str())
                    && i.get("type").and_then(Value::as_str) == Some("promptString")
                    && i.get("password").and_then(Value::as_bool) == Some(true)
            })
        });
        if !ok {
            return Err("lacks the password input the env refers to");
        }
    } else if inputs.is_some() {
        return Err("has inputs nothing refers to");
    }
    Ok(())
}
