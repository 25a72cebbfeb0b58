//! Ready-to-paste MCP client configuration for `gatehouse mcp`.
//!
//! Map: [`Client`] names the supported clients; a [`ConfigRequest`] says which
//! binary serves which site as which [`ConfigActor`]; [`generate`] renders the
//! client's own format and then *validates it by parsing it back* (JSON with
//! `serde_json`, TOML with `toml`, YAML with `serde_yaml_ng`, the shell line with
//! `shlex`) before anything is returned. [`check_site`] and [`client_path`]
//! turn the caller's paths into the absolute ones a client needs. The CLI
//! (`gatehouse config`) and the desktop app's config panel both call these.
//!
//! Rules every client follows, because they are what makes a pasted config safe:
//! - `command` is the absolute path of the `gatehouse` binary: clients start
//!   servers with a reduced `PATH` (Claude Desktop notably), so a bare name breaks.
//! - The site is passed as `--site DIR` in `args`: not every client has a `cwd`.
//! - An API key travels only in the `env` block as [`API_KEY_ENV`], never in
//!   `args` (argv is visible to every local user through `ps`). With
//!   [`KeyDelivery::Reference`] the key is not in the output at all: the client's
//!   own indirection is emitted instead (see [`Client::secret_reference`]).
//!
//! Each client's renderer cites the documentation its format follows.
//!
//! # Caveats
//! - The reference forms all name the same source variable, `GATEHOUSE_API_KEY`;
//!   two sites with different keys in one client need the key inline for one of
//!   them, or a client-side rename (VS Code inputs are per server name, so VS Code
//!   does not have this limit).
//! - A database URL is not part of the generated config: the site's
//!   `gatehouse.toml` is expected to hold it (a URL may carry a password, which
//!   would need the same care as a key).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;

use crate::access::keys::{self, RawKey};
use crate::access::permissions::{Role, format_roles};
use crate::error::{Error, Result, codes};
use crate::site::users;

/// The environment variable `gatehouse mcp` reads its API key from.
pub const API_KEY_ENV: &str = crate::access::actor::ENV_API_KEY;

/// Server name used when the request names none.
pub const DEFAULT_SERVER_NAME: &str = "gatehouse";

/// How an API key reaches the server the client spawns.
#[derive(Debug, Clone)]
pub enum KeyDelivery {
    /// The key is written into the config's `env` block, in clear.
    Inline(RawKey),
    /// The config names the key through the client's own indirection
    /// (`--secret-ref`); the key itself is never needed to generate it.
    Reference,
}

/// Who the spawned `gatehouse mcp` runs as; mirrors its actor flags.
#[derive(Debug, Clone)]
pub enum ConfigActor {
    /// No flag: the anonymous `public` actor.
    Public,
    /// `--email E`: a site user.
    Email(String),
    /// `--role R,R`: synthetic roles (scratch sites only).
    Roles(Vec<Role>),
    /// `GATEHOUSE_API_KEY` in the server's environment.
    ApiKey(KeyDelivery),
}

impl ConfigActor {
    fn describe(&self) -> String {
        match self {
            ConfigActor::Public => "the anonymous public actor".to_string(),
            ConfigActor::Email(email) => format!("the user {email}"),
            ConfigActor::Roles(roles) => format!("scratch roles {}", format_roles(roles)),
            ConfigActor::ApiKey(KeyDelivery::Inline(_)) => {
                "the API key written in this config".to_string()
            }
            ConfigActor::ApiKey(KeyDelivery::Reference) => {
                format!("the API key the client supplies as {API_KEY_ENV}")
            }
        }
    }
}

/// The MCP clients Gatehouse can write configuration for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Client {
    #[serde(rename = "claude-desktop")]
    ClaudeDesktop,
    #[serde(rename = "claude-code")]
    ClaudeCode,
    #[serde(rename = "cursor")]
    Cursor,
    #[serde(rename = "vscode")]
    VsCode,
    #[serde(rename = "windsurf")]
    Windsurf,
    #[serde(rename = "zed")]
    Zed,
    #[serde(rename = "codex")]
    Codex,
    #[serde(rename = "continue")]
    Continue,
}

impl Client {
    /// Every client, in the order the docs and the UI list them.
    pub const ALL: [Client; 8] = [
        Client::ClaudeDesktop,
        Client::ClaudeCode,
        Client::Cursor,
        Client::VsCode,
        Client::Windsurf,
        Client::Zed,
        Client::Codex,
        Client::Continue,
    ];

    /// The stable name used on the command line and over IPC.
    pub fn id(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::VsCode => "vscode",
            Client::Windsurf => "windsurf",
            Client::Zed => "zed",
            Client::Codex => "codex",
            Client::Continue => "continue",
        }
    }

    /// The product name, for people.
    pub fn display_name(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "Claude Desktop",
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::VsCode => "VS Code",
            Client::Windsurf => "Windsurf",
            Client::Zed => "Zed",
            Client::Codex => "Codex CLI",
            Client::Continue => "Continue",
        }
    }

    /// The string this client substitutes with the key at spawn time, for the
    /// clients that have such an indirection (`None` for the others).
    ///
    /// Codex has an indirection too, but it is a key (`env_vars`) rather than a
    /// value, so it reports [`API_KEY_ENV`] itself; VS Code's depends on the
    /// server name (one input per server).
    pub fn secret_reference(self, server_name: &str) -> Option<String> {
        match self {
            Client::ClaudeCode => Some(format!("${{{API_KEY_ENV}}}")),
            Client::Cursor | Client::Windsurf => Some(format!("${{env:{API_KEY_ENV}}}")),
            Client::VsCode => Some(format!("${{input:{}}}", vscode_input_id(server_name))),
            Client::Codex => Some(API_KEY_ENV.to_string()),
            Client::Continue => Some(format!("${{{{ secrets.{API_KEY_ENV} }}}}")),
            Client::ClaudeDesktop | Client::Zed => None,
        }
    }

    /// Whether `--secret-ref` works for this client.
    pub fn supports_secret_ref(self) -> bool {
        self.secret_reference(DEFAULT_SERVER_NAME).is_some()
    }

    fn valid_names() -> String {
        Client::ALL.map(Client::id).join(", ")
    }
}

impl fmt::Display for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl FromStr for Client {
    type Err = Error;

    /// Accepts the ids case-insensitively (`_` or a space may stand for `-`) and
    /// two common spellings, `vs-code` and `codex-cli`.
    fn from_str(s: &str) -> Result<Self> {
        let norm = s.trim().to_ascii_lowercase().replace(['_', ' '], "-");
        let alias = match norm.as_str() {
            "vs-code" => "vscode",
            "codex-cli" => "codex",
            other => other,
        };
        Client::ALL
            .into_iter()
            .find(|c| c.id() == alias)
            .ok_or_else(|| {
                Error::invalid(
                    codes::CLIENT_UNKNOWN,
                    format!("unknown MCP client {s:?}"),
                    format!("valid clients: {}", Client::valid_names()),
                )
                .detail(serde_json::json!({ "valid": Client::ALL.map(Client::id) }))
            })
    }
}

