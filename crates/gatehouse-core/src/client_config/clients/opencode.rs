//! opencode: `opencode.json` (or `.jsonc`) in the project root or
//! `~/.config/opencode/opencode.json`; files are merged. The `mcp` map takes
//! `type: "local"`, `command` as one array of the program and its arguments (no
//! `args` key), `environment`, `enabled`. Any string may use `{env:VAR}`; an
//! unset variable becomes "". Sources: sst/opencode
//! `packages/web/src/content/docs/config.mdx`, anomalyco/opencode
//! `packages/web/src/content/docs/mcp-servers.mdx`. The Windows location is
//! assumed to be the same `~/.config` path (not stated in the docs).
//!
//! Rechecked 2026-12-03: opencode 1.15 validates strictly and reports a
//! missing `enabled` or a Claude-style `type: "stdio"` + `args` entry as
//! `ConfigInvalidError` (anomalyco/opencode#28625), so `enabled` is always
//! written. The docs for opencode V2 (opencode.ai/docs/mcp-servers, "V2 does
//! not put server names directly under mcp") move servers to `mcp.servers`
//! and replace `enabled` with `disabled`; this renderer targets the 1.x layout
//! the issue names, which V1 docs (opencode.ai/v1/docs) still describe.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::super::spec::{ServerSpec, project, to_json, user};
use super::super::{API_KEY_ENV, Format, Snippet};
use crate::error::Result;

const SCHEMA: &str = "https://opencode.ai/config.json";

pub(super) fn render(spec: &ServerSpec) -> Result<Snippet> {
    #[derive(Serialize)]
    struct Local {
        #[serde(rename = "type")]
        kind: &'static str,
        command: Vec<String>,
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        environment: BTreeMap<String, String>,
        enabled: bool,
    }
    #[derive(Serialize)]
    struct File<'a> {
        #[serde(rename = "$schema")]
        schema: &'static str,
        mcp: BTreeMap<&'a str, Local>,
    }
    let mut command = vec![spec.command.clone()];
    command.extend(spec.args.iter().cloned());
    let file = File {
        schema: SCHEMA,
        mcp: BTreeMap::from([(
            spec.name.as_str(),
            Local {
                kind: "local",
                command,
                environment: spec.env(),
                enabled: true,
            },
        )]),
    };
    let locations = vec![
        project("opencode.json"),
        user("~/.config/opencode/opencode.json"),
    ];
    let mut what = String::from(
        "Merge this into opencode.json at the project root or ~/.config/opencode/opencode.json \
         (\"mcp\" entries; the files are merged by opencode). Newer opencode asks you to approve \
         project servers: `opencode mcp approve NAME`.",
    );
    if spec.by_reference() {
        what.push_str(&format!(
            " opencode substitutes {{env:{API_KEY_ENV}}} from its environment (an unset variable \
             becomes empty): export {API_KEY_ENV} before starting opencode."
        ));
    }
    Ok(spec.snippet(Format::Json, locations, to_json(&file)?, &what))
}

pub(super) fn check(doc: &Value, entry: &Value) -> std::result::Result<(), &'static str> {
    if entry.get("args").is_some() {
        return Err("has an args key opencode does not have");
    }
    if doc.get("$schema").and_then(Value::as_str) != Some(SCHEMA) {
        return Err("lacks opencode's $schema");
    }
    Ok(())
}
