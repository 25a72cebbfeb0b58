//! Cursor: `.cursor/mcp.json` (project) or `~/.cursor/mcp.json` (user),
//! `mcpServers` → `command`, `args`, `env`; `${env:NAME}` interpolation in
//! `command`, `args`, `env`, `url` and `headers` (<https://cursor.com/docs/mcp>,
//! "Config interpolation"). Remote: `url` + `headers` ("Remote server", the
//! same page: Streamable HTTP is chosen by the URL, no `type`).

use std::path::Path;

use super::super::paths::{Home, Scope, Syntax, join};
use super::super::spec::{ServerSpec, StdioEntry, env_reference_note, project, servers_file, user};
use super::super::validate::{MCP_SERVERS, map};
use super::super::{Format, Location, Snippet};
use super::{
    ClientFile, ClientSpec, Remote, RemoteShape, env_colon, no_check, no_more_files, remote_entry,
    remote_file,
};
use crate::error::Result;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "Cursor",
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

const REMOTE: RemoteShape = RemoteShape::url(None, true);

fn file(home: &Home, scope: Scope, project: &Path, _: &str) -> Option<ClientFile> {
    let base = match scope {
        Scope::User => &home.dir,
        Scope::Project => project,
        Scope::Local => return None,
    };
    Some(ClientFile::new(
        join(base, &[".cursor", "mcp.json"]),
        Syntax::Json,
    ))
}

fn locations() -> Vec<Location> {
    vec![project(".cursor/mcp.json"), user("~/.cursor/mcp.json")]
}

fn what(spec: &ServerSpec) -> String {
    let mut what = String::from(
        "Save as .cursor/mcp.json in the project, or ~/.cursor/mcp.json for every project \
         (merge into \"mcpServers\" if the file exists).",
    );
    if spec.by_reference() {
        what.push_str(&env_reference_note("Cursor"));
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