/// What to generate: one client, one binary, one site, one actor.
#[derive(Debug, Clone)]
pub struct ConfigRequest {
    pub client: Client,
    /// Absolute path of the installed `gatehouse` binary.
    pub binary: PathBuf,
    /// Absolute path of the site folder (the one holding `gatehouse.toml`).
    pub site_dir: PathBuf,
    /// The server's name in the client; [`DEFAULT_SERVER_NAME`] when `None`.
    pub server_name: Option<String>,
    pub actor: ConfigActor,
}

/// The syntax of a [`Snippet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Json,
    Toml,
    Yaml,
    /// One POSIX shell command line (sh, bash, zsh).
    Shell,
}

/// Where a client reads its configuration from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    /// `project` (inside the repository or workspace) or `user` (all projects).
    pub scope: &'static str,
    /// Set when the path differs per operating system.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os: Option<&'static str>,
    pub path: String,
}

/// One piece of text to paste, with where it goes and what to do with it.
#[derive(Clone, Serialize)]
pub struct Snippet {
    pub format: Format,
    /// Empty for a command line.
    pub locations: Vec<Location>,
    pub text: String,
    /// One or two sentences for the person pasting it.
    pub instructions: String,
    /// True when `text` holds a raw API key: the UI should warn and not log it.
    pub contains_secret: bool,
}

impl fmt::Debug for Snippet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text: &dyn fmt::Debug = if self.contains_secret {
            &"<redacted: contains an API key>"
        } else {
            &self.text
        };
        f.debug_struct("Snippet")
            .field("format", &self.format)
            .field("locations", &self.locations)
            .field("text", text)
            .field("instructions", &self.instructions)
            .field("contains_secret", &self.contains_secret)
            .finish()
    }
}

/// The result of [`generate`]: the main snippet first, then alternatives (Claude
/// Code's `claude mcp add` line).
#[derive(Debug, Clone, Serialize)]
pub struct GeneratedConfig {
    pub client: Client,
    pub client_name: &'static str,
    pub server_name: String,
    pub snippets: Vec<Snippet>,
}

/// Renders the configuration `request.client` needs and validates it.
///
/// Every snippet is parsed back with a real parser for its format and checked
/// (required keys present, `command` the absolute binary path, `args` exactly the
/// expected ones and free of the key, the key only in `env`) before it is returned.
pub fn generate(request: &ConfigRequest) -> Result<GeneratedConfig> {
    let spec = ServerSpec::from_request(request)?;
    let snippets = match request.client {
        Client::ClaudeDesktop => vec![claude_desktop(&spec)?],
        Client::ClaudeCode => vec![claude_code_json(&spec)?, claude_code_shell(&spec)?],
        Client::Cursor => vec![cursor(&spec)?],
        Client::VsCode => vec![vscode(&spec)?],
        Client::Windsurf => vec![windsurf(&spec)?],
        Client::Zed => vec![zed(&spec)?],
        Client::Codex => vec![codex(&spec)?],
        Client::Continue => vec![continue_dev(&spec)?],
    };
    for snippet in &snippets {
        validate(&spec, snippet)?;
    }
    Ok(GeneratedConfig {
        client: request.client,
        client_name: request.client.display_name(),
        server_name: spec.name.clone(),
        snippets,
    })
}

/// A path as a client config should name it: absolute with symlinks resolved,
/// and without Windows' verbatim `\\?\` prefix, which some clients cannot start.
pub fn client_path(path: &Path) -> Result<PathBuf> {
    let canonical = path
        .canonicalize()
        .map_err(|e| Error::new(codes::IO, format!("cannot resolve {}: {e}", path.display())))?;
    Ok(strip_verbatim(canonical))
}

