//! VS Code: `.vscode/mcp.json` (workspace) or the user profile's `mcp.json`,
//! `servers` → `type: "stdio"`, `command`, `args`, `env`, plus `inputs` of
//! `type: "promptString"` with `password: true`, used as `${input:ID}`
//! (<https://code.visualstudio.com/docs/copilot/reference/mcp-configuration>).
//! The file is JSON with comments, which `install` keeps.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::super::spec::{ServerSpec, StdioEntry, project, to_json, user_os};
use super::super::{Format, Snippet};
use crate::error::Result;

pub(in crate::client_config) fn input_id(server_name: &str) -> String {
    format!("{server_name}-api-key")
}

pub(super) fn render(spec: &ServerSpec) -> Result<Snippet> {
    #[derive(Serialize)]
    struct Input {
        #[serde(rename = "type")]
        kind: &'static str,
        id: String,
        description: String,
        password: bool,
    }
    #[derive(Serialize)]
    struct File<'a> {
        #[serde(skip_serializing_if = "Vec::is_empty")]
        inputs: Vec<Input>,
        servers: BTreeMap<&'a str, StdioEntry<'a>>,
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
    let file = File {
        inputs,
        servers: BTreeMap::from([(spec.name.as_str(), StdioEntry::new(spec, Some("stdio")))]),
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
    let locations = vec![
        project(".vscode/mcp.json"),
        user_os("macOS", "~/Library/Application Support/Code/User/mcp.json"),
        user_os("Linux", "~/.config/Code/User/mcp.json"),
        user_os("Windows", "%APPDATA%\\Code\\User\\mcp.json"),
    ];
    Ok(spec.snippet(Format::Json, locations, to_json(&file)?, &what))
}

/// The password input the env refers to is there exactly when it is needed.
pub(super) fn check(spec: &ServerSpec, doc: &Value) -> std::result::Result<(), &'static str> {
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
