//! LM Studio: `mcp.json` in LM Studio's home, "Cursor's mcp.json notation":
//! `mcpServers` → `command`, `args`, `env`, or `url` + `headers` for a remote
//! server (lmstudio-ai/docs `0_app/2_mcp/index.mdx`, since 0.3.17; rechecked
//! 2026-12-03 against lmstudio.ai/docs/app/mcp). No secret indirection is
//! documented, so a key is written inline (user scope only).
//!
//! The home is found as LM Studio finds it (lmstudio-ai/lmstudio-js
//! `packages/lms-common-server/src/findLMStudioHome.ts`, snapshot 2026-08-21):
//! the path in `~/.lmstudio-home-pointer` when that file exists, else
//! `~/.cache/lm-studio` when that folder exists, else `~/.lmstudio`, on every
//! system.

use std::path::{Path, PathBuf};

use super::super::paths::{Home, Scope, Syntax};
use super::super::spec::{ServerSpec, StdioEntry, servers_file, user_os};
use super::super::validate::{MCP_SERVERS, map};
use super::super::{Format, Location, Snippet};
use super::{
    ClientFile, ClientSpec, Remote, RemoteShape, no_check, no_more_files, remote_entry, remote_file,
};
use crate::error::Result;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "LM Studio",
    aliases: &["lmstudio"],
    shape: map(MCP_SERVERS),
    secret_ref: None,
    render,
    check: no_check,
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

/// LM Studio's home: the pointer file's path, `~/.cache/lm-studio`, or
/// `~/.lmstudio`. An empty pointer is skipped (LM Studio would use "").
pub(super) fn lm_studio_home(home: &Home) -> PathBuf {
    let pointer = home.dir.join(".lmstudio-home-pointer");
    if let Ok(text) = std::fs::read_to_string(&pointer)
        && !text.trim().is_empty()
    {
        return PathBuf::from(text.trim());
    }
    let cache = home.under(&[".cache", "lm-studio"]);
    if cache.is_dir() {
        return cache;
    }
    home.dir.join(".lmstudio")
}

fn file(home: &Home, scope: Scope, _: &Path, _: &str) -> Option<ClientFile> {
    (scope == Scope::User)
        .then(|| ClientFile::new(lm_studio_home(home).join("mcp.json"), Syntax::Json))
}

fn locations() -> Vec<Location> {
    vec![
        user_os(
            "every OS, LM Studio's home",
            "the folder named in ~/.lmstudio-home-pointer, else ~/.cache/lm-studio, else \
             ~/.lmstudio (then mcp.json)",
        ),
        user_os("Windows, default", "%USERPROFILE%\\.lmstudio\\mcp.json"),
    ]
}

const WHAT: &str = "Merge this entry into \"mcpServers\" of mcp.json (in LM Studio: Program tab → \
                    Install → Edit mcp.json, which opens the file the app really reads).";

fn render(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    let text = servers_file("mcpServers", &spec.name, StdioEntry::new(spec, None))?;
    Ok(vec![spec.snippet(Format::Json, locations(), text, WHAT)])
}

fn remote(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    let text = remote_file(spec, "mcpServers", remote_entry(spec, &REMOTE))?;
    Ok(vec![spec.snippet(Format::Json, locations(), text, WHAT)])
}
