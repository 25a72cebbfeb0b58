//! LM Studio: `~/.lmstudio/mcp.json` (`%USERPROFILE%\.lmstudio\mcp.json` on
//! Windows), "Cursor's mcp.json notation": `mcpServers` → `command`, `args`,
//! `env` (lmstudio-ai/docs `0_app/2_mcp/index.mdx`, since 0.3.17). No secret
//! indirection is documented. lmstudio-bug-tracker#1371 reports a copy at
//! `~/.cache/lm-studio/mcp.json` on one macOS install, so the in-app editor is
//! the fallback. Rechecked 2026-12-03 against lmstudio.ai/docs/app/mcp ("LM
//! Studio currently follows Cursor's mcp.json notation"; opened from Program →
//! Install → Edit mcp.json).

use super::super::spec::{ServerSpec, StdioEntry, servers_file, user_os};
use super::super::{Format, Snippet};
use crate::error::Result;

pub(super) fn render(spec: &ServerSpec) -> Result<Snippet> {
    let text = servers_file("mcpServers", &spec.name, StdioEntry::new(spec, None))?;
    let locations = vec![
        user_os("macOS/Linux", "~/.lmstudio/mcp.json"),
        user_os("Windows", "%USERPROFILE%\\.lmstudio\\mcp.json"),
    ];
    Ok(spec.snippet(
        Format::Json,
        locations,
        text,
        "Merge this entry into \"mcpServers\" of mcp.json (in LM Studio: Program tab → Install → \
         Edit mcp.json, which opens the file the app really reads).",
    ))
}
