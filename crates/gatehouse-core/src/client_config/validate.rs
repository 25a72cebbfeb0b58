//! The shape of each client's server entry, and the check that generated text,
//! parsed back with a real parser for its format, says what the spec says.
//!
//! [`Shape`] is the one description of "where the entry lives and what its keys
//! are called" that validation, `install` (where to merge) and `doctor` (how to
//! read an entry back) all use, so the three cannot drift apart.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::spec::{ServerSpec, internal};
use super::{API_KEY_ENV, Client, Format, Snippet};
use crate::error::Result;

/// Where a client keeps its servers and what it calls their keys.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Object keys from the document root to the servers.
    pub servers: &'static [&'static str],
    /// The servers are a list of entries with a `name` (Continue), not a map.
    pub list: bool,
    /// The key holding the program (`command`, Goose's `cmd`).
    pub command: &'static str,
    /// The key holding the arguments; `None` when `command` is an array of the
    /// program and its arguments (opencode).
    pub args: Option<&'static str>,
    /// The key holding the environment (`env`, `envs`, `environment`).
    pub env: &'static str,
    /// A `(key, value)` the entry must carry, e.g. `("type", "stdio")`.
    pub kind: Option<(&'static str, &'static str)>,
    /// A key listing variable names the client forwards or resolves itself
    /// (Codex `env_vars`, Goose `env_keys`): its reference form.
    pub forward: Option<&'static str>,
    /// Map keys are the name lower-cased (Goose's `name_to_key`).
    pub lowercase_keys: bool,
}

const fn map(servers: &'static [&'static str]) -> Shape {
    Shape {
        servers,
        list: false,
        command: "command",
        args: Some("args"),
        env: "env",
        kind: None,
        forward: None,
        lowercase_keys: false,
    }
}

impl Client {
    /// The shape of this client's server entry.
    pub fn shape(self) -> Shape {
        const MCP_SERVERS: &[&str] = &["mcpServers"];
        match self {
            Client::ClaudeCode | Client::VsCode | Client::RooCode => Shape {
                kind: Some(("type", "stdio")),
                ..map(if self == Client::VsCode {
                    &["servers"]
                } else {
                    MCP_SERVERS
                })
            },
            Client::Continue => Shape {
                list: true,
                kind: Some(("type", "stdio")),
                ..map(MCP_SERVERS)
            },
            Client::Zed => map(&["context_servers"]),
            Client::Codex => Shape {
                forward: Some("env_vars"),
                ..map(&["mcp_servers"])
            },
            Client::Goose => Shape {
                command: "cmd",
                env: "envs",
                kind: Some(("type", "stdio")),
                forward: Some("env_keys"),
                lowercase_keys: true,
                ..map(&["extensions"])
            },
            Client::Opencode => Shape {
                args: None,
                env: "environment",
                kind: Some(("type", "local")),
                ..map(&["mcp"])
            },
            Client::Copilot => Shape {
                kind: Some(("type", "local")),
                ..map(MCP_SERVERS)
            },
            Client::ClaudeDesktop
            | Client::Cursor
            | Client::Windsurf
            | Client::Gemini
            | Client::Cline
            | Client::JetBrains
            | Client::Kiro
            | Client::LmStudio => map(MCP_SERVERS),
        }
    }
}

/// A server entry read back from a document through a [`Shape`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryView {
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// The names in the shape's `forward` list, if any.
    pub forwarded: Vec<String>,
}

impl Shape {
    /// The servers container of `doc`, if present.
    pub fn servers_in<'a>(&self, doc: &'a Value) -> Option<&'a Value> {
        self.servers.iter().try_fold(doc, |v, key| v.get(key))
    }

    /// Every `(name, entry)` in `doc`.
    pub fn entries<'a>(&self, doc: &'a Value) -> Vec<(String, &'a Value)> {
        match self.servers_in(doc) {
            Some(Value::Object(map)) if !self.list => {
                map.iter().map(|(k, v)| (k.clone(), v)).collect()
            }
            Some(Value::Array(list)) if self.list => list
                .iter()
                .filter_map(|e| Some((e.get("name")?.as_str()?.to_string(), e)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The entry called `name`, if present.
    pub fn entry<'a>(&self, doc: &'a Value, name: &str) -> Option<&'a Value> {
        let name = if self.lowercase_keys {
            name.to_lowercase()
        } else {
            name.to_string()
        };
        self.entries(doc)
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, e)| e)
    }

    /// Reads command, args and env out of an entry; `Err` says what is wrong.
    pub fn view(&self, entry: &Value) -> std::result::Result<EntryView, &'static str> {
        let strings = |v: &Value| -> Option<Vec<String>> {
            v.as_array()?
                .iter()
                .map(|s| s.as_str().map(String::from))
                .collect()
        };
        let (command, args) = match self.args {
            Some(args_key) => {
                let command = entry
                    .get(self.command)
                    .and_then(Value::as_str)
                    .ok_or("has no command")?;
                let args = match entry.get(args_key) {
                    None => Vec::new(),
                    Some(v) => strings(v).ok_or("has args that are not a list of strings")?,
                };
                (command.to_string(), args)
            }
            None => {
                let mut all = entry
                    .get(self.command)
                    .and_then(strings)
                    .ok_or("has no command array")?;
                if all.is_empty() {
                    return Err("has an empty command array");
                }
                let command = all.remove(0);
                (command, all)
            }
        };
        let env = match entry.get(self.env) {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|_| "has an env that is not a string map")?,
        };
        let forwarded = match self.forward.and_then(|k| entry.get(k)) {
            None => Vec::new(),
            Some(v) => strings(v).ok_or("has a forward list that is not strings")?,
        };
        Ok(EntryView {
            command,
            args,
            env,
            forwarded,
        })
    }
}

