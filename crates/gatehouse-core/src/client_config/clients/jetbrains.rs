//! JetBrains AI Assistant: Settings | Tools | AI Assistant | Model Context
//! Protocol (MCP) → Add → "As JSON", a Claude Desktop-style `mcpServers` object
//! (<https://www.jetbrains.com/help/ai-assistant/mcp.html>, 2026.1/2026.2). The
//! IDE keeps servers in its own settings, with no documented file, so there is
//! nothing to `install`; no secret indirection is documented either.

use super::super::spec::{ServerSpec, StdioEntry, servers_file};
use super::super::{Format, Snippet};
use crate::error::Result;

pub(super) fn render(spec: &ServerSpec) -> Result<Snippet> {
    let text = servers_file("mcpServers", &spec.name, StdioEntry::new(spec, None))?;
    Ok(spec.snippet(
        Format::Json,
        Vec::new(),
        text,
        "In the IDE open Settings | Tools | AI Assistant | Model Context Protocol (MCP), click \
         Add, choose \"As JSON\", paste this, and pick global or project level.",
    ))
}
