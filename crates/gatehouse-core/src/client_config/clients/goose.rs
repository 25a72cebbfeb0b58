//! Goose: `~/.config/goose/config.yaml` (`%APPDATA%\Block\goose\config\config.yaml`
//! on Windows), user scope only; an `extensions:` map whose key is the name
//! lower-cased without whitespace (`name_to_key`). A stdio entry needs
//! `enabled`, `type: stdio`, `name`, `cmd` and `args` (no serde defaults);
//! `envs` holds literal variables and `env_keys` names variables Goose resolves
//! itself, from its process environment first, then its secret store (the
//! system keyring). There is no `${VAR}` syntax in stdio `envs`. Sources:
//! block/goose `documentation/docs/guides/config-files.md`,
//! `crates/goose/src/agents/extension.rs`, `crates/goose/src/config/extensions.rs`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::super::spec::{ServerSpec, internal, user_os};
use super::super::{API_KEY_ENV, Format, Snippet};
use crate::error::Result;

pub(super) fn render(spec: &ServerSpec) -> Result<Snippet> {
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
    let file = BTreeMap::from([("extensions", BTreeMap::from([(key(&spec.name), extension)]))]);
    let text = serde_yaml_ng::to_string(&file)
        .map_err(|e| internal(format!("YAML rendering failed: {e}")))?;
    let locations = vec![
        user_os("macOS/Linux", "~/.config/goose/config.yaml"),
        user_os("Windows", "%APPDATA%\\Block\\goose\\config\\config.yaml"),
    ];
    let mut what = String::from(
        "Merge this entry into \"extensions:\" of Goose's config.yaml (or run `gatehouse config \
         install goose`), then restart the Goose session.",
    );
    if spec.by_reference() {
        what.push_str(&format!(
            " Goose resolves {API_KEY_ENV} from its environment, then from its secret store: \
             store it once with `goose configure` or export it before starting goose."
        ));
    }
    Ok(spec.snippet(Format::Yaml, locations, text, &what))
}

/// Goose's `name_to_key`: lower-case, whitespace removed.
fn key(name: &str) -> String {
    name.chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_lowercase()
}

pub(super) fn check(spec: &ServerSpec, entry: &Value) -> std::result::Result<(), &'static str> {
    if entry.get("enabled").and_then(Value::as_bool) != Some(true) {
        return Err("lacks enabled: true");
    }
    if entry.get("name").and_then(Value::as_str) != Some(spec.name.as_str()) {
        return Err("lacks the extension's name");
    }
    Ok(())
}