fn strip_verbatim(path: PathBuf) -> PathBuf {
    match path.to_str().and_then(|s| s.strip_prefix(r"\\?\")) {
        Some(rest) if rest.as_bytes().get(1) == Some(&b':') => PathBuf::from(rest),
        _ => path,
    }
}

/// Checks `dir` is a site a generated config can point at, and returns it as
/// [`client_path`] names it. Refuses `--role` on a non-scratch site up front,
/// since the server would refuse it at every start.
///
/// Only `gatehouse.toml` is read: a config can be generated while the site's
/// database is unreachable.
pub fn check_site(dir: &Path, actor: &ConfigActor) -> Result<PathBuf> {
    let file = crate::site::read_site_file(dir)?;
    if matches!(actor, ConfigActor::Roles(_)) && !file.scratch {
        return Err(Error::invalid(
            codes::ACTOR_ROLE_NOT_SCRATCH,
            "--role is only allowed on a scratch site",
            "use --email for a real user or an API key",
        ));
    }
    client_path(dir)
}

/// The client-independent part: what to run, with which arguments, and how the
/// key (if any) is delivered.
struct ServerSpec {
    client: Client,
    name: String,
    command: String,
    args: Vec<String>,
    key: Option<KeyDelivery>,
    actor: String,
}

impl ServerSpec {
    fn from_request(req: &ConfigRequest) -> Result<Self> {
        let name = req
            .server_name
            .clone()
            .unwrap_or_else(|| DEFAULT_SERVER_NAME.to_string());
        check_server_name(&name)?;
        let command = absolute_utf8(&req.binary, "gatehouse binary")?;
        let site = absolute_utf8(&req.site_dir, "site folder")?;
        let mut args = vec!["mcp".to_string(), "--site".to_string(), site];
        let mut key = None;
        match &req.actor {
            ConfigActor::Public => {}
            ConfigActor::Email(email) => {
                args.extend(["--email".to_string(), users::check_email(email)?]);
            }
            ConfigActor::Roles(roles) => {
                if roles.is_empty() {
                    return Err(Error::invalid(
                        codes::ROLES_EMPTY,
                        "no roles given",
                        "pass at least one of viewer, author, editor, admin (comma-separated)",
                    ));
                }
                args.extend(["--role".to_string(), format_roles(roles)]);
            }
            ConfigActor::ApiKey(delivery) => {
                if let KeyDelivery::Inline(raw) = delivery {
                    check_key(raw)?;
                }
                if matches!(delivery, KeyDelivery::Reference) && !req.client.supports_secret_ref() {
                    return Err(Error::invalid(
                        codes::CONFIG_SECRET_REF_UNSUPPORTED,
                        format!(
                            "{} has no way to reference a secret from its config",
                            req.client.display_name()
                        ),
                        format!(
                            "drop --secret-ref to write the key into the config in clear, or use \
                             one of: {}",
                            Client::ALL
                                .into_iter()
                                .filter(|c| c.supports_secret_ref())
                                .map(Client::id)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                }
                key = Some(delivery.clone());
            }
        }
        Ok(Self {
            client: req.client,
            name,
            command,
            args,
            key,
            actor: req.actor.describe(),
        })
    }

    /// The `env` block the client's config must hold: the raw key, the client's
    /// reference, or nothing. Codex's reference is `env_vars`, not an `env` value.
    fn env(&self) -> BTreeMap<String, String> {
        let value = match &self.key {
            None => return BTreeMap::new(),
            Some(KeyDelivery::Inline(raw)) => raw.expose().to_string(),
            Some(KeyDelivery::Reference) if self.client == Client::Codex => {
                return BTreeMap::new();
            }
            Some(KeyDelivery::Reference) => self
                .client
                .secret_reference(&self.name)
                .expect("checked in from_request"),
        };
        BTreeMap::from([(API_KEY_ENV.to_string(), value)])
    }

    fn inline_key(&self) -> Option<&str> {
        match &self.key {
            Some(KeyDelivery::Inline(raw)) => Some(raw.expose()),
            _ => None,
        }
    }

    fn by_reference(&self) -> bool {
        matches!(self.key, Some(KeyDelivery::Reference))
    }

    /// The sentence every snippet ends with, so the person knows who the AI is.
    fn runs_as(&self) -> String {
        format!("The server runs as {}.", self.actor)
    }

    fn snippet(
        &self,
        format: Format,
        locations: Vec<Location>,
        text: String,
        what: &str,
    ) -> Snippet {
        let mut instructions = format!("{what} {}", self.runs_as());
        if self.inline_key().is_some() {
            instructions.push_str(
                " This text contains the API key in clear: keep the file private, never commit \
                 it, or regenerate with --secret-ref.",
            );
        }
        Snippet {
            format,
            locations,
            contains_secret: self.inline_key().is_some(),
            text,
            instructions,
        }
    }
}

/// One `command`/`args`/`env` entry in the shape most JSON clients share.
#[derive(Serialize)]
struct StdioEntry<'a> {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    command: &'a str,
    args: &'a [String],
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    env: BTreeMap<String, String>,
}

impl<'a> StdioEntry<'a> {
    fn new(spec: &'a ServerSpec, kind: Option<&'static str>) -> Self {
        Self {
            kind,
            command: &spec.command,
            args: &spec.args,
            env: spec.env(),
        }
    }
}

/// `{"<top>": {"<name>": entry}}`: the file shape of every JSON client but Zed's
/// extra field and VS Code's `inputs`.
fn servers_file(top: &str, name: &str, entry: impl Serialize) -> Result<String> {
    let file = BTreeMap::from([(top, BTreeMap::from([(name, entry)]))]);
    to_json(&file)
}

/// Claude Desktop: `claude_desktop_config.json`, `mcpServers` → `command`, `args`,
/// `env`, as in <https://modelcontextprotocol.io/quickstart/user>. It has no
/// variable expansion in that file, hence no `--secret-ref`.
fn claude_desktop(spec: &ServerSpec) -> Result<Snippet> {
    let text = servers_file("mcpServers", &spec.name, StdioEntry::new(spec, None))?;
    let locations = vec![
        user_os(
            "macOS",
            "~/Library/Application Support/Claude/claude_desktop_config.json",
        ),
        user_os("Windows", "%APPDATA%\\Claude\\claude_desktop_config.json"),
    ];
    Ok(spec.snippet(
        Format::Json,
        locations,
        text,
        "Open Settings → Developer → Edit Config, merge this entry into \"mcpServers\", save, \
         and restart Claude Desktop.",
    ))
}

/// Claude Code: a project's `.mcp.json`, `mcpServers` → `type: "stdio"`,
/// `command`, `args`, `env`; `${VAR}` is expanded in `command`, `args`, `env`,
/// `url` and `headers` (<https://code.claude.com/docs/en/mcp>, "Environment
/// variable expansion in .mcp.json").
fn claude_code_json(spec: &ServerSpec) -> Result<Snippet> {
    let text = servers_file(
        "mcpServers",
        &spec.name,
        StdioEntry::new(spec, Some("stdio")),
    )?;
    let mut what = String::from(
        "Save as .mcp.json at the project root (merge into \"mcpServers\" if the file exists); \
         Claude Code asks you to approve project servers on first use.",
    );
    if spec.by_reference() {
        what.push_str(&format!(
            " Claude Code expands ${{{API_KEY_ENV}}} from the environment it is started in: \
             export {API_KEY_ENV} before running claude."
        ));
    }
    Ok(spec.snippet(Format::Json, vec![project(".mcp.json")], text, &what))
}

/// The `claude mcp add` line equivalent to [`claude_code_json`] (project scope).
///
/// The name comes before `-e`: `-e/--env` is variadic and swallows a following
/// positional (anthropics/claude-code#62332). The line never carries a raw key,
/// since a command line lands in shell history and in `ps`: it always stores the
/// `${GATEHOUSE_API_KEY}` reference, single-quoted so the shell leaves it alone
/// and Claude Code expands it when it starts the server.
fn claude_code_shell(spec: &ServerSpec) -> Result<Snippet> {
    let mut words: Vec<String> = ["claude", "mcp", "add", &spec.name, "--scope", "project"]
        .map(String::from)
        .to_vec();
    words.extend(["--transport".into(), "stdio".into()]);
    if spec.key.is_some() {
        words.extend(["-e".into(), format!("{API_KEY_ENV}=${{{API_KEY_ENV}}}")]);
    }
    words.push("--".into());
    words.push(spec.command.clone());
    words.extend(spec.args.iter().cloned());
    let text = words
        .iter()
        .map(|w| sh_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
        + "\n";
    let mut instructions = String::from(
        "Or run this in the project folder (POSIX shell); it writes the same entry to .mcp.json. \
         Use --scope user instead to have it in every project.",
    );
    if spec.key.is_some() {
        instructions.push_str(&format!(
            " The key is referenced, not written: export {API_KEY_ENV} before running claude."
        ));
    }
    instructions.push(' ');
    instructions.push_str(&match spec.key {
        // Even with an inline key in the JSON, this line only references it.
        Some(_) => format!(
            "The server runs as {}.",
            ConfigActor::ApiKey(KeyDelivery::Reference).describe()
        ),
        None => spec.runs_as(),
    });
    Ok(Snippet {
        format: Format::Shell,
        locations: Vec::new(),
        text,
        instructions,
        contains_secret: false,
    })
}

/// Cursor: `.cursor/mcp.json` (project) or `~/.cursor/mcp.json` (user),
/// `mcpServers` → `command`, `args`, `env`; `${env:NAME}` interpolation in those
/// fields (<https://cursor.com/docs/mcp>, "Config interpolation").
fn cursor(spec: &ServerSpec) -> Result<Snippet> {
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

/// VS Code: `.vscode/mcp.json`, `servers` → `type: "stdio"`, `command`, `args`,
/// `env`, plus `inputs` of `type: "promptString"` with `password: true`, used as
/// `${input:ID}` (<https://code.visualstudio.com/docs/copilot/reference/mcp-configuration>).
fn vscode(spec: &ServerSpec) -> Result<Snippet> {
    #[derive(Serialize)]
    struct Input {
        #[serde(rename = "type")]
        kind: &'static str,
        id: String,
        description: String,
        password: bool,
    }
    #[derive(Serialize)]
    struct File<'a> {
        #[serde(skip_serializing_if = "Vec::is_empty")]
        inputs: Vec<Input>,
        servers: BTreeMap<&'a str, StdioEntry<'a>>,
    }
    let mut inputs = Vec::new();
    if spec.by_reference() {
        inputs.push(Input {
            kind: "promptString",
            id: vscode_input_id(&spec.name),
            description: format!("Gatehouse API key for the MCP server \"{}\"", spec.name),
            password: true,
        });
    }
    let file = File {
        inputs,
        servers: BTreeMap::from([(spec.name.as_str(), StdioEntry::new(spec, Some("stdio")))]),
    };
    let mut what = String::from(
        "Save as .vscode/mcp.json in the workspace (merge into \"servers\" and \"inputs\" if the \
         file exists), or run \"MCP: Open User Configuration\" for every workspace.",
    );
    if spec.by_reference() {
        what.push_str(
            " VS Code prompts for the key when it first starts the server and keeps it in its \
             secret storage.",
        );
    }
    Ok(spec.snippet(
        Format::Json,
        vec![project(".vscode/mcp.json")],
        to_json(&file)?,
        &what,
    ))
}

/// Windsurf: `~/.codeium/windsurf/mcp_config.json`, the Claude Desktop schema
/// (`mcpServers` → `command`, `args`, `env`); `${env:VAR}` is interpolated in
/// `command`, `args`, `env`, `serverUrl`, `url` and `headers`
/// (<https://docs.windsurf.com/windsurf/cascade/mcp>, "Config interpolation").
fn windsurf(spec: &ServerSpec) -> Result<Snippet> {
    let text = servers_file("mcpServers", &spec.name, StdioEntry::new(spec, None))?;
    let locations = vec![
        user_os("macOS/Linux", "~/.codeium/windsurf/mcp_config.json"),
        user_os(
            "Windows",
            "%USERPROFILE%\\.codeium\\windsurf\\mcp_config.json",
        ),
    ];
    let mut what = String::from(
        "Merge this entry into \"mcpServers\" of mcp_config.json (Windsurf Settings → MCP → \
         View raw config), then press refresh in the MCP panel.",
    );
    if spec.by_reference() {
        what.push_str(&env_reference_note("Windsurf"));
    }
    Ok(spec.snippet(Format::Json, locations, text, &what))
}

/// Zed: `context_servers` in `settings.json` → `command`, `args`, `env`
/// (<https://zed.dev/docs/ai/mcp>, "As Custom Servers"). `"source": "custom"` is
/// kept because Zed releases before the settings became an untagged enum require
/// it as the tag, and newer ones ignore it. Zed has no secret indirection.
fn zed(spec: &ServerSpec) -> Result<Snippet> {
    #[derive(Serialize)]
    struct ZedEntry<'a> {
        source: &'static str,
        #[serde(flatten)]
        entry: StdioEntry<'a>,
    }
    let entry = ZedEntry {
        source: "custom",
        entry: StdioEntry::new(spec, None),
    };
    let text = servers_file("context_servers", &spec.name, entry)?;
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

/// Codex CLI: `~/.codex/config.toml`, a `[mcp_servers.NAME]` table with
/// `command`, `args`, `env`, and `env_vars`, the names of variables Codex
/// forwards from its own environment (Codex docs, MCP page: "env_vars
/// (optional): Environment variables to allow and forward"; openai/codex
/// `docs/config.md`).
fn codex(spec: &ServerSpec) -> Result<Snippet> {
    #[derive(Serialize)]
    struct Server<'a> {
        command: &'a str,
        args: &'a [String],
        #[serde(skip_serializing_if = "Vec::is_empty")]
        env_vars: Vec<&'static str>,
        // Tables last: TOML cannot put a plain key after a sub-table.
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
    }
    let server = Server {
        command: &spec.command,
        args: &spec.args,
        env_vars: if spec.by_reference() {
            vec![API_KEY_ENV]
        } else {
            Vec::new()
        },
        env: spec.env(),
    };
    let file = BTreeMap::from([(
        "mcp_servers",
        BTreeMap::from([(spec.name.as_str(), server)]),
    )]);
    let text =
        toml::to_string(&file).map_err(|e| internal(format!("TOML rendering failed: {e}")))?;
    let locations = vec![
        user_os("macOS/Linux", "~/.codex/config.toml"),
        user_os("Windows", "%USERPROFILE%\\.codex\\config.toml"),
        project(".codex/config.toml"),
    ];
    let mut what = String::from(
        "Append to ~/.codex/config.toml (or .codex/config.toml in a trusted project), replacing \
         any older table of the same name.",
    );
    if spec.by_reference() {
        what.push_str(&format!(
            " Codex forwards {API_KEY_ENV} from the environment codex runs in: export it first."
        ));
    }
    Ok(spec.snippet(Format::Toml, locations, text, &what))
}

/// Continue: a block file in `.continue/mcpServers/`, with `name`, `version`,
/// `schema: v1` and a `mcpServers` list of `name`, `type`, `command`, `args`,
/// `env` (<https://docs.continue.dev/customize/deep-dives/mcp>). Secrets are
/// `${{ secrets.NAME }}`, resolved from `.continue/.env`, the workspace `.env` or
/// Continue Hub, *not* from the process environment (continuedev/continue#5902).
fn continue_dev(spec: &ServerSpec) -> Result<Snippet> {
    #[derive(Serialize)]
    struct Server<'a> {
        name: &'a str,
        #[serde(flatten)]
        entry: StdioEntry<'a>,
    }
    #[derive(Serialize)]
    struct Block<'a> {
        name: String,
        version: &'static str,
        schema: &'static str,
        #[serde(rename = "mcpServers")]
        mcp_servers: [Server<'a>; 1],
    }
    let block = Block {
        name: format!("Gatehouse ({})", spec.name),
        version: "0.0.1",
        schema: "v1",
        mcp_servers: [Server {
            name: &spec.name,
            entry: StdioEntry::new(spec, Some("stdio")),
        }],
    };
    let text = serde_yaml_ng::to_string(&block)
        .map_err(|e| internal(format!("YAML rendering failed: {e}")))?;
    let file = format!(".continue/mcpServers/{}.yaml", spec.name);
    let locations = vec![project(&file), user(&format!("~/{file}"))];
    let mut what = format!(
        "Save as {file} in the workspace (or under ~/.continue/mcpServers/ for every workspace); \
         Continue uses MCP tools in agent mode."
    );
    if spec.by_reference() {
        what.push_str(&format!(
            " Put the line {API_KEY_ENV}=<your key> in .continue/.env (workspace or ~/.continue/.env) \
             or add it as a Continue Hub secret."
        ));
    }
    Ok(spec.snippet(Format::Yaml, locations, text, &what))
}

fn env_reference_note(client: &str) -> String {
    format!(
        " {client} resolves ${{env:{API_KEY_ENV}}} from its own environment: start it from a \
         shell where {API_KEY_ENV} is exported."
    )
}

fn vscode_input_id(server_name: &str) -> String {
    format!("{server_name}-api-key")
}

fn project(path: &str) -> Location {
    Location {
        scope: "project",
        os: None,
        path: path.to_string(),
    }
}

fn user(path: &str) -> Location {
    Location {
        scope: "user",
        os: None,
        path: path.to_string(),
    }
}

fn user_os(os: &'static str, path: &str) -> Location {
    Location {
        scope: "user",
        os: Some(os),
        path: path.to_string(),
    }
}

fn to_json(value: &impl Serialize) -> Result<String> {
    serde_json::to_string_pretty(value)
        .map(|s| s + "\n")
        .map_err(|e| internal(format!("JSON rendering failed: {e}")))
}

/// Quotes one word for a POSIX shell: bare when it is plainly safe, otherwise in
/// single quotes (inside which nothing is special but `'` itself).
fn sh_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn internal(message: String) -> Error {
    Error::new(codes::CONFIG_VALIDATION_FAILED, message)
        .hint("this is a bug in Gatehouse; please report it with the command you ran")
}

// ---------------------------------------------------------------------------
// Input checks

fn check_server_name(name: &str) -> Result<()> {
    // VS Code's schema requires `^[a-zA-Z][a-zA-Z0-9_-]*$`; the length cap keeps
    // tool-name prefixes (`mcp__NAME__tool`) under the 64 characters clients allow.
    let ok = name.len() <= 32
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            codes::CONFIG_NAME_INVALID,
            format!("server name {name:?} cannot be used in every client"),
            "use 1 to 32 ASCII letters, digits, '-' or '_', starting with a letter",
        ))
    }
}

