//! JetBrains AI Assistant: Settings | Tools | AI Assistant | Model Context
//! Protocol (MCP) → Add → "As JSON", a Claude Desktop-style `mcpServers` object
//! (<https://www.jetbrains.com/help/ai-assistant/mcp.html>, 2026.1/2026.2). The
//! IDE keeps servers in its own settings, with no documented file, so there is
//! nothing to `install`; no secret indirection is documented either. No remote
//! form with a static header was checked against its documentation, so none is
//! offered.

use super::super::paths::Scope;
use super::super::spec::{ServerSpec, StdioEntry, servers_file};
use super::super::validate::{MCP_SERVERS, map};
use super::super::{Format, Snippet};
use super::{ClientSpec, Remote, no_check, no_more_files};
use crate::error::Result;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "JetBrains AI Assistant",
    aliases: &["jetbrains-ai", "jetbrains-ai-assistant"],
    shape: map(MCP_SERVERS),
    secret_ref: None,
    render,
    check: no_check,
    cli: None,
    default_scope: Scope::User,
    file: |_, _, _, _| None,
    also_read: no_more_files,
    no_file: Some((
        "JetBrains AI Assistant keeps MCP servers in the IDE's settings, not in a file",
        "paste the JSON from `gatehouse config --client jetbrains` into Settings | Tools | \
         AI Assistant | Model Context Protocol (MCP) → Add → As JSON",
    )),
    remote: Remote::Unsupported(
        "no remote form of JetBrains AI Assistant was checked against its documentation: use \
         the local form (`gatehouse config --client jetbrains`) on the machine that holds the site",
    ),
};

fn render(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    let text = servers_file("mcpServers", &spec.name, StdioEntry::new(spec, None))?;
    Ok(vec![spec.snippet(
        Format::Json,
        Vec::new(),
        text,
        "In the IDE open Settings | Tools | AI Assistant | Model Context Protocol (MCP), click \
         Add, choose \"As JSON\", paste this, and pick global or project level.",
    )])
}