pub(super) fn validate(spec: &ServerSpec, snippet: &Snippet) -> Result<()> {
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
    let doc: Value = match snippet.format {
        Format::Json => serde_json::from_str(&snippet.text)
            .map_err(|e| internal(format!("generated JSON does not parse: {e}")))?,
        Format::Toml => toml::from_str(&snippet.text)
            .map_err(|e| internal(format!("generated TOML does not parse: {e}")))?,
        Format::Yaml => serde_yaml_ng::from_str(&snippet.text)
            .map_err(|e| internal(format!("generated YAML does not parse: {e}")))?,
        Format::Shell => return validate_shell(spec, &snippet.text),
    };
    validate_doc(spec, &doc)
}

/// Checks a parsed document (whatever its syntax) against the spec.
pub(super) fn validate_doc(spec: &ServerSpec, doc: &Value) -> Result<()> {
    let fail = |what: &str| internal(format!("generated {} config {what}", spec.client.id()));
    let shape = spec.client.shape();
    let Some(entry) = shape.entry(doc, &spec.name).filter(|e| e.is_object()) else {
        return Err(fail(&format!("lacks the server entry {:?}", spec.name)));
    };
    let view = shape.view(entry).map_err(fail)?;
    if view.command != spec.command {
        return Err(fail("does not run the gatehouse binary"));
    }
    if !Path::new(&spec.command).is_absolute() {
        return Err(fail("has a command that is not an absolute path"));
    }
    if view.args != spec.args {
        return Err(fail("has unexpected args"));
    }
    if let Some(raw) = spec.inline_key()
        && view.args.iter().any(|a| a.contains(raw))
    {
        return Err(fail("carries the API key in args"));
    }
    if view.env != spec.env() {
        return Err(fail("has an unexpected env block"));
    }
    if let Some((key, value)) = shape.kind
        && entry.get(key).and_then(Value::as_str) != Some(value)
    {
        return Err(fail(&format!("lacks \"{key}\": \"{value}\"")));
    }
    if shape.kind.is_none() && entry.get("type").is_some() {
        return Err(fail("has a type the client does not document"));
    }
    if shape.forward.is_some() {
        let expected: Vec<String> = if spec.by_reference() {
            vec![API_KEY_ENV.to_string()]
        } else {
            Vec::new()
        };
        if view.forwarded != expected {
            return Err(fail("has an unexpected forward list"));
        }
    }
    super::clients::check_extra(spec, doc, entry).map_err(fail)
}

/// Splits a client's `mcp add` line as a POSIX shell would and checks every
/// word: the program and server name first, then the binary and its args (one
/// `--` may sit before them or among them, where the client's parser needs it),
/// and the key only ever as a `$` reference, never raw.
fn validate_shell(spec: &ServerSpec, text: &str) -> Result<()> {
    let fail = |what: &str| internal(format!("generated {} command line {what}", spec.client));
    let Some(words) = shlex::split(text.trim_end()) else {
        return Err(fail("does not split into shell words"));
    };
    let Some(at) = words.iter().position(|w| *w == spec.command) else {
        return Err(fail("does not run the gatehouse binary"));
    };
    let (head, tail) = (&words[..at], &words[at + 1..]);
    let program = super::clients::cli_program(spec.client).ok_or_else(|| fail("is unexpected"))?;
    if head.first().map(String::as_str) != Some(program) || !head.contains(&spec.name) {
        return Err(fail(&format!(
            "does not start with {program} and name the server"
        )));
    }
    let mut args: Vec<&String> = tail.iter().collect();
    if let Some(i) = args.iter().position(|w| *w == "--") {
        args.remove(i);
    }
    if args != spec.args.iter().collect::<Vec<_>>() {
        return Err(fail("does not pass the expected args"));
    }
    if let Some(raw) = spec.inline_key()
        && text.contains(raw)
    {
        return Err(fail("carries the raw API key"));
    }
    let env: Vec<&String> = head
        .iter()
        .zip(head.iter().skip(1))
        .filter(|(flag, _)| matches!(flag.as_str(), "-e" | "--env"))
        .map(|(_, value)| value)
        .collect();
    let ok = match &spec.key {
        None => env.is_empty(),
        Some(_) => {
            env.len() == 1 && env[0].starts_with(&format!("{API_KEY_ENV}=")) && env[0].contains('$')
        }
    };
    if !ok {
        return Err(fail("has an unexpected env flag"));
    }
    Ok(())
}
