//! Cline (VS Code extension, CLI, JetBrains plugin): one global file, no
//! project file. Since v4.0 (2026-06) every Cline host shares
//! `~/.cline/data/settings/cline_mcp_settings.json` (`CLINE_MCP_SETTINGS_PATH`,
//! `CLINE_DATA_DIR` or `CLINE_DIR` move it); v3 kept it in VS Code's
//! globalStorage (`saoudrizwan.claude-dev/settings/`), which v4 migrates.
//! Entry: `mcpServers` → `command`, `args`, `env`, `disabled`, `autoApprove`;
//! `${env:VAR}` is expanded across the whole entry since 2025-12-13 (#8079).
//! Sources: cline/cline snapshot 2026-08-22, `apps/vscode/src/services/mcp/schemas.ts`,
//! `apps/vscode/src/utils/envExpansion.ts`, `apps/vscode/src/sdk/SdkController.ts`
//! (the docs page names `~/.cline/mcp.json`; the code does not read it).

use serde::Serialize;

use super::super::spec::{ServerSpec, StdioEntry, env_reference_note, servers_file, user_os};
use super::super::{Format, Snippet};
use crate::error::Result;

pub(super) fn render(spec: &ServerSpec) -> Result<Snippet> {
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
        user_os(
            "Cline 4 and later, every OS",
            "~/.cline/data/settings/cline_mcp_settings.json",
        ),
        user_os(
            "Cline 3 in VS Code, Linux",
            "~/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
        ),
    ];
    let mut what = String::from(
        "In Cline, open MCP Servers → Configure → Configure MCP Servers and merge this entry into \
         \"mcpServers\" (Cline reloads the file on save).",
    );
    if spec.by_reference() {
        what.push_str(&env_reference_note("Cline (since December 2025)"));
    }
    Ok(spec.snippet(Format::Json, locations, text, &what))
}
