//! Claude Desktop: `claude_desktop_config.json`, `mcpServers` → `command`,
//! `args`, `env` (<https://modelcontextprotocol.io/quickstart/user>). The file
//! has no variable expansion, hence no `--secret-ref`: `gatehouse config mcpb`
//! is the way to keep the key out of it.
//!
//! Windows has two locations. Since the MSIX installer (early 2026) the app runs
//! packaged and reads
//! `%LOCALAPPDATA%\Packages\Claude_pzs8sxrjxfjjc\LocalCache\Roaming\Claude\`;
//! a file at `%APPDATA%\Claude\` is silently ignored there (AppContainer file
//! virtualisation). The older .exe (Squirrel) installer still reads
//! `%APPDATA%\Claude\`. Sources: anthropics/claude-code#26073 (app 1.1.3189.0,
//! package `Claude_pzs8sxrjxfjjc`), akitaonrails/ai-memory#250 (the move to MSIX,
//! Feb 2026); not in Anthropic's own docs at the time of writing.

use super::super::spec::{ServerSpec, StdioEntry, servers_file, user_os};
use super::super::{Format, Snippet};
use crate::error::Result;

pub(super) fn render(spec: &ServerSpec) -> Result<Snippet> {
    let text = servers_file("mcpServers", &spec.name, StdioEntry::new(spec, None))?;
    let locations = vec![
        user_os(
            "macOS",
            "~/Library/Application Support/Claude/claude_desktop_config.json",
        ),
        user_os(
            "Windows, Microsoft Store / MSIX installer (2026 and later)",
            "%LOCALAPPDATA%\\Packages\\Claude_pzs8sxrjxfjjc\\LocalCache\\Roaming\\Claude\\claude_desktop_config.json",
        ),
        user_os(
            "Windows, older .exe installer",
            "%APPDATA%\\Claude\\claude_desktop_config.json",
        ),
    ];
    Ok(spec.snippet(
        Format::Json,
        locations,
        text,
        "Open Settings → Developer → Edit Config (it opens the file this install reads), merge \
         this entry into \"mcpServers\", save, and restart Claude Desktop. On Windows the MSIX \
         app ignores %APPDATA%\\Claude; `gatehouse config install claude-desktop` picks the \
         right file.",
    ))
}
