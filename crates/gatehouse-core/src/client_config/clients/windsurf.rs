//! Windsurf: `~/.codeium/windsurf/mcp_config.json`, the Claude Desktop schema
//! (`mcpServers` → `command`, `args`, `env`); `${env:VAR}` is interpolated in
//! `command`, `args`, `env`, `serverUrl`, `url` and `headers`
//! (<https://docs.windsurf.com/windsurf/cascade/mcp>, "Config interpolation").
//! The raw file is reached from Cascade → MCP Servers (the older "Windsurf
//! Settings → MCP" entry moved there).

use super::super::spec::{ServerSpec, StdioEntry, env_reference_note, servers_file, user_os};
use super::super::{Format, Snippet};
use crate::error::Result;

pub(super) fn render(spec: &ServerSpec) -> Result<Snippet> {
    let text = servers_file("mcpServers", &spec.name, StdioEntry::new(spec, None))?;
    let locations = vec![
        user_os("macOS/Linux", "~/.codeium/windsurf/mcp_config.json"),
        user_os(
            "Windows",
            "%USERPROFILE%\\.codeium\\windsurf\\mcp_config.json",
        ),
    ];
    let mut what = String::from(
        "Merge this entry into \"mcpServers\" of mcp_config.json (Cascade → MCP Servers → View \
         raw config), then press refresh in the MCP Servers panel.",
    );
    if spec.by_reference() {
        what.push_str(&env_reference_note("Windsurf"));
    }
    Ok(spec.snippet(Format::Json, locations, text, &what))
}
