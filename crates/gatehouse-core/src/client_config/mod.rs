//! MCP client configuration: print it, install it into a client's own file,
//! check it later, or bundle it as a Claude Desktop extension. Two forms: the
//! local one starts `gatehouse mcp` (stdio); the remote one reaches a
//! `gatehouse serve` at a URL with the key as a bearer token.
//!
//! Map:
//! - this file: a [`ConfigRequest`] says which client, which binary serves which
//!   site (or which URL), as which [`ConfigActor`]; [`generate`] renders the
//!   client's format and validates it before returning it; [`check_site`] and
//!   [`client_path`] turn the caller's paths into the absolute ones a client needs.
//! - `clients/`: one file per client holding all that client knows (names,
//!   files per system and scope, entry shape, secret reference, local and
//!   remote snippets, extra checks, `mcp add` program), each citing the
//!   documentation or source it was checked against; [`Client`] is their list.
//! - `spec`: the client-independent server entry (command and args, or URL;
//!   key delivery) and the input checks.
//! - [`validate`]: the entry [`Shape`] type and the check that parses generated
//!   text back with a real parser (JSON, TOML, YAML, shell words).
//! - [`paths`]: the [`Home`] every file hangs off (any system, testable
//!   anywhere) and the lookups over every client's files.
//! - [`merge`]: editing JSON (with comments where the client allows them), TOML
//!   and YAML files in place, leaving every other entry and comment alone.
//! - [`install`](mod@install): `gatehouse config install` (lock, merge, verify, diff, backup,
//!   atomic write), with a dry run that returns the diff.
//! - [`doctor`](mod@doctor): finds client files, lists the Gatehouse entries in them and
//!   checks each (binary, site, key, actor; for a remote entry the URL and what
//!   the server answers with the key), as structured results; `probe` makes
//!   the remote calls.
//! - [`mcpb`]: the `.mcpb` bundle that lets Claude Desktop keep the key in the
//!   OS keychain.
//!
//! Rules every client follows, because they are what makes a config safe:
//! - `command` is the absolute path of the `gatehouse` binary: clients start
//!   servers with a reduced `PATH` (Claude Desktop notably), so a bare name breaks.
//! - The site is passed as `--site DIR` in `args`: not every client has a `cwd`.
//! - An API key travels only in the env block as [`API_KEY_ENV`], never in
//!   `args` (argv is visible to every local user through `ps`); in the remote
//!   form only in the `Authorization` header, never in the URL. With
//!   [`KeyDelivery::Reference`] the key is not in the output at all: the client's
//!   own indirection is emitted instead (see [`Client::secret_reference`]).
//! - A raw key is never installed into a project file (it is committed).
//! - A remote URL is `https`, or `http` to loopback only.
//!
//! # Caveats
//! - The reference forms all name the same source variable, `GATEHOUSE_API_KEY`;
//!   two sites with different keys in one client need the key inline for one of
//!   them, or a client-side rename (VS Code inputs are per server name, so VS Code
//!   does not have this limit).
//! - A database URL is not part of the generated config: the site's
//!   `gatehouse.toml` is expected to hold it (a URL may carry a password, which
//!   would need the same care as a key).

mod clients;
pub mod doctor;
pub mod install;
pub mod mcpb;
pub mod merge;
pub mod paths;
mod probe;
mod spec;
pub mod validate;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_clients;
#[cfg(test)]
mod tests_fixes;
#[cfg(test)]
mod tests_remote;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;

use crate::access::keys::RawKey;
use crate::access::permissions::{Role, format_roles};
use crate::error::{Error, Result, codes};

pub use clients::Client;
pub use doctor::{DoctorOptions, DoctorReport, doctor, doctor_with};
pub use install::{InstallOutcome, InstallRequest, REDACTED_KEY, install};
pub use paths::{Home, Os, Scope};
pub use validate::Shape;

use spec::ServerSpec;

/// The environment variable `gatehouse mcp` reads its API key from.
pub const API_KEY_ENV: &str = crate::access::actor::ENV_API_KEY;

/// Server name used when the request names none.
pub const DEFAULT_SERVER_NAME: &str = "gatehouse";