fn absolute_utf8(path: &Path, what: &str) -> Result<String> {
    let text = path.to_str().ok_or_else(|| {
        Error::invalid(
            codes::CONFIG_PATH_INVALID,
            format!("the {what} path is not valid UTF-8"),
            "move it to a path made of valid UTF-8; config files cannot hold other bytes",
        )
    })?;
    if !path.is_absolute() {
        return Err(Error::invalid(
            codes::CONFIG_PATH_INVALID,
            format!("the {what} path {text:?} is not absolute"),
            "clients start servers from an unknown working directory; pass an absolute path",
        ));
    }
    if text.chars().any(char::is_control) {
        return Err(Error::invalid(
            codes::CONFIG_PATH_INVALID,
            format!("the {what} path contains a control character"),
            "move it to a path without newlines or other control characters",
        ));
    }
    Ok(text.to_string())
}

fn check_key(key: &RawKey) -> Result<()> {
    // Refusing a malformed key here beats a config whose server refuses later;
    // `parse` also guarantees the key is plain ASCII alphanumerics and `_`, which
    // no config format or client `${...}` expansion can misread.
    keys::parse(key.expose())
        .map(|_| ())
        .map_err(|_| keys::Refusal::Malformed.error(None))
}

// ---------------------------------------------------------------------------
// Validation: parse the text back and check it says what the spec says.

