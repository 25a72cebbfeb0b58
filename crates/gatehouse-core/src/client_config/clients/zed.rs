//! Zed: `context_servers` in `settings.json` → `command`, `args`, `env`
//! (<https://zed.dev/docs/ai/mcp>, "As Custom Servers"; zed-industries/zed
//! `ContextServerSettingsContent`, an untagged enum). No `"source": "custom"`:
//! Zed's settings migration of 2025-11-25 deletes it and it triggers a
//! deprecated-settings prompt. Zed has no secret indirection. The settings file
//! is JSON with comments, which `install` keeps.
//!
//! The user file is `config_dir()/settings.json` (zed-industries/zed
//! `crates/paths/src/paths.rs`): `%APPDATA%\Zed` on Windows,
//! `$XDG_CONFIG_HOME/zed` (or `~/.config/zed`) on Linux, and `~/.config/zed` on
//! macOS whatever `XDG_CONFIG_HOME` says. Remote: `url` + `headers` (same docs
//! page, "Remote servers"); with no indirection the key is written inline,
//! which only the user file may hold.

use std::path::Path;

use super::super::paths::{Home, Os, Scope, Syntax, join};
use super::super::spec::{ServerSpec, StdioEntry, project, servers_file, user_os};
use super::super::validate::map;
use super::super::{Format, Location, Snippet};
use super::{
    ClientFile, ClientSpec, Remote, RemoteShape, no_more_files, remote_entry, remote_file,
};
use crate::error::Result;
use serde_json::Value;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "Zed",
    aliases: &[],
    shape: map(&["context_servers"]),
    secret_ref: None,
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

const REMOTE: RemoteShape = RemoteShape::url(None, false);

fn file(home: &Home, scope: Scope, project: &Path, _: &str) -> Option<ClientFile> {
    let path = match scope {
        Scope::User => {
            let dir = match home.os {
                Os::Windows => home.appdata().join("Zed"),
                Os::Macos => home.under(&[".config", "zed"]),
                Os::Linux => home.xdg_config().join("zed"),
            };
            dir.join("settings.json")
        }
        Scope::Project => join(project, &[".zed", "settings.json"]),
        Scope::Local => return None,
    };
    Some(ClientFile::new(path, Syntax::Jsonc))
}

fn locations() -> Vec<Location> {
    vec![
        user_os("macOS/Linux", "~/.config/zed/settings.json"),
        user_os("Windows", "%APPDATA%\\Zed\\settings.json"),
        project(".zed/settings.json"),
    ]
}

const WHAT: &str = "Run \"zed: open settings file\" and merge this entry into \"context_servers\".";

fn render(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    let text = servers_file("context_servers", &spec.name, StdioEntry::new(spec, None))?;
    Ok(vec![spec.snippet(Format::Json, locations(), text, WHAT)])
}

fn remote(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    let text = remote_file(spec, "context_servers", remote_entry(spec, &REMOTE))?;
    Ok(vec![spec.snippet(Format::Json, locations(), text, WHAT)])
}

fn check(_: &ServerSpec, _: &Value, entry: &Value) -> std::result::Result<(), &'static str> {
    if entry.get("source").is_some() {
        return Err("carries \"source\", which Zed's settings migration deletes");
    }
    Ok(())
}
