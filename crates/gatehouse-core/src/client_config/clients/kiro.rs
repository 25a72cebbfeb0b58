//! Kiro (IDE and kiro-cli): `~/.kiro/settings/mcp.json` (user) or
//! `.kiro/settings/mcp.json` (workspace, wins on conflict); `mcpServers` →
//! `command`, `args`, `env`, `disabled`; `${VAR}` is expanded in `env`
//! (<https://kiro.dev/docs/mcp/configuration>,
//! <https://kiro.dev/docs/cli/mcp/configuration>; rechecked 2026-12-03: the
//! documented structure is `command`, `args`, `env` with `"${EXPANDED_VARIABLE}"`,
//! `disabled`, `autoApprove`, `disabledTools`). The Windows path is assumed
//! to follow `%USERPROFILE%` (not stated in the docs).

use serde::Serialize;

use super::super::spec::{ServerSpec, StdioEntry, project, servers_file, user_os};
use super::super::{API_KEY_ENV, Format, Snippet};
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
        user_os("macOS/Linux", "~/.kiro/settings/mcp.json"),
        user_os("Windows", "%USERPROFILE%\\.kiro\\settings\\mcp.json"),
        project(".kiro/settings/mcp.json"),
    ];
    let mut what = String::from(
        "Merge this entry into \"mcpServers\" of ~/.kiro/settings/mcp.json (every workspace) or \
         .kiro/settings/mcp.json (this workspace); Kiro reconnects on save.",
    );
    if spec.by_reference() {
        what.push_str(&format!(
            " Kiro expands ${{{API_KEY_ENV}}} from its own environment: start it where \
             {API_KEY_ENV} is exported."
        ));
    }
    Ok(spec.snippet(Format::Json, locations, text, &what))
}
