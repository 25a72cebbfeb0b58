//! Roo Code: `.roo/mcp.json` in the workspace (wins over global entries of the
//! same name) or the global `mcp_settings.json` in VS Code's globalStorage
//! (`rooveterinaryinc.roo-cline/settings/`); `mcpServers` → `type`, `command`,
//! `args`, `env`. `${env:VAR}` is expanded over the whole entry; a missing
//! variable is left as is. Sources: RooCodeInc/Roo-Code snapshot 2026-04-14,
//! `src/services/mcp/McpHub.ts`, `src/utils/config.ts`; Roo-Code-Docs
//! `docs/features/mcp/using-mcp-in-roo.mdx`.

use super::super::spec::{
    ServerSpec, StdioEntry, env_reference_note, project, servers_file, user_os,
};
use super::super::{Format, Snippet};
use crate::error::Result;

pub(super) fn render(spec: &ServerSpec) -> Result<Snippet> {
    let text = servers_file(
        "mcpServers",
        &spec.name,
        StdioEntry::new(spec, Some("stdio")),
    )?;
    let locations = vec![
        project(".roo/mcp.json"),
        user_os(
            "Linux",
            "~/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json",
        ),
        user_os(
            "macOS",
            "~/Library/Application Support/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json",
        ),
        user_os(
            "Windows",
            "%APPDATA%\\Code\\User\\globalStorage\\rooveterinaryinc.roo-cline\\settings\\mcp_settings.json",
        ),
    ];
    let mut what = String::from(
        "Save as .roo/mcp.json in the workspace (Edit Project MCP), or merge into the global \
         file (Edit Global MCP); merge into \"mcpServers\" if the file exists.",
    );
    if spec.by_reference() {
        what.push_str(&env_reference_note("Roo Code"));
    }
    Ok(spec.snippet(Format::Json, locations, text, &what))
}