fn validate(spec: &ServerSpec, snippet: &Snippet) -> Result<()> {
    if let Some(raw) = spec.inline_key() {
        let expected = if snippet.contains_secret { 1 } else { 0 };
        let found = snippet.text.matches(raw).count();
        if found != expected {
            return Err(internal(format!(
                "the API key appears {found} times in the {} text, expected {expected}",
                spec.client.id()
            )));
        }
    }
    match snippet.format {
        Format::Json => {
            let doc: Value = serde_json::from_str(&snippet.text)
                .map_err(|e| internal(format!("generated JSON does not parse: {e}")))?;
            validate_doc(spec, &doc)
        }
        Format::Toml => {
            let doc: Value = toml::from_str(&snippet.text)
                .map_err(|e| internal(format!("generated TOML does not parse: {e}")))?;
            validate_doc(spec, &doc)
        }
        Format::Yaml => {
            let doc: Value = serde_yaml_ng::from_str(&snippet.text)
                .map_err(|e| internal(format!("generated YAML does not parse: {e}")))?;
            validate_doc(spec, &doc)
        }
        Format::Shell => validate_shell(spec, &snippet.text),
    }
}

/// Checks a parsed document (whatever its syntax) against the spec.
fn validate_doc(spec: &ServerSpec, doc: &Value) -> Result<()> {
    let fail = |what: &str| internal(format!("generated {} config {what}", spec.client.id()));
    let entry = match spec.client {
        Client::ClaudeDesktop | Client::ClaudeCode | Client::Cursor | Client::Windsurf => {
            doc.pointer(&format!("/mcpServers/{}", spec.name))
        }
        Client::VsCode => doc.pointer(&format!("/servers/{}", spec.name)),
        Client::Zed => doc.pointer(&format!("/context_servers/{}", spec.name)),
        Client::Codex => doc.pointer(&format!("/mcp_servers/{}", spec.name)),
        Client::Continue => {
            for key in ["name", "version", "schema"] {
                if !doc.get(key).is_some_and(Value::is_string) {
                    return Err(fail(&format!("lacks the block's {key:?}")));
                }
            }
            doc.get("mcpServers")
                .and_then(Value::as_array)
                .and_then(|list| {
                    list.iter()
                        .find(|s| s.get("name").and_then(Value::as_str) == Some(&spec.name))
                })
        }
    };
    let Some(entry) = entry.and_then(Value::as_object) else {
        return Err(fail(&format!("lacks the server entry {:?}", spec.name)));
    };

    if entry.get("command").and_then(Value::as_str) != Some(spec.command.as_str()) {
        return Err(fail("does not run the gatehouse binary"));
    }
    if !Path::new(&spec.command).is_absolute() {
        return Err(fail("has a command that is not an absolute path"));
    }
    let args: Option<Vec<&str>> = entry
        .get("args")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().map(Value::as_str).collect());
    let Some(args) = args else {
        return Err(fail("lacks a list of string args"));
    };
    if args != spec.args.iter().map(String::as_str).collect::<Vec<_>>() {
        return Err(fail("has unexpected args"));
    }
    if let Some(raw) = spec.inline_key()
        && args.iter().any(|a| a.contains(raw))
    {
        return Err(fail("carries the API key in args"));
    }

    let env: BTreeMap<String, String> = match entry.get("env") {
        None => BTreeMap::new(),
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|_| fail("has an env that is not a string map"))?,
    };
    if env != spec.env() {
        return Err(fail("has an unexpected env block"));
    }

    let kind = entry.get("type").and_then(Value::as_str);
    let expected_kind = match spec.client {
        Client::ClaudeCode | Client::VsCode | Client::Continue => Some("stdio"),
        _ => None,
    };
    if kind != expected_kind {
        return Err(fail("has the wrong server type"));
    }
    if spec.client == Client::Zed && entry.get("source").and_then(Value::as_str) != Some("custom") {
        return Err(fail("lacks \"source\": \"custom\""));
    }
    if spec.client == Client::Codex {
        let forwarded = entry.get("env_vars").and_then(Value::as_array);
        let expected = spec.by_reference().then(|| vec![Value::from(API_KEY_ENV)]);
        if forwarded != expected.as_ref() {
            return Err(fail("has unexpected env_vars"));
        }
    }
    if spec.client == Client::VsCode {
        let inputs = doc.get("inputs").and_then(Value::as_array);
        if spec.by_reference() {
            let id = vscode_input_id(&spec.name);
            let ok = inputs.is_some_and(|list| {
                list.iter().any(|i| {
                    i.get("id").and_then(Value::as_str) == Some(id.as_str())
                        && i.get("type").and_then(Value::as_str) == Some("promptString")
                        && i.get("password").and_then(Value::as_bool) == Some(true)
                })
            });
            if !ok {
                return Err(fail("lacks the password input the env refers to"));
            }
        } else if inputs.is_some() {
            return Err(fail("has inputs nothing refers to"));
        }
    }
    Ok(())
}

