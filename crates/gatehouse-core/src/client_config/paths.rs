//! Where each client keeps its MCP configuration on this machine, per OS and
//! scope. The renderers' [`Location`](super::Location)s say the same for people;
//! this module resolves real paths for `install` and `doctor`.
//!
//! Everything hangs off a [`Home`]: the user's home directory and the few
//! environment variables clients honour (`XDG_CONFIG_HOME`, `APPDATA`,
//! `CODEX_HOME`, ...). [`Home::from_env`] reads them from the process, so a test
//! (or a user) points every client at a fixture tree by setting `HOME`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Client;
use crate::error::{Error, Result, codes};

/// The operating system whose layout to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    Linux,
    Macos,
    Windows,
}

impl Os {
    /// The OS this binary runs on (other Unixes use the Linux layout).
    pub fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::Macos
        } else if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }
}

/// Which of a client's files: every project (`user`), this project's
/// (`project`, usually committed), or this project's kept outside it (`local`,
/// Claude Code only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    User,
    Project,
    Local,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Local => "local",
        }
    }
}

impl std::str::FromStr for Scope {
    type Err = Error;
    fn from_str(s: &str) -> Result<Scope> {
        match s.trim().to_ascii_lowercase().as_str() {
            "user" | "global" => Ok(Scope::User),
            "project" | "workspace" => Ok(Scope::Project),
            "local" => Ok(Scope::Local),
            _ => Err(Error::invalid(
                codes::CONFIG_SCOPE_UNSUPPORTED,
                format!("unknown scope {s:?}"),
                "use --scope user or --scope project (claude-code also has local)",
            )),
        }
    }
}

/// The user's home and the environment variables client paths depend on.
#[derive(Debug, Clone)]
pub struct Home {
    pub os: Os,
    pub dir: PathBuf,
    vars: BTreeMap<String, String>,
}

/// The variables [`Home::from_env`] reads.
const VARS: [&str; 8] = [
    "XDG_CONFIG_HOME",
    "APPDATA",
    "LOCALAPPDATA",
    "CODEX_HOME",
    "COPILOT_HOME",
    "CLINE_MCP_SETTINGS_PATH",
    "CLINE_DATA_DIR",
    "CLINE_DIR",
];

impl Home {
    /// A home at `dir` on `os`, with the given variables (others unset).
    pub fn new(os: Os, dir: PathBuf, vars: impl Fn(&str) -> Option<String>) -> Home {
        let vars = VARS
            .iter()
            .filter_map(|k| Some((k.to_string(), vars(k).filter(|v| !v.is_empty())?)))
            .collect();
        Home { os, dir, vars }
    }

    /// This process's home (`HOME`, or `USERPROFILE` on Windows) and variables.
    pub fn from_env() -> Result<Home> {
        let os = Os::current();
        let key = if os == Os::Windows {
            "USERPROFILE"
        } else {
            "HOME"
        };
        let dir = std::env::var_os(key)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| {
                Error::new(
                    codes::CONFIG_HOME_UNKNOWN,
                    format!("cannot find the home directory: {key} is not set"),
                )
                .hint(format!("set {key} to your home directory"))
            })?;
        Ok(Home::new(os, dir, |k| std::env::var(k).ok()))
    }

    fn var(&self, key: &str) -> Option<PathBuf> {
        self.vars.get(key).map(PathBuf::from)
    }

    /// `~/.config` or `$XDG_CONFIG_HOME` (Linux and macOS CLI tools).
    fn xdg_config(&self) -> PathBuf {
        self.var("XDG_CONFIG_HOME")
            .unwrap_or_else(|| self.dir.join(".config"))
    }

    /// `%APPDATA%` (Roaming).
    fn appdata(&self) -> PathBuf {
        self.var("APPDATA")
            .unwrap_or_else(|| self.dir.join("AppData").join("Roaming"))
    }

    fn localappdata(&self) -> PathBuf {
        self.var("LOCALAPPDATA")
            .unwrap_or_else(|| self.dir.join("AppData").join("Local"))
    }

    /// Where desktop apps keep per-user data: Application Support, APPDATA or
    /// the XDG config dir.
    fn app_data(&self) -> PathBuf {
        match self.os {
            Os::Macos => self.dir.join("Library").join("Application Support"),
            Os::Windows => self.appdata(),
            Os::Linux => self.xdg_config(),
        }
    }

    /// VS Code's user directory (`.../Code/User`).
    fn vscode_user(&self) -> PathBuf {
        self.app_data().join("Code").join("User")
    }
}

/// The syntax of a client's file, as far as editing it is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Syntax {
    /// Strict JSON: the client's parser rejects comments.
    Json,
    /// JSON with comments and trailing commas (VS Code, Zed, Gemini CLI, opencode).
    Jsonc,
    Toml,
    Yaml,
    /// A YAML file Gatehouse owns whole (a Continue block file).
    YamlFile,
}

