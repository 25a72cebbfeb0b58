//! Cline (VS Code extension, CLI, JetBrains plugin): one global file, no
//! project file. Since v4.0 (2026-06) every Cline host shares
//! `~/.cline/data/settings/cline_mcp_settings.json` (`CLINE_MCP_SETTINGS_PATH`,
//! `CLINE_DATA_DIR` or `CLINE_DIR` move it); v3 kept it in VS Code's
//! globalStorage (`saoudrizwan.claude-dev/settings/`), which v4 migrates.
//! Entry: `mcpServers` → `command`, `args`, `env`, `disabled`, `autoApprove`.
//! Remote: `type: "streamableHttp"`, `url`, `headers`.
//!
//! `${env:VAR}` is expanded across the whole entry since 2025-12-13 (#8079),
//! but only by the VS Code extension (`McpHub.ts` calls `envExpansion.ts`); the
//! Cline CLI passes the literal through, so `--secret-ref` is for the
//! extension only. Sources: cline/cline snapshot 2026-08-22,
//! `apps/vscode/src/services/mcp/schemas.ts`, `apps/vscode/src/utils/envExpansion.ts`,
//! `apps/vscode/src/sdk/SdkController.ts` (the docs page names
//! `~/.cline/mcp.json`; the code does not read it).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::super::paths::{Home, Scope, Syntax};
use super::super::spec::{ServerSpec, StdioEntry, servers_file, user_os};
use super::super::validate::{MCP_SERVERS, map};
use super::super::{API_KEY_ENV, Format, Location, Snippet};
use super::{
    ClientFile, ClientSpec, Remote, RemoteShape, env_colon, no_check, no_more_files, remote_entry,
    remote_file,
};
use crate::error::Result;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "Cline",
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

const REMOTE: RemoteShape = RemoteShape::url(Some(("type", "streamableHttp")), true);

/// Cline 4's shared file, with its override variables in Cline's order.
fn file(home: &Home, scope: Scope, _: &Path, _: &str) -> Option<ClientFile> {
    (scope == Scope::User).then(|| ClientFile::new(settings_file(home), Syntax::Json))
}

fn settings_file(home: &Home) -> PathBuf {
    const FILE: &str = "cline_mcp_settings.json";
    if let Some(path) = home.var("CLINE_MCP_SETTINGS_PATH") {
        return path;
    }
    if let Some(dir) = home.var("CLINE_DATA_DIR") {
        return dir.join("settings").join(FILE);
    }
    let root = home
        .var("CLINE_DIR")
        .unwrap_or_else(|| home.dir.join(".cline"));
    root.join("data").join("settings").join(FILE)
}

fn locations() -> Vec<Location> {
    vec![
        user_os(
            "Cline 4 and later, every OS",
            "~/.cline/data/settings/cline_mcp_settings.json",
        ),
        user_os(
            "Cline 3 in VS Code, Linux",
            "~/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
        ),
    ]
}

fn what(spec: &ServerSpec) -> String {
    let mut what = String::from(
        "In Cline, open MCP Servers → Configure → Configure MCP Servers and merge this entry into \
         \"mcpServers\" (Cline reloads the file on save).",
    );
    if spec.by_reference() {
        what.push_str(&format!(
            " VS Code extension only: the extension (since December 2025) resolves \
             ${{env:{API_KEY_ENV}}} from its own environment, so start VS Code from a shell where \
             {API_KEY_ENV} is exported; the Cline CLI passes the text through unexpanded, so for \
             the CLI write the key instead (drop --secret-ref)."
        ));
    }
    what
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
    Ok(vec![spec.snippet(
        Format::Json,
        locations(),
        text,
        &what(spec),
    )])
}

fn remote(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    let mut entry = remote_entry(spec, &REMOTE);
    entry.push("disabled", false);
    let text = remote_file(spec, "mcpServers", entry)?;
    Ok(vec![spec.snippet(
        Format::Json,
        locations(),
        text,
        &what(spec),
    )])
}
