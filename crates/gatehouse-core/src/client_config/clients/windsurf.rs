//! Windsurf: `~/.codeium/windsurf/mcp_config.json`, the Claude Desktop schema
//! (`mcpServers` → `command`, `args`, `env`); `${env:VAR}` is interpolated in
//! `command`, `args`, `env`, `serverUrl`, `url` and `headers`
//! (<https://docs.windsurf.com/windsurf/cascade/mcp>, "Config interpolation").
//! The raw file is reached from Cascade → MCP Servers (the older "Windsurf
//! Settings → MCP" entry moved there). Remote: `serverUrl` + `headers` (same
//! page, "Remote HTTP MCPs").

use std::path::Path;

use super::super::paths::{Home, Scope, Syntax};
use super::super::spec::{ServerSpec, StdioEntry, env_reference_note, servers_file, user_os};
use super::super::validate::{MCP_SERVERS, map};
use super::super::{Format, Location, Snippet};
use super::{
    ClientFile, ClientSpec, Remote, RemoteShape, env_colon, no_check, no_more_files, remote_entry,
    remote_file,
};
use crate::error::Result;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "Windsurf",
    aliases: &[],
    shape: map(MCP_SERVERS),
    secret_ref: Some(env_colon),
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

const REMOTE: RemoteShape = RemoteShape {
    url: "serverUrl",
    ..RemoteShape::url(None, true)
};

fn file(home: &Home, scope: Scope, _: &Path, _: &str) -> Option<ClientFile> {
    (scope == Scope::User).then(|| {
        ClientFile::new(
            home.under(&[".codeium", "windsurf", "mcp_config.json"]),
            Syntax::Json,
        )
    })
}

fn locations() -> Vec<Location> {
    vec![
        user_os("macOS/Linux", "~/.codeium/windsurf/mcp_config.json"),
        user_os(
            "Windows",
            "%USERPROFILE%\\.codeium\\windsurf\\mcp_config.json",
        ),
    ]
}

fn what(spec: &ServerSpec) -> String {
    let mut what = String::from(
        "Merge this entry into \"mcpServers\" of mcp_config.json (Cascade → MCP Servers → View \
         raw config), then press refresh in the MCP Servers panel.",
    );
    if spec.by_reference() {
        what.push_str(&env_reference_note("Windsurf"));
    }
    what
}

fn render(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    let text = servers_file("mcpServers", &spec.name, StdioEntry::new(spec, None))?;
    Ok(vec![spec.snippet(
        Format::Json,
        locations(),
        text,
        &what(spec),
    )])
}

fn remote(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    let text = remote_file(spec, "mcpServers", remote_entry(spec, &REMOTE))?;
    Ok(vec![spec.snippet(
        Format::Json,
        locations(),
        text,
        &what(spec),
    )])
}