/// One client file at one scope.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    pub client: Client,
    pub scope: Scope,
    pub path: PathBuf,
    pub syntax: Syntax,
    /// Object keys from the root to the servers map, when it is not the
    /// client's usual [`Shape::servers`](super::Shape) (Claude Code local scope).
    #[serde(skip)]
    pub servers: Vec<String>,
    /// Set when the client installed here ignores this file, to the file it
    /// reads instead (Claude Desktop's `%APPDATA%` file under the MSIX app).
    #[serde(skip)]
    pub read_instead: Option<PathBuf>,
}

/// Every file `client` may read on this machine, user scope first. `project`
/// is the project folder for project and local scopes.
pub fn targets(client: Client, home: &Home, project: &Path) -> Vec<Target> {
    [Scope::User, Scope::Project, Scope::Local]
        .into_iter()
        .filter_map(|scope| target(client, scope, home, project, None).ok())
        .collect()
}

/// Every file `client` may read, for the doctor: [`targets`]; for Continue
/// every block file in `.continue/mcpServers/` (an admin may have named its
/// file anything) and the `mcpServers` of `~/.continue/config.yaml`; for
/// opencode both `opencode.json` and `opencode.jsonc`; for Claude Desktop on
/// Windows both installers' files, the one the installed app ignores marked
/// with [`Target::read_instead`].
pub fn read_targets(client: Client, home: &Home, project: &Path) -> Vec<Target> {
    let mut all = targets(client, home, project);
    let found = |scope: Scope, path: PathBuf, syntax: Syntax| Target {
        client,
        scope,
        path,
        syntax,
        servers: client
            .shape()
            .servers
            .iter()
            .map(|k| k.to_string())
            .collect(),
        read_instead: None,
    };
    match client {
        Client::Opencode => {
            for t in all.clone() {
                let other = t.path.with_extension(match t.path.extension() {
                    Some(e) if e == "jsonc" => "json",
                    _ => "jsonc",
                });
                all.push(found(t.scope, other, Syntax::Jsonc));
            }
        }
        Client::ClaudeDesktop if home.os == Os::Windows => {
            if let (Some(msix), legacy) = claude_desktop_windows(home) {
                all.push(Target {
                    read_instead: Some(msix),
                    ..found(Scope::User, legacy, Syntax::Json)
                });
            }
        }
        Client::Continue => {
            for (scope, base) in [(Scope::User, home.dir.as_path()), (Scope::Project, project)] {
                let Ok(dir) = std::fs::read_dir(base.join(".continue/mcpServers")) else {
                    continue;
                };
                let mut blocks: Vec<PathBuf> = dir
                    .filter_map(|e| Some(e.ok()?.path()))
                    .filter(|p| {
                        matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))
                    })
                    .collect();
                blocks.sort();
                for path in blocks {
                    if !all.iter().any(|t| t.path == path) {
                        all.push(found(scope, path, Syntax::YamlFile));
                    }
                }
            }
            // The main config lists servers the same way as a block file.
            all.push(found(
                Scope::User,
                home.dir.join(".continue/config.yaml"),
                Syntax::Yaml,
            ));
        }
        _ => {}
    }
    all
}

/// The default scope for `install`: user where the client has a user file.
pub fn default_scope(client: Client) -> Scope {
    match client {
        Client::RooCode | Client::Opencode | Client::Continue => Scope::Project,
        _ => Scope::User,
    }
}

