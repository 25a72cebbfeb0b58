//! The shape of each client's server entry, and the check that generated text,
//! parsed back with a real parser for its format, says what the spec says.
//!
//! [`Shape`] is the one description of "where the entry lives and what its keys
//! are called" that validation, `install` (where to merge) and `doctor` (how to
//! read an entry back) all use, so the three cannot drift apart.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::clients::RemoteShape;
use super::spec::{ServerSpec, internal};
use super::{API_KEY_ENV, Client, Format, KeyDelivery, Snippet};
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

/// The `command`/`args`/`env` entry most clients share, under `servers`.
pub(super) const fn map(servers: &'static [&'static str]) -> Shape {
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

/// `mcpServers`, the container most clients use.
pub(super) const MCP_SERVERS: &[&str] = &["mcpServers"];

impl Client {
    /// The shape of this client's server entry.
    pub fn shape(self) -> Shape {
        self.spec().shape
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
    if spec.url.is_some() {
        validate_remote(spec, entry).map_err(fail)?;
        return (spec.client.spec().check)(spec, doc, entry).map_err(fail);
    }
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
    (spec.client.spec().check)(spec, doc, entry).map_err(fail)
}

/// A remote entry read back through its client's [`RemoteShape`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteView {
    pub url: String,
    /// The `Authorization` header as written (a key or a reference).
    pub authorization: Option<String>,
    /// The variable a client sends as the bearer token itself (Codex).
    pub bearer_env: Option<String>,
}

impl RemoteShape {
    /// Reads the URL and the credentials out of a remote entry.
    pub fn view(&self, entry: &Value) -> std::result::Result<RemoteView, &'static str> {
        let url = entry
            .get(self.url)
            .and_then(Value::as_str)
            .ok_or("has no URL")?
            .to_string();
        let headers = self.headers.iter().try_fold(entry, |v, key| v.get(key));
        let authorization = match headers {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) => map
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                .map(|(_, v)| {
                    v.as_str()
                        .map(String::from)
                        .ok_or("has a header that is not a string")
                })
                .transpose()?,
            Some(_) => return Err("has headers that are not a map"),
        };
        let bearer_env = match self.bearer_env.and_then(|k| entry.get(k)) {
            None => None,
            Some(v) => Some(
                v.as_str()
                    .ok_or("has a bearer variable that is not a string")?
                    .to_string(),
            ),
        };
        Ok(RemoteView {
            url,
            authorization,
            bearer_env,
        })
    }
}

/// The remote entry says what the spec says: its URL, its kind, the key (or
/// the reference) only in the `Authorization` header, and nothing that would
/// make the client start a process.
fn validate_remote(spec: &ServerSpec, entry: &Value) -> std::result::Result<(), &'static str> {
    let shape = spec
        .client
        .spec()
        .remote_shape()
        .ok_or("is remote for a client without a remote form")?;
    let view = shape.view(entry)?;
    if Some(&view.url) != spec.url.as_ref() {
        return Err("does not name the server URL");
    }
    if let Some((key, value)) = shape.kind
        && entry.get(key).and_then(Value::as_str) != Some(value)
    {
        return Err("lacks the remote type");
    }
    for local in ["command", "cmd", "args"] {
        if entry.get(local).is_some() {
            return Err("has a command next to its URL");
        }
    }
    let (authorization, bearer_env) = match (&spec.key, shape.bearer_env) {
        (Some(KeyDelivery::Reference), Some(_)) => (None, Some(API_KEY_ENV.to_string())),
        _ => (spec.authorization(), None),
    };
    if view.authorization != authorization {
        return Err("has an unexpected Authorization header");
    }
    if view.bearer_env != bearer_env {
        return Err("has an unexpected bearer variable");
    }
    if let Some(raw) = spec.inline_key() {
        let text = entry.to_string();
        if text.matches(raw).count() != 1 {
            return Err("carries the API key outside its header");
        }
    }
    Ok(())
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
    if let Some(url) = &spec.url {
        return validate_remote_shell(spec, &words, url, text).map_err(fail);
    }
    let Some(at) = words.iter().position(|w| *w == spec.command) else {
        return Err(fail("does not run the gatehouse binary"));
    };
    let (head, tail) = (&words[..at], &words[at + 1..]);
    let program = spec
        .client
        .spec()
        .cli
        .ok_or_else(|| fail("is unexpected"))?;
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

/// A remote `mcp add` line: the program, the server name, the URL, and the
/// key only as a `--header` that references it.
fn validate_remote_shell(
    spec: &ServerSpec,
    words: &[String],
    url: &str,
    text: &str,
) -> std::result::Result<(), &'static str> {
    let program = spec.client.spec().cli.ok_or("is unexpected")?;
    if words.first().map(String::as_str) != Some(program) || !words.contains(&spec.name) {
        return Err("does not start with the client's program and name the server");
    }
    if words.iter().filter(|w| *w == url).count() != 1 {
        return Err("does not name the server URL once");
    }
    if let Some(raw) = spec.inline_key()
        && text.contains(raw)
    {
        return Err("carries the raw API key");
    }
    let headers: Vec<&String> = words
        .iter()
        .zip(words.iter().skip(1))
        .filter(|(flag, _)| matches!(flag.as_str(), "-H" | "--header"))
        .map(|(_, value)| value)
        .collect();
    let ok = match &spec.key {
        None => headers.is_empty(),
        Some(_) => {
            headers.len() == 1 && *headers[0] == format!("Authorization: Bearer ${{{API_KEY_ENV}}}")
        }
    };
    if !ok {
        return Err("has an unexpected header flag");
    }
    Ok(())
}
