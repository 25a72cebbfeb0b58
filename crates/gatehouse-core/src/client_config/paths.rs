//! Resolves the files each client reads, for `install` and `doctor`. Each
//! client's own file (`clients/<x>.rs`) says where its files are per system and
//! scope; this module holds what they share: the [`Home`] they hang off, the
//! [`Target`] they resolve to, and the lookups over every client.
//!
//! A [`Home`] is the user's home directory, the system whose layout to use,
//! and the few environment variables clients honour (`XDG_CONFIG_HOME`,
//! `APPDATA`, `CODEX_HOME`, ...). [`Home::from_env`] reads them from the
//! process; [`Home::new`] takes any system and any variables, so every
//! system's paths are testable on any machine.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Client;
use super::clients::ClientFile;
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
const VARS: [&str; 10] = [
    "XDG_CONFIG_HOME",
    "APPDATA",
    "LOCALAPPDATA",
    "CODEX_HOME",
    "COPILOT_HOME",
    "CLINE_MCP_SETTINGS_PATH",
    "CLINE_DATA_DIR",
    "CLINE_DIR",
    "GEMINI_CLI_HOME",
    "CONTINUE_GLOBAL_DIR",
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

    pub(super) fn var(&self, key: &str) -> Option<PathBuf> {
        self.vars.get(key).map(PathBuf::from)
    }

    /// `dir` with each of `parts` joined as its own component, so a Windows
    /// path gets `\` separators throughout on Windows.
    pub(super) fn under(&self, parts: &[&str]) -> PathBuf {
        join(&self.dir, parts)
    }

    /// `~/.config` or `$XDG_CONFIG_HOME` (CLI tools that follow XDG).
    pub(super) fn xdg_config(&self) -> PathBuf {
        self.var("XDG_CONFIG_HOME")
            .unwrap_or_else(|| self.dir.join(".config"))
    }

    /// `%APPDATA%` (Roaming).
    pub(super) fn appdata(&self) -> PathBuf {
        self.var("APPDATA")
            .unwrap_or_else(|| self.under(&["AppData", "Roaming"]))
    }

    pub(super) fn localappdata(&self) -> PathBuf {
        self.var("LOCALAPPDATA")
            .unwrap_or_else(|| self.under(&["AppData", "Local"]))
    }

    /// Where desktop apps keep per-user data: Application Support, APPDATA or
    /// the XDG config dir.
    pub(super) fn app_data(&self) -> PathBuf {
        match self.os {
            Os::Macos => self.under(&["Library", "Application Support"]),
            Os::Windows => self.appdata(),
            Os::Linux => self.xdg_config(),
        }
    }

    /// VS Code's user directory (`.../Code/User`).
    pub(super) fn vscode_user(&self) -> PathBuf {
        join(&self.app_data(), &["Code", "User"])
    }
}

/// `base` with each of `parts` joined as its own component.
pub(super) fn join(base: &Path, parts: &[&str]) -> PathBuf {
    let mut path = base.to_path_buf();
    for part in parts {
        path.push(part);
    }
    path
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

/// Every file `client` may read, for the doctor: [`targets`], then the files
/// its descriptor adds (other spellings, other installers, files named
/// freely), each once.
pub fn read_targets(client: Client, home: &Home, project: &Path) -> Vec<Target> {
    let mut all = targets(client, home, project);
    for (scope, file) in (client.spec().also_read)(home, project) {
        if !all.iter().any(|t| t.path == file.path) {
            all.push(Target::new(client, scope, file));
        }
    }
    all
}

/// The default scope for `install`: user where the client has a user file.
pub fn default_scope(client: Client) -> Scope {
    client.spec().default_scope
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
    let spec = client.spec();
    if let Some((why, hint)) = spec.no_file {
        return Err(Error::invalid(codes::CONFIG_INSTALL_UNSUPPORTED, why, hint));
    }
    let name = name.unwrap_or(super::DEFAULT_SERVER_NAME);
    let file = (spec.file)(home, scope, project, name).ok_or_else(|| {
        Error::invalid(
            codes::CONFIG_SCOPE_UNSUPPORTED,
            format!("{} has no {} configuration file", spec.name, scope.as_str()),
            format!("use --scope {}", spec.default_scope.as_str()),
        )
    })?;
    Ok(Target::new(client, scope, file))
}

impl Target {
    fn new(client: Client, scope: Scope, file: ClientFile) -> Target {
        Target {
            client,
            scope,
            path: file.path,
            syntax: file.syntax,
            servers: file.servers.unwrap_or_else(|| {
                client
                    .spec()
                    .shape
                    .servers
                    .iter()
                    .map(|k| k.to_string())
                    .collect()
            }),
            read_instead: file.read_instead,
        }
    }
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
