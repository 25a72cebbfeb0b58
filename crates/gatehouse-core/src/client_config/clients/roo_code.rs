//! Roo Code: `.roo/mcp.json` in the workspace (wins over global entries of the
//! same name) or the global `mcp_settings.json` in VS Code's globalStorage
//! (`rooveterinaryinc.roo-cline/settings/`); `mcpServers` → `type`, `command`,
//! `args`, `env`, or `type: "streamable-http"`, `url`, `headers` for a remote
//! server. `${env:VAR}` is expanded over the whole entry; a missing variable is
//! left as is. Sources: RooCodeInc/Roo-Code snapshot 2026-04-14,
//! `src/services/mcp/McpHub.ts`, `src/utils/config.ts`; Roo-Code-Docs
//! `docs/features/mcp/using-mcp-in-roo.mdx`.
//!
//! Roo Code was shut down on 2026-05-15 and its repository archived (the
//! notice on RooCodeInc/Roo-Code points to the community fork Zoo Code, which
//! has its own file, `zoo_code.rs`). The renderer is shared with that fork,
//! which kept the entry format.

use std::path::Path;

use super::super::paths::{Home, Scope, Syntax, join};
use super::super::spec::{
    ServerSpec, StdioEntry, env_reference_note, project, servers_file, user_os,
};
use super::super::validate::{MCP_SERVERS, Shape, map};
use super::super::{Format, Location, Snippet};
use super::{
    ClientFile, ClientSpec, Remote, RemoteShape, env_colon, no_check, no_more_files, remote_entry,
    remote_file,
};
use crate::error::Result;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "Roo Code",
    aliases: &["roo", "roocode"],
    shape: SHAPE,
    secret_ref: Some(env_colon),
    render: |spec| render(spec, &ROO),
    check: no_check,
    cli: None,
    default_scope: Scope::Project,
    file: |home, scope, project, _| file(home, scope, project, &ROO),
    also_read: no_more_files,
    no_file: None,
    remote: Remote::Form {
        shape: REMOTE,
        render: |spec| render(spec, &ROO),
    },
};

pub(super) const SHAPE: Shape = Shape {
    kind: Some(("type", "stdio")),
    ..map(MCP_SERVERS)
};

pub(super) const REMOTE: RemoteShape = RemoteShape::url(Some(("type", "streamable-http")), true);

/// What differs between Roo Code and its fork.
pub(super) struct Flavour {
    pub name: &'static str,
    /// The extension's globalStorage folder (`publisher.name`, lower case).
    pub storage: &'static str,
    /// The project folder holding `mcp.json`.
    pub project_dir: &'static str,
    /// A sentence in front of the instructions.
    pub note: &'static str,
}

const ROO: Flavour = Flavour {
    name: "Roo Code",
    storage: "rooveterinaryinc.roo-cline",
    project_dir: ".roo",
    note: "Roo Code was shut down on 2026-05-15 and its repository is archived: for a maintained \
           extension use its community fork Zoo Code (`--client zoo-code`).",
};

pub(super) fn file(
    home: &Home,
    scope: Scope,
    project: &Path,
    flavour: &Flavour,
) -> Option<ClientFile> {
    let path = match scope {
        Scope::User => join(
            &home.vscode_user(),
            &[
                "globalStorage",
                flavour.storage,
                "settings",
                "mcp_settings.json",
            ],
        ),
        Scope::Project => join(project, &[flavour.project_dir, "mcp.json"]),
        Scope::Local => return None,
    };
    Some(ClientFile::new(path, Syntax::Json))
}

fn locations(flavour: &Flavour) -> Vec<Location> {
    let global = |base: &str, sep: &str| {
        [
            base,
            "globalStorage",
            flavour.storage,
            "settings",
            "mcp_settings.json",
        ]
        .join(sep)
    };
    vec![
        project(&format!("{}/mcp.json", flavour.project_dir)),
        user_os("Linux", &global("~/.config/Code/User", "/")),
        user_os(
            "macOS",
            &global("~/Library/Application Support/Code/User", "/"),
        ),
        user_os("Windows", &global("%APPDATA%\\Code\\User", "\\")),
    ]
}

pub(super) fn render(spec: &ServerSpec, flavour: &Flavour) -> Result<Vec<Snippet>> {
    let text = match spec.url {
        Some(_) => remote_file(spec, "mcpServers", remote_entry(spec, &REMOTE))?,
        None => servers_file(
            "mcpServers",
            &spec.name,
            StdioEntry::new(spec, Some("stdio")),
        )?,
    };
    let mut what = format!(
        "{} Save as {}/mcp.json in the workspace (Edit Project MCP), or merge into the global \
         file (Edit Global MCP); merge into \"mcpServers\" if the file exists.",
        flavour.note, flavour.project_dir
    );
    if spec.by_reference() {
        what.push_str(&env_reference_note(flavour.name));
    }
    Ok(vec![spec.snippet(
        Format::Json,
        locations(flavour),
        text,
        what.trim_start(),
    )])
}