/// Splits the command line as a POSIX shell would and checks every word.
fn validate_shell(spec: &ServerSpec, text: &str) -> Result<()> {
    let fail = |what: &str| internal(format!("generated claude mcp add line {what}"));
    let Some(words) = shlex::split(text.trim_end()) else {
        return Err(fail("does not split into shell words"));
    };
    let Some(sep) = words.iter().position(|w| w == "--") else {
        return Err(fail("lacks the -- before the command"));
    };
    let (head, tail) = (&words[..sep], &words[sep + 1..]);
    if head.get(..4) != Some(&["claude", "mcp", "add", spec.name.as_str()].map(String::from)[..]) {
        return Err(fail("does not start with claude mcp add NAME"));
    }
    if tail.first() != Some(&spec.command) || tail[1..] != spec.args[..] {
        return Err(fail(
            "does not run the gatehouse binary with the expected args",
        ));
    }
    let env: Vec<&String> = head
        .iter()
        .zip(head.iter().skip(1))
        .filter(|(flag, _)| *flag == "-e")
        .map(|(_, value)| value)
        .collect();
    let expected = format!("{API_KEY_ENV}=${{{API_KEY_ENV}}}");
    let env_ok = match &spec.key {
        None => env.is_empty(),
        Some(_) => env == [&expected],
    };
    if !env_ok {
        return Err(fail("has an unexpected -e"));
    }
    if let Some(raw) = spec.inline_key()
        && text.contains(raw)
    {
        return Err(fail("carries the raw API key"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BIN: &str = "/opt/gatehouse/bin/gatehouse";
    const SITE: &str = "/srv/sites/my blog";
    /// A well-formed key minted per run (none is committed).
    fn fake_key() -> RawKey {
        keys::generate().1
    }

    fn request(client: Client, actor: ConfigActor) -> ConfigRequest {
        ConfigRequest {
            client,
            binary: PathBuf::from(BIN),
            site_dir: PathBuf::from(SITE),
            server_name: None,
            actor,
        }
    }

    fn main_text(client: Client, actor: ConfigActor) -> String {
        generate(&request(client, actor))
            .unwrap()
            .snippets
            .remove(0)
            .text
    }

    fn json(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    fn all_actors() -> Vec<ConfigActor> {
        vec![
            ConfigActor::Public,
            ConfigActor::Email("editor@example.com".into()),
            ConfigActor::Roles(vec![Role::Editor, Role::Viewer]),
            ConfigActor::ApiKey(KeyDelivery::Inline(fake_key())),
            ConfigActor::ApiKey(KeyDelivery::Reference),
        ]
    }

    /// Every client with every actor kind: a config, or the one refusal expected.
    #[test]
    fn matrix_of_clients_and_actors() {
        for client in Client::ALL {
            for actor in all_actors() {
                let reference = matches!(actor, ConfigActor::ApiKey(KeyDelivery::Reference));
                match generate(&request(client, actor)) {
                    Ok(out) => {
                        assert!(!reference || client.supports_secret_ref());
                        assert!(!out.snippets.is_empty());
                        for s in &out.snippets {
                            assert!(!s.text.contains("--api-key"), "{client}: {}", s.text);
                            assert!(s.instructions.contains("The server runs as"));
                        }
                    }
                    Err(e) => {
                        assert!(reference && !client.supports_secret_ref(), "{client}: {e}");
                        assert_eq!(e.code, codes::CONFIG_SECRET_REF_UNSUPPORTED);
                    }
                }
            }
        }
    }

    #[test]
    fn claude_desktop_shape() {
        let doc = json(&main_text(Client::ClaudeDesktop, ConfigActor::Public));
        let entry = &doc["mcpServers"]["gatehouse"];
        assert_eq!(entry["command"], BIN);
        assert_eq!(entry["args"], serde_json::json!(["mcp", "--site", SITE]));
        assert!(entry.get("env").is_none());
        assert!(entry.get("type").is_none());
    }

    #[test]
    fn claude_code_json_and_shell_agree() {
        let out = generate(&request(
            Client::ClaudeCode,
            ConfigActor::ApiKey(KeyDelivery::Reference),
        ))
        .unwrap();
        assert_eq!(out.snippets.len(), 2);
        let doc = json(&out.snippets[0].text);
        let entry = &doc["mcpServers"]["gatehouse"];
        assert_eq!(entry["type"], "stdio");
        assert_eq!(entry["env"]["GATEHOUSE_API_KEY"], "${GATEHOUSE_API_KEY}");

        let shell = &out.snippets[1];
        assert_eq!(shell.format, Format::Shell);
        let words = shlex::split(&shell.text).unwrap();
        assert_eq!(&words[..4], ["claude", "mcp", "add", "gatehouse"]);
        let e = words.iter().position(|w| w == "-e").unwrap();
        assert_eq!(words[e + 1], "GATEHOUSE_API_KEY=${GATEHOUSE_API_KEY}");
        let sep = words.iter().position(|w| w == "--").unwrap();
        assert!(e < sep, "-e must come before --");
        assert_eq!(words[sep + 1..], [BIN, "mcp", "--site", SITE]);
        // The reference is single-quoted so the shell does not expand it.
        assert!(
            shell
                .text
                .contains("'GATEHOUSE_API_KEY=${GATEHOUSE_API_KEY}'")
        );
    }

    #[test]
    fn claude_code_shell_never_carries_an_inline_key() {
        let key = fake_key();
        let out = generate(&request(
            Client::ClaudeCode,
            ConfigActor::ApiKey(KeyDelivery::Inline(key.clone())),
        ))
        .unwrap();
        assert!(out.snippets[0].contains_secret);
        assert!(out.snippets[0].text.contains(key.expose()));
        assert!(!out.snippets[1].contains_secret);
        assert!(!out.snippets[1].text.contains(key.expose()));
    }

    #[test]
    fn cursor_and_windsurf_use_env_interpolation() {
        for client in [Client::Cursor, Client::Windsurf] {
            let doc = json(&main_text(
                client,
                ConfigActor::ApiKey(KeyDelivery::Reference),
            ));
            assert_eq!(
                doc["mcpServers"]["gatehouse"]["env"]["GATEHOUSE_API_KEY"],
                "${env:GATEHOUSE_API_KEY}",
                "{client}"
            );
        }
    }

    #[test]
    fn vscode_uses_servers_stdio_and_a_password_input() {
        let doc = json(&main_text(
            Client::VsCode,
            ConfigActor::ApiKey(KeyDelivery::Reference),
        ));
        let entry = &doc["servers"]["gatehouse"];
        assert_eq!(entry["type"], "stdio");
        assert_eq!(
            entry["env"]["GATEHOUSE_API_KEY"],
            "${input:gatehouse-api-key}"
        );
        let input = &doc["inputs"][0];
        assert_eq!(input["type"], "promptString");
        assert_eq!(input["id"], "gatehouse-api-key");
        assert_eq!(input["password"], true);
        assert!(doc.get("mcpServers").is_none());

        let plain = json(&main_text(Client::VsCode, ConfigActor::Public));
        assert!(plain.get("inputs").is_none());
    }

    #[test]
    fn zed_uses_context_servers() {
        let doc = json(&main_text(
            Client::Zed,
            ConfigActor::Roles(vec![Role::Viewer]),
        ));
        let entry = &doc["context_servers"]["gatehouse"];
        assert_eq!(entry["source"], "custom");
        assert_eq!(entry["command"], BIN);
        assert_eq!(
            entry["args"],
            serde_json::json!(["mcp", "--site", SITE, "--role", "viewer"])
        );
    }

    #[test]
    fn codex_toml_tables_and_env_vars() {
        let text = main_text(Client::Codex, ConfigActor::ApiKey(KeyDelivery::Reference));
        let doc: toml::Table = toml::from_str(&text).unwrap();
        let server = doc["mcp_servers"]["gatehouse"].as_table().unwrap();
        assert_eq!(server["command"].as_str(), Some(BIN));
        assert_eq!(
            server["env_vars"].as_array().unwrap(),
            &vec![toml::Value::from("GATEHOUSE_API_KEY")]
        );
        assert!(server.get("env").is_none());
        assert!(text.contains("[mcp_servers.gatehouse]"), "{text}");

        let key = fake_key();
        let text = main_text(
            Client::Codex,
            ConfigActor::ApiKey(KeyDelivery::Inline(key.clone())),
        );
        let doc: toml::Table = toml::from_str(&text).unwrap();
        let server = doc["mcp_servers"]["gatehouse"].as_table().unwrap();
        assert_eq!(
            server["env"]["GATEHOUSE_API_KEY"].as_str(),
            Some(key.expose())
        );
        assert!(server.get("env_vars").is_none());
    }

    #[test]
    fn continue_yaml_block() {
        let text = main_text(
            Client::Continue,
            ConfigActor::ApiKey(KeyDelivery::Reference),
        );
        let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(doc["schema"].as_str(), Some("v1"));
        assert!(doc["version"].as_str().is_some());
        let server = &doc["mcpServers"][0];
        assert_eq!(server["name"].as_str(), Some("gatehouse"));
        assert_eq!(server["type"].as_str(), Some("stdio"));
        assert_eq!(server["command"].as_str(), Some(BIN));
        assert_eq!(
            server["env"]["GATEHOUSE_API_KEY"].as_str(),
            Some("${{ secrets.GATEHOUSE_API_KEY }}")
        );
    }

    #[test]
    fn secret_ref_is_refused_where_the_client_has_no_indirection() {
        for client in [Client::ClaudeDesktop, Client::Zed] {
            let err = generate(&request(
                client,
                ConfigActor::ApiKey(KeyDelivery::Reference),
            ))
            .unwrap_err();
            assert_eq!(err.code, codes::CONFIG_SECRET_REF_UNSUPPORTED);
            let hint = err.hint.unwrap();
            assert!(
                hint.contains("vscode") && !hint.contains(client.id()),
                "{hint}"
            );
        }
    }

    #[test]
    fn unknown_client_lists_the_valid_names() {
        let err = "notepad".parse::<Client>().unwrap_err();
        assert_eq!(err.code, codes::CLIENT_UNKNOWN);
        let hint = err.hint.unwrap();
        for client in Client::ALL {
            assert!(hint.contains(client.id()), "{hint}");
        }
    }

    #[test]
    fn client_names_round_trip_and_aliases_parse() {
        for client in Client::ALL {
            assert_eq!(client.id().parse::<Client>().unwrap(), client);
            assert_eq!(
                client.id().to_uppercase().parse::<Client>().unwrap(),
                client
            );
            assert_eq!(serde_json::to_value(client).unwrap(), client.id());
        }
        assert_eq!("VS_Code".parse::<Client>().unwrap(), Client::VsCode);
        assert_eq!("codex-cli".parse::<Client>().unwrap(), Client::Codex);
    }

    #[test]
    fn raw_key_debug_is_redacted_everywhere_it_passes() {
        let key = fake_key();
        let req = request(
            Client::Cursor,
            ConfigActor::ApiKey(KeyDelivery::Inline(key.clone())),
        );
        assert_eq!(format!("{key:?}"), "RawKey(<redacted>)");
        assert!(!format!("{req:?}").contains(key.expose()));
        let out = generate(&req).unwrap();
        assert!(out.snippets[0].text.contains(key.expose()));
        assert!(!format!("{out:?}").contains(key.expose()));
    }

    #[test]
    fn bad_inputs_have_stable_codes() {
        let mut req = request(Client::Cursor, ConfigActor::Public);
        req.binary = PathBuf::from("gatehouse");
        assert_eq!(generate(&req).unwrap_err().code, codes::CONFIG_PATH_INVALID);

        let mut req = request(Client::Cursor, ConfigActor::Public);
        req.site_dir = PathBuf::from("/srv/a\nb");
        assert_eq!(generate(&req).unwrap_err().code, codes::CONFIG_PATH_INVALID);

        let mut req = request(Client::Cursor, ConfigActor::Public);
        req.server_name = Some("1bad name".into());
        assert_eq!(generate(&req).unwrap_err().code, codes::CONFIG_NAME_INVALID);

        let err = generate(&request(
            Client::Cursor,
            ConfigActor::Email("nobody".into()),
        ));
        assert_eq!(err.unwrap_err().code, codes::EMAIL_INVALID);

        let err = generate(&request(Client::Cursor, ConfigActor::Roles(vec![])));
        assert_eq!(err.unwrap_err().code, codes::ROLES_EMPTY);

        let bad_key = RawKey::new("gatehouse_sk_not a key");
        let err = generate(&request(
            Client::Cursor,
            ConfigActor::ApiKey(KeyDelivery::Inline(bad_key)),
        ));
        assert_eq!(err.unwrap_err().code, codes::ACTOR_API_KEY_INVALID);
    }

    /// The validator is what stands between a rendering bug and a broken paste, so
    /// it must reject tampered output, not just accept good output.
    #[test]
    fn validation_rejects_tampered_output() {
        let key = fake_key();
        let req = request(
            Client::Cursor,
            ConfigActor::ApiKey(KeyDelivery::Inline(key.clone())),
        );
        let spec = ServerSpec::from_request(&req).unwrap();
        let good = cursor(&spec).unwrap();
        validate(&spec, &good).unwrap();

        let doc = json(&good.text);
        let tampered = |edit: &dyn Fn(&mut Value)| {
            let mut d = doc.clone();
            edit(&mut d);
            let mut s = good.clone();
            s.text = serde_json::to_string(&d).unwrap();
            validate(&spec, &s).unwrap_err().code
        };
        let k = key.expose().to_string();
        let entry = "/mcpServers/gatehouse";
        assert_eq!(
            tampered(&|d| d
                .pointer_mut(&format!("{entry}/args"))
                .unwrap()
                .as_array_mut()
                .unwrap()
                .push(k.clone().into())),
            codes::CONFIG_VALIDATION_FAILED
        );
        assert_eq!(
            tampered(&|d| *d.pointer_mut(&format!("{entry}/command")).unwrap() = "gatehouse".into()),
            codes::CONFIG_VALIDATION_FAILED
        );
        assert_eq!(
            tampered(&|d| {
                d.pointer_mut(entry)
                    .unwrap()
                    .as_object_mut()
                    .unwrap()
                    .remove("env");
            }),
            codes::CONFIG_VALIDATION_FAILED
        );
        assert_eq!(
            tampered(&|d| *d = serde_json::json!({"servers": {}})),
            codes::CONFIG_VALIDATION_FAILED
        );

        let mut broken = good.clone();
        broken.text.pop();
        broken.text.pop();
        assert_eq!(
            validate(&spec, &broken).unwrap_err().code,
            codes::CONFIG_VALIDATION_FAILED
        );

        let mut shell_spec = spec;
        shell_spec.client = Client::ClaudeCode;
        let mut line = claude_code_shell(&shell_spec).unwrap();
        validate(&shell_spec, &line).unwrap();
        line.text = line.text.replace("${GATEHOUSE_API_KEY}", &k);
        assert_eq!(
            validate(&shell_spec, &line).unwrap_err().code,
            codes::CONFIG_VALIDATION_FAILED
        );
    }

    fn site_with(file: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(crate::site::SITE_FILE), file).unwrap();
        dir
    }

    #[test]
    fn check_site_reads_only_gatehouse_toml() {
        let roles = ConfigActor::Roles(vec![Role::Viewer]);
        let real = site_with("name = \"blog\"\n");
        let dir = check_site(real.path(), &ConfigActor::Public).unwrap();
        assert!(dir.is_absolute());
        assert_eq!(dir, real.path().canonicalize().unwrap());
        let err = check_site(real.path(), &roles).unwrap_err();
        assert_eq!(err.code, codes::ACTOR_ROLE_NOT_SCRATCH);

        let scratch = site_with("name = \"play\"\nscratch = true\n");
        check_site(scratch.path(), &roles).unwrap();

        let broken = site_with("name = ");
        let err = check_site(broken.path(), &ConfigActor::Public).unwrap_err();
        assert_eq!(err.code, codes::SITE_CONFIG_INVALID);

        let empty = tempfile::tempdir().unwrap();
        let err = check_site(empty.path(), &ConfigActor::Public).unwrap_err();
        assert_eq!(err.code, codes::SITE_NOT_FOUND);
    }

    #[test]
    fn verbatim_prefix_is_dropped_only_before_a_drive() {
        let strip = |p: &str| strip_verbatim(PathBuf::from(p));
        assert_eq!(
            strip(r"\\?\C:\x\gatehouse.exe"),
            PathBuf::from(r"C:\x\gatehouse.exe")
        );
        assert_eq!(strip(r"\\?\UNC\srv\x"), PathBuf::from(r"\\?\UNC\srv\x"));
        assert_eq!(
            strip("/usr/bin/gatehouse"),
            PathBuf::from("/usr/bin/gatehouse")
        );
    }

    fn arb_path() -> impl Strategy<Value = PathBuf> {
        // Spaces, quotes, backslashes, `$`, `#`, non-ASCII: all things a format
        // or a shell could mangle.
        proptest::collection::vec("[a-zA-Z0-9 _.'\"\\\\$#{}é-]{1,10}", 1..4)
            .prop_map(|segs| PathBuf::from(format!("/{}", segs.join("/"))))
    }

    fn arb_actor() -> impl Strategy<Value = ConfigActor> {
        prop_oneof![
            Just(ConfigActor::Public),
            "[a-z0-9.+_-]{1,12}@[a-z0-9.-]{1,12}".prop_map(ConfigActor::Email),
            proptest::sample::subsequence(Role::GRANTABLE.to_vec(), 1..=4)
                .prop_map(ConfigActor::Roles),
            Just(()).prop_map(|()| ConfigActor::ApiKey(KeyDelivery::Inline(fake_key()))),
            Just(ConfigActor::ApiKey(KeyDelivery::Reference)),
        ]
    }

    proptest! {
        /// Across every client and actor kind: output parses, runs the binary, and
        /// the key is never in args and is written exactly once, in env, when inline.
        #[test]
        fn every_client_and_actor_yields_safe_valid_config(
            client_index in 0..Client::ALL.len(),
            binary in arb_path(),
            site in arb_path(),
            name in proptest::option::of("[a-zA-Z][a-zA-Z0-9_-]{0,20}"),
            actor in arb_actor(),
        ) {
            let client = Client::ALL[client_index];
            let req = ConfigRequest {
                client,
                binary: binary.clone(),
                site_dir: site.clone(),
                server_name: name.clone(),
                actor: actor.clone(),
            };
            let result = generate(&req);
            if matches!(actor, ConfigActor::ApiKey(KeyDelivery::Reference)) && !client.supports_secret_ref() {
                prop_assert_eq!(result.unwrap_err().code, codes::CONFIG_SECRET_REF_UNSUPPORTED);
                return Ok(());
            }
            let out = result.unwrap();
            let name = name.unwrap_or_else(|| DEFAULT_SERVER_NAME.into());
            prop_assert_eq!(&out.server_name, &name);
            let raw = match &actor {
                ConfigActor::ApiKey(KeyDelivery::Inline(k)) => Some(k.expose().to_string()),
                _ => None,
            };
            for snippet in &out.snippets {
                if let Some(raw) = &raw {
                    let n = snippet.text.matches(raw.as_str()).count();
                    prop_assert_eq!(n, usize::from(snippet.contains_secret));
                } else {
                    prop_assert!(!snippet.contains_secret);
                }
                let (command, args, env) = command_line_of(client, &name, snippet);
                prop_assert_eq!(command.as_str(), binary.to_str().unwrap());
                prop_assert_eq!(&args[..3], &["mcp".to_string(), "--site".into(), site.to_str().unwrap().into()]);
                if let Some(raw) = &raw {
                    prop_assert!(args.iter().all(|a| !a.contains(raw.as_str())));
                    if snippet.contains_secret {
                        prop_assert_eq!(env.get(API_KEY_ENV), Some(raw));
                    }
                }
            }
        }
    }

    /// Pulls command, args and env out of a snippet with navigation written
    /// independently of `validate_doc`, so the property test checks the checker.
    fn command_line_of(
        client: Client,
        name: &str,
        snippet: &Snippet,
    ) -> (String, Vec<String>, BTreeMap<String, String>) {
        let doc: Value = match snippet.format {
            Format::Json => serde_json::from_str(&snippet.text).unwrap(),
            Format::Toml => toml::from_str(&snippet.text).unwrap(),
            Format::Yaml => serde_yaml_ng::from_str(&snippet.text).unwrap(),
            Format::Shell => {
                let words = shlex::split(&snippet.text).unwrap();
                let sep = words.iter().position(|w| w == "--").unwrap();
                return (
                    words[sep + 1].clone(),
                    words[sep + 2..].to_vec(),
                    BTreeMap::new(),
                );
            }
        };
        let entry = match client {
            Client::VsCode => doc["servers"][name].clone(),
            Client::Zed => doc["context_servers"][name].clone(),
            Client::Codex => doc["mcp_servers"][name].clone(),
            Client::Continue => doc["mcpServers"][0].clone(),
            _ => doc["mcpServers"][name].clone(),
        };
        let env = entry
            .get("env")
            .map(|e| serde_json::from_value(e.clone()).unwrap())
            .unwrap_or_default();
        (
            entry["command"].as_str().unwrap().to_string(),
            serde_json::from_value(entry["args"].clone()).unwrap(),
            env,
        )
    }
}
