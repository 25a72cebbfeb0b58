//! One file per client. Each `clients/<x>.rs` holds everything Gatehouse knows
//! about that client as one [`ClientSpec`]: its name and aliases, the entry
//! [`Shape`], how its config references a secret, its files per system and
//! scope, the snippets it gets (local and remote), the checks its entry needs
//! beyond the shape, and its own `mcp add` program. Every file cites the
//! documentation or source its format was checked against.
//!
//! Adding a client is its file plus one line in the [`registry!`] list below
//! (the line names the enum variant and the stable id used on the command line
//! and over IPC, which must stay literal for serde and ts-rs).

mod claude_code;
mod claude_desktop;
mod cline;
mod codex;
mod continue_dev;
mod copilot;
mod cursor;
mod gemini;
mod goose;
mod jetbrains;
mod kiro;
mod lm_studio;
mod opencode;
mod roo_code;
mod vscode;
mod windsurf;
mod zed;
mod zoo_code;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};

use super::paths::{Home, Scope, Syntax};
use super::spec::{ServerSpec, sh_quote};
use super::validate::Shape;
use super::{API_KEY_ENV, Snippet};
use crate::error::Result;

macro_rules! registry {
    ($( $variant:ident = $id:literal => $module:ident, )*) => {
        /// The MCP clients Gatehouse can write configuration for.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, ts_rs::TS)]
        pub enum Client {
            $( #[serde(rename = $id)] $variant, )*
        }

        impl Client {
            /// Every client, in the order the docs and the UI list them.
            pub const ALL: [Client; [$($id),*].len()] = [$(Client::$variant),*];

            /// The stable name used on the command line and over IPC.
            pub fn id(self) -> &'static str {
                match self { $(Client::$variant => $id,)* }
            }

            /// Everything this client's file says about it.
            pub(in crate::client_config) fn spec(self) -> &'static ClientSpec {
                match self { $(Client::$variant => &$module::SPEC,)* }
            }
        }
    };
}

registry! {
    ClaudeDesktop = "claude-desktop" => claude_desktop,
    ClaudeCode = "claude-code" => claude_code,
    Cursor = "cursor" => cursor,
    VsCode = "vscode" => vscode,
    Windsurf = "windsurf" => windsurf,
    Zed = "zed" => zed,
    Codex = "codex" => codex,
    Continue = "continue" => continue_dev,
    Gemini = "gemini" => gemini,
    Cline = "cline" => cline,
    RooCode = "roo-code" => roo_code,
    ZooCode = "zoo-code" => zoo_code,
    JetBrains = "jetbrains" => jetbrains,
    Goose = "goose" => goose,
    Opencode = "opencode" => opencode,
    Kiro = "kiro" => kiro,
    Copilot = "copilot" => copilot,
    LmStudio = "lm-studio" => lm_studio,
}

/// All a client knows, as data and a few functions.
pub(in crate::client_config) struct ClientSpec {
    /// The product name, for people.
    pub name: &'static str,
    /// Other spellings accepted on the command line (normalised: lower case,
    /// `-` for `_` and spaces).
    pub aliases: &'static [&'static str],
    /// Where the stdio entry lives in the client's file and what its keys are.
    pub shape: Shape,
    /// The text the client substitutes with the key when it starts a server
    /// (`None`: no indirection; the argument is the server name, for VS Code's
    /// per-server input). Codex and Goose name the variable itself, since
    /// their indirection is a list of names (`env_vars`, `env_keys`).
    pub secret_ref: Option<fn(&str) -> String>,
    /// Every snippet for a local (stdio) server, the main one (the one
    /// `install` writes) first.
    pub render: fn(&ServerSpec) -> Result<Vec<Snippet>>,
    /// Checks beyond the common shape, on the parsed document and the entry.
    pub check: fn(&ServerSpec, &Value, &Value) -> std::result::Result<(), &'static str>,
    /// The program of the client's own non-interactive `mcp add` line.
    pub cli: Option<&'static str>,
    /// The scope `install` uses when none is given.
    pub default_scope: Scope,
    /// The file the client reads at a scope (`project` is the project folder,
    /// `name` the server name, for clients with a file per server); `None`
    /// when it has no file at that scope.
    pub file: fn(&Home, Scope, &Path, &str) -> Option<ClientFile>,
    /// More files the client may read, for the doctor (other spellings,
    /// other installers, files an admin named freely).
    pub also_read: fn(&Home, &Path) -> Vec<(Scope, ClientFile)>,
    /// Set when the client keeps servers in its own settings rather than a
    /// file: why, and what to do instead.
    pub no_file: Option<(&'static str, &'static str)>,
    /// The remote form, for `gatehouse serve`.
    pub remote: Remote,
}

