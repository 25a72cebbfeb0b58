//! Zed: `context_servers` in `settings.json` → `command`, `args`, `env`
//! (<https://zed.dev/docs/ai/mcp>, "As Custom Servers"; zed-industries/zed
//! `ContextServerSettingsContent`, an untagged enum). No `"source": "custom"`:
//! Zed's settings migration of 2025-11-25 deletes it and it triggers a
//! deprecated-settings prompt. Zed has no secret indirection. The settings file
//! is JSON with comments, which `install` keeps.

use super::super::spec::{ServerSpec, StdioEntry, project, servers_file, user_os};
use super::super::{Format, Snippet};
use crate::error::Result;

pub(super) fn render(spec: &ServerSpec) -> Result<Snippet> {
    let text = servers_file("context_servers", &spec.name, StdioEntry::new(spec, None))?;
    let locations = vec![
        user_os("macOS/Linux", "~/.config/zed/settings.json"),
        user_os("Windows", "%APPDATA%\\Zed\\settings.json"),
        project(".zed/settings.json"),
    ];
    Ok(spec.snippet(
        Format::Json,
        locations,
        text,
        "Run \"zed: open settings file\" and merge this entry into \"context_servers\".",
    ))
}
