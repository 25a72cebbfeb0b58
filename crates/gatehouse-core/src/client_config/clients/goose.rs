//! Goose: `~/.config/goose/config.yaml` (`%APPDATA%\Block\goose\config\config.yaml`
//! on Windows), user scope only; an `extensions:` map whose key is the name
//! lower-cased without whitespace (`name_to_key`). A stdio entry needs
//! `enabled`, `type: stdio`, `name`, `cmd` and `args` (no serde defaults);
//! `envs` holds literal variables and `env_keys` names variables Goose resolves
//! itself, from its process environment first, then its secret store (the
//! system keyring). There is no `${VAR}` syntax in stdio `envs`. Sources:
//! block/goose `documentation/docs/guides/config-files.md`,
//! `crates/goose/src/agents/extension.rs`, `crates/goose/src/config/extensions.rs`.
//!
//! Remote: `type: streamable_http` with `name`, `description`, `uri`,
//! `headers` and `timeout` (`ExtensionConfig::StreamableHttp` in
//! `extension.rs`). No substitution of header values is documented, so the
//! key is written inline: the file is user scope only, never committed.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::super::paths::{Home, Os, Scope, Syntax, join};
use super::super::spec::{ServerSpec, internal, user_os};
use super::super::validate::{Shape, map};
use super::super::{API_KEY_ENV, Format, Location, Snippet};
use super::{
    ClientFile, ClientSpec, Remote, RemoteShape, no_more_files, remote_entry, variable_name,
};
use crate::error::Result;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "Goose",
    aliases: &[],
    shape: Shape {
        command: "cmd",
        env: "envs",
        kind: Some(("type", "stdio")),
        forward: Some("env_keys"),
        lowercase_keys: true,
        ..map(&["extensions"])
    },
    secret_ref: Some(variable_name),
    render,
    check,
    cli: None,
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
    url: "uri",
    kind: Some(("type", "streamable_http")),
    headers: &["headers"],
    header_ref: false,
    bearer_env: None,
};

fn file(home: &Home, scope: Scope, _: &Path, _: &str) -> Option<ClientFile> {
    if scope != Scope::User {
        return None;
    }
    let dir = match home.os {
        Os::Windows => join(&home.appdata(), &["Block", "goose", "config"]),
        Os::Linux | Os::Macos => home.xdg_config().join("goose"),
    };
    Some(ClientFile::new(dir.join("config.yaml"), Syntax::Yaml))
}

fn locations() -> Vec<Location> {
    vec![
        user_os("macOS/Linux", "~/.config/goose/config.yaml"),
        user_os("Windows", "%APPDATA%\\Block\\goose\\config\\config.yaml"),
    ]
}

fn yaml(spec: &ServerSpec, extension: impl Serialize) -> Result<String> {
    let file = BTreeMap::from([("extensions", BTreeMap::from([(key(&spec.name), extension)]))]);
    serde_yaml_ng::to_string(&file).map_err(|e| internal(format!("YAML rendering failed: {e}")))
}

const WHAT: &str = "Merge this entry into \"extensions:\" of Goose's config.yaml (or run \
                    `gatehouse config install goose`), then restart the Goose session.";

fn render(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    #[derive(Serialize)]
    struct Extension<'a> {
        enabled: bool,
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'a str,
        cmd: &'a str,
        args: &'a [String],
        description: &'static str,
        timeout: u32,
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        envs: BTreeMap<String, String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        env_keys: Vec<&'static str>,
    }
    let extension = Extension {
        enabled: true,
        kind: "stdio",
        name: &spec.name,
        cmd: &spec.command,
        args: &spec.args,
        description: "Gatehouse site",
        timeout: 300,
        envs: spec.env(),
        env_keys: if spec.by_reference() {
            vec![API_KEY_ENV]
        } else {
            Vec::new()
        },
    };
    let mut what = String::from(WHAT);
    if spec.by_reference() {
        what.push_str(&format!(
            " Goose resolves {API_KEY_ENV} from its environment, then from its secret store: \
             store it once with `goose configure` or export it before starting goose."
        ));
    }
    Ok(vec![spec.snippet(
        Format::Yaml,
        locations(),
        yaml(spec, extension)?,
        &what,
    )])
}

fn remote(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    let mut entry = remote_entry(spec, &REMOTE);
    entry.push("enabled", true);
    entry.push("name", spec.name.clone());
    entry.push("description", "Gatehouse site");
    entry.push("timeout", 300);
    Ok(vec![spec.snippet(
        Format::Yaml,
        locations(),
        yaml(spec, entry)?,
        WHAT,
    )])
}

/// Goose's `name_to_key`: lower-case, whitespace removed.
fn key(name: &str) -> String {
    name.chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_lowercase()
}

fn check(spec: &ServerSpec, _: &Value, entry: &Value) -> std::result::Result<(), &'static str> {
    if entry.get("enabled").and_then(Value::as_bool) != Some(true) {
        return Err("lacks enabled: true");
    }
    if entry.get("name").and_then(Value::as_str) != Some(spec.name.as_str()) {
        return Err("lacks the extension's name");
    }
    Ok(())
}
