//! opencode: `opencode.json` (or `.jsonc`) in the project root or
//! `~/.config/opencode/opencode.json`; files are merged. The `mcp` map takes
//! `type: "local"`, `command` as one array of the program and its arguments (no
//! `args` key), `environment`, `enabled`. Any string may use `{env:VAR}`; an
//! unset variable becomes "". Sources: sst/opencode
//! `packages/web/src/content/docs/config.mdx`, anomalyco/opencode
//! `packages/web/src/content/docs/mcp-servers.mdx`. The Windows location is
//! assumed to be the same `~/.config` path (not stated in the docs).
//!
//! Remote (same page, "Remote"): `type: "remote"`, `url`, `headers`,
//! `enabled`, and `oauth: false`, without which opencode tries OAuth discovery
//! on a 401 instead of reporting the refused key.
//!
//! Rechecked 2026-12-03: opencode 1.15 validates strictly and reports a
//! missing `enabled` or a Claude-style `type: "stdio"` + `args` entry as
//! `ConfigInvalidError` (anomalyco/opencode#28625), so `enabled` is always
//! written. The docs for opencode V2 (opencode.ai/docs/mcp-servers, "V2 does
//! not put server names directly under mcp") move servers to `mcp.servers`
//! and replace `enabled` with `disabled`; this renderer targets the 1.x layout,
//! which V1 docs (opencode.ai/v1/docs) still describe.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::super::paths::{Home, Scope, Syntax};
use super::super::spec::{ServerSpec, project, to_json, user};
use super::super::validate::{Shape, map};
use super::super::{API_KEY_ENV, Format, Location, Snippet};
use super::{ClientFile, ClientSpec, Remote, RemoteShape, remote_entry};
use crate::error::Result;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "opencode",
    aliases: &[],
    shape: Shape {
        args: None,
        env: "environment",
        kind: Some(("type", "local")),
        ..map(&["mcp"])
    },
    secret_ref: Some(|_| format!("{{env:{API_KEY_ENV}}}")),
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

const REMOTE: RemoteShape = RemoteShape::url(Some(("type", "remote")), true);

const SCHEMA: &str = "https://opencode.ai/config.json";

fn dir(home: &Home, scope: Scope, project: &Path) -> Option<PathBuf> {
    match scope {
        Scope::User => Some(home.xdg_config().join("opencode")),
        Scope::Project => Some(project.to_path_buf()),
        Scope::Local => None,
    }
}

/// opencode reads `opencode.json` or `opencode.jsonc`: an admin's existing
/// `.jsonc` is edited rather than a second file created beside it.
fn file(home: &Home, scope: Scope, project: &Path, _: &str) -> Option<ClientFile> {
    let dir = dir(home, scope, project)?;
    let jsonc = dir.join("opencode.jsonc");
    let json = dir.join("opencode.json");
    let path = if jsonc.is_file() && !json.is_file() {
        jsonc
    } else {
        json
    };
    Some(ClientFile::new(path, Syntax::Jsonc))
}

/// Both spellings in both folders.
fn also_read(home: &Home, project: &Path) -> Vec<(Scope, ClientFile)> {
    [Scope::User, Scope::Project]
        .into_iter()
        .filter_map(|scope| Some((scope, dir(home, scope, project)?)))
        .flat_map(|(scope, dir)| {
            ["opencode.json", "opencode.jsonc"]
                .map(|name| (scope, ClientFile::new(dir.join(name), Syntax::Jsonc)))
        })
        .collect()
}

fn locations() -> Vec<Location> {
    vec![
        project("opencode.json"),
        user("~/.config/opencode/opencode.json"),
    ]
}

fn render(spec: &ServerSpec) -> Result<Vec<Snippet>> {
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
    struct File<'a, E: Serialize> {
        #[serde(rename = "$schema")]
        schema: &'static str,
        mcp: BTreeMap<&'a str, E>,
    }
    let text = if spec.url.is_some() {
        let mut entry = remote_entry(spec, &REMOTE);
        entry.push("oauth", false);
        entry.push("enabled", true);
        to_json(&File {
            schema: SCHEMA,
            mcp: BTreeMap::from([(spec.name.as_str(), entry)]),
        })?
    } else {
        let mut command = vec![spec.command.clone()];
        command.extend(spec.args.iter().cloned());
        let local = Local {
            kind: "local",
            command,
            environment: spec.env(),
            enabled: true,
        };
        to_json(&File {
            schema: SCHEMA,
            mcp: BTreeMap::from([(spec.name.as_str(), local)]),
        })?
    };
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
    Ok(vec![spec.snippet(Format::Json, locations(), text, &what)])
}

fn check(spec: &ServerSpec, doc: &Value, entry: &Value) -> std::result::Result<(), &'static str> {
    if entry.get("args").is_some() {
        return Err("has an args key opencode does not have");
    }
    if doc.get("$schema").and_then(Value::as_str) != Some(SCHEMA) {
        return Err("lacks opencode's $schema");
    }
    if spec.url.is_some() && entry.get("oauth") != Some(&Value::Bool(false)) {
        return Err("lacks \"oauth\": false");
    }
    Ok(())
}