/// One file of a client at one scope.
#[derive(Debug, Clone)]
pub(in crate::client_config) struct ClientFile {
    pub path: PathBuf,
    pub syntax: Syntax,
    /// Object keys from the root to the servers map when they differ from the
    /// shape's (Claude Code's local scope).
    pub servers: Option<Vec<String>>,
    /// Set when the client as installed here ignores this file, to the file it
    /// reads instead (Claude Desktop's `%APPDATA%` file under the MSIX app).
    pub read_instead: Option<PathBuf>,
}

impl ClientFile {
    pub fn new(path: PathBuf, syntax: Syntax) -> ClientFile {
        ClientFile {
            path,
            syntax,
            servers: None,
            read_instead: None,
        }
    }
}

/// How a client reaches a server over Streamable HTTP, if it can.
pub(in crate::client_config) enum Remote {
    Form {
        shape: RemoteShape,
        /// Every snippet for a remote server, the main one first.
        render: fn(&ServerSpec) -> Result<Vec<Snippet>>,
    },
    /// The client cannot send a static header: why, and the way that works.
    Unsupported(&'static str),
}

/// The keys of a remote entry (its container is the stdio [`Shape`]'s).
#[derive(Debug, Clone, Copy)]
pub(in crate::client_config) struct RemoteShape {
    /// The key holding the URL (`url`, `serverUrl`, `httpUrl`, `uri`).
    pub url: &'static str,
    /// A `(key, value)` the entry must carry, e.g. `("type", "http")`.
    pub kind: Option<(&'static str, &'static str)>,
    /// Keys from the entry to its header map.
    pub headers: &'static [&'static str],
    /// Whether the client expands its [`ClientSpec::secret_ref`] inside header
    /// values, so the key can be referenced instead of written.
    pub header_ref: bool,
    /// A key naming the variable the client sends as a bearer token itself
    /// (Codex `bearer_token_env_var`): its reference form.
    pub bearer_env: Option<&'static str>,
}

impl RemoteShape {
    /// The common `url` + `headers` entry with an optional type.
    pub const fn url(kind: Option<(&'static str, &'static str)>, header_ref: bool) -> RemoteShape {
        RemoteShape {
            url: "url",
            kind,
            headers: &["headers"],
            header_ref,
            bearer_env: None,
        }
    }
}

impl ClientSpec {
    /// The remote shape, when the client has a remote form.
    pub fn remote_shape(&self) -> Option<&RemoteShape> {
        match &self.remote {
            Remote::Form { shape, .. } => Some(shape),
            Remote::Unsupported(_) => None,
        }
    }
}

/// Every snippet for `spec.client`, the main one (the one `install` writes) first.
pub(super) fn render(spec: &ServerSpec) -> Result<Vec<Snippet>> {
    let client = spec.client.spec();
    match (&spec.url, &client.remote) {
        (None, _) => (client.render)(spec),
        (Some(_), Remote::Form { render, .. }) => render(spec),
        (Some(_), Remote::Unsupported(_)) => Err(super::spec::internal(format!(
            "{} has no remote form",
            client.name
        ))),
    }
}

/// No checks beyond the common shape.
fn no_check(_: &ServerSpec, _: &Value, _: &Value) -> std::result::Result<(), &'static str> {
    Ok(())
}

/// No files beyond [`ClientSpec::file`]'s.
fn no_more_files(_: &Home, _: &Path) -> Vec<(Scope, ClientFile)> {
    Vec::new()
}

/// `${NAME}`: Claude Code, Gemini CLI, Kiro, Copilot CLI.
fn braces(_: &str) -> String {
    format!("${{{API_KEY_ENV}}}")
}

