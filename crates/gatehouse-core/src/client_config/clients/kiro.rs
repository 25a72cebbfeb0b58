//! Kiro (IDE and kiro-cli): `~/.kiro/settings/mcp.json` (user) or
//! `.kiro/settings/mcp.json` (workspace, wins on conflict); `mcpServers` →
//! `command`, `args`, `env`, `disabled`; `${VAR}` is expanded in `env`
//! (<https://kiro.dev/docs/mcp/configuration>,
//! <https://kiro.dev/docs/cli/mcp/configuration>; rechecked 2026-12-03: the
//! documented structure is `command`, `args`, `env` with `"${EXPANDED_VARIABLE}"`,
//! `disabled`, `autoApprove`, `disabledTools`). The Windows path is assumed
//! to follow `%USERPROFILE%` (not stated in the docs). No remote form was
//! checked against the docs, so none is offered.

use std::path::Path;

use serde::Serialize;

use super::super::paths::{Home, Scope, Syntax, join};
use super::super::spec::{ServerSpec, StdioEntry, project, servers_file, user_os};
use super::super::validate::{MCP_SERVERS, map};
use super::super::{API_KEY_ENV, Format, Snippet};
use super::{ClientFile, ClientSpec, Remote, braces, no_check, no_more_files};
use crate::error::Result;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "Kiro",
    aliases: &["kiro-cli"],
    shape: map(MCP_SERVERS),
    secret_ref: Some(braces),
    render,
    check: no_check,
    cli: None,
    default_scope: Scope::User,
    file,
    also_read: no_more_files,
    no_file: None,
    remote: Remote::Unsupported(
        "no remote form of Kiro was checked against its documentation: use the local form \
         (`gatehouse config --client kiro`) on the machine that holds the site",
    ),
};

fn file(home: &Home, scope: Scope, project: &Path, _: &str) -> Option<ClientFile> {
    let base = match scope {
        Scope::User => &home.dir,
        Scope::Project => project,
        Scope::Local => return None,
    };
    Some(ClientFile::new(
        join(base, &[".kiro", "settings", "mcp.json"]),
        Syntax::Json,
    ))
}

fn render(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    #[derive(Serialize)]
    struct Entry<'a> {
        #[serde(flatten)]
        entry: StdioEntry<'a>,
        disabled: bool,
    }
    let entry = Entry {
        entry: StdioEntry::new(spec, None),
        disabled: false,
    };
    let text = servers_file("mcpServers", &spec.name, entry)?;
    let locations = vec![
        user_os("macOS/Linux", "~/.kiro/settings/mcp.json"),
        user_os("Windows", "%USERPROFILE%\\.kiro\\settings\\mcp.json"),
        project(".kiro/settings/mcp.json"),
    ];
    let mut what = String::from(
        "Merge this entry into \"mcpServers\" of ~/.kiro/settings/mcp.json (every workspace) or \
         .kiro/settings/mcp.json (this workspace); Kiro reconnects on save.",
    );
    if spec.by_reference() {
        what.push_str(&format!(
            " Kiro expands ${{{API_KEY_ENV}}} from its own environment: start it where \
             {API_KEY_ENV} is exported."
        ));
    }
    Ok(vec![spec.snippet(Format::Json, locations, text, &what)])
}