/// The file `client` reads at `scope`. `name` is the server name, for clients
/// whose file is per server (Continue).
pub fn target(
    client: Client,
    scope: Scope,
    home: &Home,
    project: &Path,
    name: Option<&str>,
) -> Result<Target> {
    use Scope::*;
    use Syntax::*;
    let h = &home.dir;
    let windows = home.os == Os::Windows;
    let servers = |keys: &[&str]| keys.iter().map(|k| k.to_string()).collect::<Vec<_>>();
    let default_servers = client.shape().servers;
    let (path, syntax, servers) = match (client, scope) {
        (Client::ClaudeDesktop, User) => (claude_desktop(home), Json, servers(default_servers)),
        (Client::ClaudeCode, User) => (h.join(".claude.json"), Json, servers(default_servers)),
        (Client::ClaudeCode, Project) => {
            (project.join(".mcp.json"), Json, servers(default_servers))
        }
        (Client::ClaudeCode, Local) => {
            let key = project.to_string_lossy();
            (
                h.join(".claude.json"),
                Json,
                servers(&["projects", &key, "mcpServers"]),
            )
        }
        (Client::Cursor, User) => (h.join(".cursor/mcp.json"), Json, servers(default_servers)),
        (Client::Cursor, Project) => (
            project.join(".cursor/mcp.json"),
            Json,
            servers(default_servers),
        ),
        (Client::VsCode, User) => (
            home.vscode_user().join("mcp.json"),
            Jsonc,
            servers(default_servers),
        ),
        (Client::VsCode, Project) => (
            project.join(".vscode/mcp.json"),
            Jsonc,
            servers(default_servers),
        ),
        (Client::Windsurf, User) => (
            h.join(".codeium/windsurf/mcp_config.json"),
            Json,
            servers(default_servers),
        ),
        (Client::Zed, User) => {
            let dir = if windows {
                home.appdata().join("Zed")
            } else {
                home.xdg_config().join("zed")
            };
            (dir.join("settings.json"), Jsonc, servers(default_servers))
        }
        (Client::Zed, Project) => (
            project.join(".zed/settings.json"),
            Jsonc,
            servers(default_servers),
        ),
        (Client::Codex, User) => {
            let dir = home.var("CODEX_HOME").unwrap_or_else(|| h.join(".codex"));
            (dir.join("config.toml"), Toml, servers(default_servers))
        }
        (Client::Codex, Project) => (
            project.join(".codex/config.toml"),
            Toml,
            servers(default_servers),
        ),
        (Client::Continue, User | Project) => {
            let base = if scope == User { h } else { project };
            let file = format!("{}.yaml", name.unwrap_or(super::DEFAULT_SERVER_NAME));
            (
                base.join(".continue/mcpServers").join(file),
                YamlFile,
                Vec::new(),
            )
        }
        (Client::Gemini, User) => (
            h.join(".gemini/settings.json"),
            Jsonc,
            servers(default_servers),
        ),
        (Client::Gemini, Project) => (
            project.join(".gemini/settings.json"),
            Jsonc,
            servers(default_servers),
        ),
        (Client::Cline, User) => (cline(home), Json, servers(default_servers)),
        (Client::RooCode, User) => (
            home.vscode_user()
                .join("globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json"),
            Json,
            servers(default_servers),
        ),
        (Client::RooCode, Project) => (
            project.join(".roo/mcp.json"),
            Json,
            servers(default_servers),
        ),
        (Client::Goose, User) => {
            let dir = if windows {
                home.appdata().join("Block/goose/config")
            } else {
                home.xdg_config().join("goose")
            };
            (dir.join("config.yaml"), Yaml, servers(default_servers))
        }
        (Client::Opencode, User | Project) => {
            let dir = if scope == User {
                home.xdg_config().join("opencode")
            } else {
                project.to_path_buf()
            };
            (opencode(&dir), Jsonc, servers(default_servers))
        }
        (Client::Kiro, User) => (
            h.join(".kiro/settings/mcp.json"),
            Json,
            servers(default_servers),
        ),
        (Client::Kiro, Project) => (
            project.join(".kiro/settings/mcp.json"),
            Json,
            servers(default_servers),
        ),
        (Client::Copilot, User) => {
            let dir = home
                .var("COPILOT_HOME")
                .unwrap_or_else(|| h.join(".copilot"));
            (dir.join("mcp-config.json"), Json, servers(default_servers))
        }
        (Client::Copilot, Project) => (project.join(".mcp.json"), Json, servers(default_servers)),
        (Client::LmStudio, User) => (h.join(".lmstudio/mcp.json"), Json, servers(default_servers)),
        (Client::JetBrains, _) => {
            return Err(Error::invalid(
                codes::CONFIG_INSTALL_UNSUPPORTED,
                "JetBrains AI Assistant keeps MCP servers in the IDE's settings, not in a file",
                "paste the JSON from `gatehouse config --client jetbrains` into Settings | Tools | \
                 AI Assistant | Model Context Protocol (MCP) → Add → As JSON",
            ));
        }
        (client, scope) => {
            return Err(Error::invalid(
                codes::CONFIG_SCOPE_UNSUPPORTED,
                format!(
                    "{} has no {} configuration file",
                    client.display_name(),
                    scope.as_str()
                ),
                format!("use --scope {}", default_scope(client).as_str()),
            ));
        }
    };
    Ok(Target {
        client,
        scope,
        path,
        syntax,
        servers,
        read_instead: None,
    })
}

/// opencode reads `opencode.json` or `opencode.jsonc`: an admin's existing
/// `.jsonc` is edited rather than a second file created beside it.
fn opencode(dir: &Path) -> PathBuf {
    let jsonc = dir.join("opencode.jsonc");
    let json = dir.join("opencode.json");
    if jsonc.is_file() && !json.is_file() {
        jsonc
    } else {
        json
    }
}