/// `${env:NAME}`: Cursor, Windsurf, Cline, Roo Code.
fn env_colon(_: &str) -> String {
    format!("${{env:{API_KEY_ENV}}}")
}

/// The variable's name itself: Codex (`env_vars`), Goose (`env_keys`).
fn variable_name(_: &str) -> String {
    API_KEY_ENV.to_string()
}

/// `NAME=${NAME}`: the env flag value every `mcp add` line uses. It is stored
/// as written and expanded by the client when it starts the server, so the
/// key never appears in shell history or in `ps`.
fn env_reference_flag() -> String {
    format!("{API_KEY_ENV}=${{{API_KEY_ENV}}}")
}

/// Joins words into one POSIX shell line, quoting where needed.
fn shell_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| sh_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
        + "\n"
}

/// The sentence the `mcp add` lines share: the key is referenced, never written.
fn shell_key_note(spec: &ServerSpec) -> String {
    match spec.key {
        Some(_) => format!(
            " The line references the key, it does not write it: export {API_KEY_ENV} in the \
             environment the client starts from. The server runs as {}.",
            super::ConfigActor::ApiKey(super::KeyDelivery::Reference).describe()
        ),
        None => format!(" {}", spec.runs_as()),
    }
}

/// An object whose keys keep the order they were added in (serde_json's
/// map sorts them), so a generated entry reads kind, URL, headers.
#[derive(Debug, Clone, Default)]
struct Ordered(Vec<(String, Value)>);

impl Ordered {
    fn push(&mut self, key: &str, value: impl Into<Value>) {
        self.0.push((key.to_string(), value.into()));
    }
}

impl Serialize for Ordered {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// A remote entry of `shape` for `spec`: the kind, the URL and the header map
/// (or Codex's bearer variable), in that order; renderers add their extras.
fn remote_entry(spec: &ServerSpec, shape: &RemoteShape) -> Ordered {
    let mut entry = Ordered::default();
    if let Some((key, value)) = shape.kind {
        entry.push(key, value);
    }
    entry.push(shape.url, spec.url.clone().unwrap_or_default());
    if let Some(var) = shape.bearer_env.filter(|_| spec.by_reference()) {
        entry.push(var, API_KEY_ENV);
    } else if let Some(value) = spec.authorization() {
        let mut headers = json!({ "Authorization": value });
        for key in shape.headers.iter().skip(1).rev() {
            headers = json!({ *key: headers });
        }
        entry.push(shape.headers[0], headers);
    }
    entry
}

/// `{"<top>": {"<name>": entry}}` for a remote entry.
fn remote_file(spec: &ServerSpec, top: &str, entry: Ordered) -> Result<String> {
    super::spec::servers_file(top, &spec.name, entry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client_config::paths::{Home, Os};

    /// Every client's descriptor is complete and consistent: a file at its
    /// default scope exactly when it is installable, a CLI program exactly
    /// when it renders an `mcp add` line, unique ids and aliases, and a
    /// remote form or a reason.
    #[test]
    fn every_client_descriptor_is_consistent() {
        let mut names = std::collections::BTreeSet::new();
        for client in Client::ALL {
            let spec = client.spec();
            assert!(names.insert(client.id()), "{client}");
            for alias in spec.aliases {
                assert!(names.insert(alias), "{client}: alias {alias} taken");
                assert_eq!(alias.parse::<Client>().unwrap(), client);
            }
            for os in [Os::Linux, Os::Macos, Os::Windows] {
                let home = Home::new(os, PathBuf::from("/h"), |_| None);
                let file = (spec.file)(&home, spec.default_scope, Path::new("/p"), "gatehouse");
                assert_eq!(file.is_some(), spec.no_file.is_none(), "{client} on {os:?}");
            }
            match &spec.remote {
                Remote::Form { shape, .. } => {
                    assert!(!shape.headers.is_empty(), "{client}");
                    assert!(
                        !shape.header_ref || spec.secret_ref.is_some(),
                        "{client}: a header reference needs a reference form"
                    );
                }
                Remote::Unsupported(why) => assert!(why.len() > 20, "{client}"),
            }
        }
    }
}