/// How an API key reaches the server the client spawns.
#[derive(Debug, Clone)]
pub enum KeyDelivery {
    /// The key is written into the config's env block, in clear.
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

impl Client {
    /// The string this client substitutes with the key at spawn time, for the
    /// clients that have such an indirection (`None` for the others).
    ///
    /// Codex and Goose have an indirection too, but it is a list of variable
    /// names (`env_vars`, `env_keys`) rather than a value, so they report
    /// [`API_KEY_ENV`] itself; VS Code's depends on the server name (one input
    /// per server).
    pub fn secret_reference(self, server_name: &str) -> Option<String> {
        self.spec()
            .secret_ref
            .map(|reference| reference(server_name))
    }

    /// The product name, for people.
    pub fn display_name(self) -> &'static str {
        self.spec().name
    }

    /// Whether `--url` (the remote form) works for this client, or why not.
    pub fn remote(self) -> std::result::Result<(), &'static str> {
        match &self.spec().remote {
            clients::Remote::Form { .. } => Ok(()),
            clients::Remote::Unsupported(why) => Err(why),
        }
    }

    /// Whether `--secret-ref` works for this client.
    pub fn supports_secret_ref(self) -> bool {
        self.secret_reference(DEFAULT_SERVER_NAME).is_some()
    }

    /// Whether `gatehouse config install` can write this client's file (JetBrains
    /// keeps MCP servers in IDE settings with no documented file).
    pub fn installable(self) -> bool {
        self.spec().no_file.is_none()
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
    /// the spellings each client's file lists (`vs-code`, `codex-cli`, `roo`, ...).
    fn from_str(s: &str) -> Result<Self> {
        let norm = s.trim().to_ascii_lowercase().replace(['_', ' '], "-");
        Client::ALL
            .into_iter()
            .find(|c| c.id() == norm || c.spec().aliases.contains(&norm.as_str()))
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
    /// The endpoint of a `gatehouse serve` to reach instead of starting
    /// `binary`: the client's remote form is generated (`binary` and
    /// `site_dir` are then not used).
    pub url: Option<String>,
}

/// The syntax of a [`Snippet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Json,
    Toml,
    Yaml,
    /// One POSIX shell command line (sh, bash, zsh).
    Shell,
}

/// Where a client reads its configuration from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct Location {
    /// `project` (inside the repository or workspace), `user` (all projects) or
    /// `local` (this project, kept outside it: Claude Code).
    #[ts(type = "\"project\" | \"user\" | \"local\"")]
    pub scope: &'static str,
    /// Set when the path differs per operating system or installer.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub os: Option<&'static str>,
    pub path: String,
}

/// One piece of text to paste, with where it goes and what to do with it.
#[derive(Clone, Serialize, ts_rs::TS)]
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

/// The result of [`generate`]: the main snippet first (the one `install`
/// writes), then alternatives such as a client's own `mcp add` command line.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
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
/// expected ones and free of the key, the key only in the env block) before it
/// is returned.
pub fn generate(request: &ConfigRequest) -> Result<GeneratedConfig> {
    let spec = ServerSpec::from_request(request)?;
    let snippets = clients::render(&spec)?;
    for snippet in &snippets {
        validate::validate(&spec, snippet)?;
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
    let canonical = path.canonicalize().map_err(|e| {
        Error::new(
            codes::IO_ERROR,
            format!("cannot resolve {}: {e}", path.display()),
        )
    })?;
    Ok(strip_verbatim(canonical))
}

fn strip_verbatim(path: PathBuf) -> PathBuf {
    match path.to_str().and_then(|s| s.strip_prefix(r"\\?\")) {
        Some(rest) if rest.as_bytes().get(1) == Some(&b':') => PathBuf::from(rest),
        _ => path,
    }
}

/// Checks `dir` is a site a generated config can point at, and returns it as
/// [`client_path`] names it. Refuses `--role` on a non-scratch site and a bad
/// `[limits]` or `[approvals]` up front, since the server would refuse them at
/// every start.
///
/// Only `gatehouse.toml` is read: a config can be generated while the site's
/// database is unreachable.
pub fn check_site(dir: &Path, actor: &ConfigActor) -> Result<PathBuf> {
    let file = crate::site::read_site_file(dir)?;
    file.check_policies()?;
    if matches!(actor, ConfigActor::Roles(_)) && !file.scratch {
        return Err(Error::invalid(
            codes::ACTOR_ROLE_NOT_SCRATCH,
            "--role is only allowed on a scratch site",
            "use --email for a real user or an API key",
        ));
    }
    client_path(dir)
}