/// On Windows the MSIX app reads its virtualised copy under
/// `%LOCALAPPDATA%\Packages\Claude_<publisher>\LocalCache\Roaming\Claude`; the
/// older installer reads `%APPDATA%\Claude`.
fn claude_desktop(home: &Home) -> PathBuf {
    match home.os {
        Os::Macos => home.app_data().join("Claude").join(CLAUDE_DESKTOP_FILE),
        Os::Linux => home.xdg_config().join("Claude").join(CLAUDE_DESKTOP_FILE),
        Os::Windows => match claude_desktop_windows(home) {
            (Some(msix), _) => msix,
            (None, legacy) => legacy,
        },
    }
}

const CLAUDE_DESKTOP_FILE: &str = "claude_desktop_config.json";

/// Claude Desktop's Windows files: the MSIX package's (when the package is
/// installed) and `%APPDATA%`'s. The package folder is found by its `Claude_`
/// prefix rather than the publisher hash, which could change.
fn claude_desktop_windows(home: &Home) -> (Option<PathBuf>, PathBuf) {
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
        msix.map(|pkg| {
            pkg.join("LocalCache/Roaming/Claude")
                .join(CLAUDE_DESKTOP_FILE)
        }),
        home.appdata().join("Claude").join(CLAUDE_DESKTOP_FILE),
    )
}

/// Cline 4's shared file, with its override variables in Cline's order.
fn cline(home: &Home) -> PathBuf {
    const FILE: &str = "cline_mcp_settings.json";
    if let Some(path) = home.var("CLINE_MCP_SETTINGS_PATH") {
        return path;
    }
    if let Some(dir) = home.var("CLINE_DATA_DIR") {
        return dir.join("settings").join(FILE);
    }
    let root = home
        .var("CLINE_DIR")
        .unwrap_or_else(|| home.dir.join(".cline"));
    root.join("data/settings").join(FILE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home(os: Os, vars: &[(&str, &str)]) -> Home {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Home::new(os, PathBuf::from("/h"), |k| vars.get(k).cloned())
    }

    fn path(client: Client, scope: Scope, home: &Home) -> PathBuf {
        target(client, scope, home, Path::new("/p"), None)
            .unwrap()
            .path
    }

    #[test]
    fn claude_desktop_prefers_the_msix_package_on_windows() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("Local");
        let h = home(
            Os::Windows,
            &[
                ("APPDATA", "C:\\Users\\u\\AppData\\Roaming"),
                ("LOCALAPPDATA", local.to_str().unwrap()),
            ],
        );
        let legacy = path(Client::ClaudeDesktop, Scope::User, &h);
        assert!(
            legacy.starts_with("C:\\Users\\u\\AppData\\Roaming"),
            "{legacy:?}"
        );
        std::fs::create_dir_all(local.join("Packages/Claude_pzs8sxrjxfjjc")).unwrap();
        let msix = path(Client::ClaudeDesktop, Scope::User, &h);
        assert_eq!(
            msix,
            local.join(
                "Packages/Claude_pzs8sxrjxfjjc/LocalCache/Roaming/Claude/claude_desktop_config.json"
            )
        );
    }

    #[test]
    fn overrides_move_files() {
        let h = home(
            Os::Linux,
            &[
                ("CODEX_HOME", "/c"),
                ("COPILOT_HOME", "/k"),
                ("CLINE_DATA_DIR", "/d"),
                ("XDG_CONFIG_HOME", "/x"),
            ],
        );
        assert_eq!(
            path(Client::Codex, Scope::User, &h),
            Path::new("/c/config.toml")
        );
        assert_eq!(
            path(Client::Copilot, Scope::User, &h),
            Path::new("/k/mcp-config.json")
        );
        assert_eq!(
            path(Client::Cline, Scope::User, &h),
            Path::new("/d/settings/cline_mcp_settings.json")
        );
        assert_eq!(
            path(Client::Goose, Scope::User, &h),
            Path::new("/x/goose/config.yaml")
        );
        assert_eq!(
            path(Client::Zed, Scope::User, &h),
            Path::new("/x/zed/settings.json")
        );
    }

    #[test]
    fn every_installable_client_has_its_default_scope() {
        let h = home(Os::Macos, &[]);
        for client in Client::ALL {
            let t = target(client, default_scope(client), &h, Path::new("/p"), None);
            assert_eq!(t.is_ok(), client.installable(), "{client}");
        }
        let err = target(Client::Windsurf, Scope::Project, &h, Path::new("/p"), None).unwrap_err();
        assert_eq!(err.code, codes::CONFIG_SCOPE_UNSUPPORTED);
        let local = target(Client::ClaudeCode, Scope::Local, &h, Path::new("/p"), None).unwrap();
        assert_eq!(local.servers, ["projects", "/p", "mcpServers"]);
    }
}
