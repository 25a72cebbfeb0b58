//! Claude Desktop: `claude_desktop_config.json`, `mcpServers` → `command`,
//! `args`, `env` (<https://modelcontextprotocol.io/quickstart/user>). The file
//! has no variable expansion, hence no `--secret-ref`: `gatehouse config mcpb`
//! is the way to keep the key out of it.
//!
//! Windows has two locations. Since the MSIX installer (early 2026) the app runs
//! packaged and reads
//! `%LOCALAPPDATA%\Packages\Claude_pzs8sxrjxfjjc\LocalCache\Roaming\Claude\`;
//! a file at `%APPDATA%\Claude\` is silently ignored there (AppContainer file
//! virtualisation), and Settings → Developer → Edit Config may still open the
//! `%APPDATA%` one, so the instructions do not send people there. The older
//! .exe (Squirrel) installer still reads `%APPDATA%\Claude\`. Sources:
//! anthropics/claude-code#26073 (app 1.1.3189.0, package `Claude_pzs8sxrjxfjjc`),
//! akitaonrails/ai-memory#250 (the move to MSIX, Feb 2026); not in Anthropic's
//! own docs at the time of writing.
//!
//! Remote: Claude Desktop (like claude.ai) adds remote servers only as custom
//! connectors, which authenticate with OAuth; the config file's `mcpServers`
//! takes stdio servers only, so there is no way to send a static header.

use std::path::{Path, PathBuf};

use super::super::paths::{Home, Os, Scope, Syntax, join};
use super::super::spec::{ServerSpec, StdioEntry, servers_file, user_os};
use super::super::validate::{MCP_SERVERS, map};
use super::super::{Format, Snippet};
use super::{ClientFile, ClientSpec, Remote, no_check};
use crate::error::Result;

pub(super) const SPEC: ClientSpec = ClientSpec {
    name: "Claude Desktop",
    aliases: &[],
    shape: map(MCP_SERVERS),
    secret_ref: None,
    render,
    check: no_check,
    cli: None,
    default_scope: Scope::User,
    file,
    also_read,
    no_file: None,
    remote: Remote::Unsupported(
        "Claude Desktop (and claude.ai) add remote servers only as custom connectors (Settings → \
         Connectors), which sign in with OAuth and cannot send a static Authorization header: \
         use the local form here (`gatehouse config --client claude-desktop`, or `gatehouse \
         config mcpb` to keep the key in the OS keychain), or connect through OAuth once the \
         server offers it",
    ),
};

fn render(spec: &ServerSpec) -> Result<Vec<Snippet>> {
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
    Ok(vec![spec.snippet(
        Format::Json,
        locations,
        text,
        "Merge this entry into \"mcpServers\" of claude_desktop_config.json, save, and restart \
         Claude Desktop. On Windows the MSIX app reads only its package's copy and ignores \
         %APPDATA%\\Claude (which Settings → Developer → Edit Config may still open): \
         `gatehouse config install claude-desktop` picks the file this install reads.",
    )])
}

const FILE: &str = "claude_desktop_config.json";

/// On Windows the MSIX app reads its virtualised copy when the package is
/// installed; the older installer reads `%APPDATA%\Claude`.
fn file(home: &Home, scope: Scope, _: &Path, _: &str) -> Option<ClientFile> {
    if scope != Scope::User {
        return None;
    }
    let path = match home.os {
        Os::Macos => join(&home.app_data(), &["Claude", FILE]),
        Os::Linux => join(&home.xdg_config(), &["Claude", FILE]),
        Os::Windows => match windows(home) {
            (Some(msix), _) => msix,
            (None, legacy) => legacy,
        },
    };
    Some(ClientFile::new(path, Syntax::Json))
}

/// The `%APPDATA%` file when the MSIX app is installed, marked as ignored.
fn also_read(home: &Home, _: &Path) -> Vec<(Scope, ClientFile)> {
    match windows(home) {
        (Some(msix), legacy) if home.os == Os::Windows => vec![(
            Scope::User,
            ClientFile {
                read_instead: Some(msix),
                ..ClientFile::new(legacy, Syntax::Json)
            },
        )],
        _ => Vec::new(),
    }
}

/// Claude Desktop's Windows files: the MSIX package's (when the package is
/// installed) and `%APPDATA%`'s. The package folder is found by its `Claude_`
/// prefix rather than the publisher hash, which could change.
fn windows(home: &Home) -> (Option<PathBuf>, PathBuf) {
    let packages = home.localappdata().join("Packages");
    let msix = std::fs::read_dir(&packages).ok().and_then(|dir| {
        dir.flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("Claude_"))
            })
            .min()
    });
    (
        msix.map(|pkg| join(&pkg, &["LocalCache", "Roaming", "Claude", FILE])),
        join(&home.appdata(), &["Claude", FILE]),
    )
}
