//! Cursor: `.cursor/mcp.json` (project) or `~/.cursor/mcp.json` (user),
//! `mcpServers` → `command`, `args`, `env`; `${env:NAME}` interpolation in those
//! fields (<https://cursor.com/docs/mcp>, "Config interpolation").

use super::super::spec::{ServerSpec, StdioEntry, env_reference_note, project, servers_file, user};
use super::super::{Format, Snippet};
use crate::error::Result;

pub(super) fn render(spec: &ServerSpec) -> Result<Snippet> {
    let text = servers_file("mcpServers", &spec.name, StdioEntry::new(spec, None))?;
    let locations = vec![project(".cursor/mcp.json"), user("~/.cursor/mcp.json")];
    let mut what = String::from(
        "Save as .cursor/mcp.json in the project, or ~/.cursor/mcp.json for every project \
         (merge into \"mcpServers\" if the file exists).",
    );
    if spec.by_reference() {
        what.push_str(&env_reference_note("Cursor"));
    }
    Ok(spec.snippet(Format::Json, locations, text, &what))
}
