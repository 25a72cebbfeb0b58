//! The client-independent part of a server entry: what to run, with which
//! arguments, how the key (if any) is delivered; the small builders every
//! renderer shares; and the checks on the caller's input.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::clients::Remote;
use super::{
    API_KEY_ENV, Client, ConfigActor, ConfigRequest, DEFAULT_SERVER_NAME, Format, KeyDelivery,
    Location, Snippet,
};
use crate::access::keys::{self, RawKey};
use crate::access::permissions::format_roles;
use crate::access::users;
use crate::error::{Error, Result, codes};

/// The client-independent part: what to run, with which arguments, and how the
/// key (if any) is delivered.
pub(super) struct ServerSpec {
    pub client: Client,
    pub name: String,
    /// The `gatehouse` binary and its arguments (empty for a remote server).
    pub command: String,
    pub args: Vec<String>,
    /// The `gatehouse serve` endpoint, for the remote form.
    pub url: Option<String>,
    pub key: Option<KeyDelivery>,
    pub actor: String,
}

impl ServerSpec {
    pub fn from_request(req: &ConfigRequest) -> Result<Self> {
        let name = req
            .server_name
            .clone()
            .unwrap_or_else(|| DEFAULT_SERVER_NAME.to_string());
        check_server_name(&name)?;
        if let Some(url) = &req.url {
            return Self::remote(req, name, url);
        }
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
                            "drop --secret-ref to write the key into the config in clear{}, or \
                             use one of: {}",
                            if req.client == Client::ClaudeDesktop {
                                " (or run `gatehouse config mcpb` for an extension that keeps \
                                 the key in the OS keychain)"
                            } else {
                                ""
                            },
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
            url: None,
            key,
            actor: req.actor.describe(),
        })
    }

    /// The remote form: a URL and, with a key, an `Authorization` header (or
    /// the client's own bearer variable).
    fn remote(req: &ConfigRequest, name: String, url: &str) -> Result<Self> {
        let spec = req.client.spec();
        if spec.remote_shape().is_none() {
            let why = match &spec.remote {
                Remote::Unsupported(why) => *why,
                Remote::Form { .. } => "",
            };
            return Err(Error::invalid(
                codes::CONFIG_REMOTE_UNSUPPORTED,
                format!("{} has no remote form Gatehouse can write", spec.name),
                why,
            ));
        }
        let url = check_url(url)?;
        let key = match &req.actor {
            ConfigActor::Public => None,
            ConfigActor::Email(_) | ConfigActor::Roles(_) => {
                return Err(Error::invalid(
                    codes::INPUT_INVALID,
                    "a remote server knows a caller only by its API key",
                    "use an API key (GATEHOUSE_API_KEY, --api-key or --secret-ref), or --public",
                ));
            }
            ConfigActor::ApiKey(delivery) => {
                match delivery {
                    KeyDelivery::Inline(raw) => check_key(raw)?,
                    KeyDelivery::Reference if !remote_reference(req.client) => {
                        return Err(Error::invalid(
                            codes::CONFIG_SECRET_REF_UNSUPPORTED,
                            format!(
                                "{} cannot reference a secret in a remote server's headers",
                                spec.name
                            ),
                            format!(
                                "drop --secret-ref to write the key into the header in clear \
                                 (install it at user scope only), or use one of: {}",
                                Client::ALL
                                    .into_iter()
                                    .filter(|c| remote_reference(*c))
                                    .map(Client::id)
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        ));
                    }
                    KeyDelivery::Reference => {}
                }
                Some(delivery.clone())
            }
        };
        Ok(Self {
            client: req.client,
            name,
            command: String::new(),
            args: Vec::new(),
            url: Some(url),
            key,
            actor: req.actor.describe(),
        })
    }

    /// The `Authorization` header value of the remote form: the raw key, the
    /// client's reference to it, or nothing.
    pub fn authorization(&self) -> Option<String> {
        let token = match self.key.as_ref()? {
            KeyDelivery::Inline(raw) => raw.expose().to_string(),
            KeyDelivery::Reference => self.client.secret_reference(&self.name)?,
        };
        Some(format!("Bearer {token}"))
    }

    /// The `env` block the client's config must hold: the raw key, the client's
    /// reference, or nothing. Codex's and Goose's references are lists of names
    /// (`env_vars`, `env_keys`), not env values.
    pub fn env(&self) -> BTreeMap<String, String> {
        let value = match &self.key {
            None => return BTreeMap::new(),
            Some(KeyDelivery::Inline(raw)) => raw.expose().to_string(),
            Some(KeyDelivery::Reference) if self.client.spec().shape.forward.is_some() => {
                return BTreeMap::new();
            }
            Some(KeyDelivery::Reference) => self
                .client
                .secret_reference(&self.name)
                .expect("checked in from_request"),
        };
        BTreeMap::from([(API_KEY_ENV.to_string(), value)])
    }

    pub fn inline_key(&self) -> Option<&str> {
        match &self.key {
            Some(KeyDelivery::Inline(raw)) => Some(raw.expose()),
            _ => None,
        }
    }

    pub fn by_reference(&self) -> bool {
        matches!(self.key, Some(KeyDelivery::Reference))
    }

    /// The sentence every snippet ends with, so the person knows who the AI is.
    pub fn runs_as(&self) -> String {
        match &self.url {
            Some(url) => format!("The server at {url} answers as {}.", self.actor),
            None => format!("The server runs as {}.", self.actor),
        }
    }

    pub fn snippet(
        &self,
        format: Format,
        locations: Vec<Location>,
        text: String,
        what: &str,
    ) -> Snippet {
        let mut instructions = format!("{what} {}", self.runs_as());
        if self.inline_key().is_some() {
            instructions.push_str(
                " This text contains the API key in clear: keep the file private and never \
                 commit it",
            );
            let can_reference = if self.url.is_some() {
                remote_reference(self.client)
            } else {
                self.client.supports_secret_ref()
            };
            instructions.push_str(if can_reference {
                ", or regenerate with --secret-ref."
            } else if self.client == Client::ClaudeDesktop {
                "; Claude Desktop cannot reference a secret from this file, but `gatehouse config \
                 mcpb` builds an extension whose key it keeps in the OS keychain."
            } else {
                "; this client has no way to reference a secret from its config."
            });
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
pub(super) struct StdioEntry<'a> {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    pub command: &'a str,
    pub args: &'a [String],
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

impl<'a> StdioEntry<'a> {
    pub fn new(spec: &'a ServerSpec, kind: Option<&'static str>) -> Self {
        Self {
            kind,
            command: &spec.command,
            args: &spec.args,
            env: spec.env(),
        }
    }
}

/// `{"<top>": {"<name>": entry}}`: the file shape most JSON clients share.
pub(super) fn servers_file(top: &str, name: &str, entry: impl Serialize) -> Result<String> {
    let file = BTreeMap::from([(top, BTreeMap::from([(name, entry)]))]);
    to_json(&file)
}

/// The sentence for clients whose `${env:...}` is read from their own process
/// environment, which an app started from a desktop launcher may not have.
pub(super) fn env_reference_note(client: &str) -> String {
    format!(
        " {client} resolves ${{env:{API_KEY_ENV}}} from its own environment: start it from a \
         shell where {API_KEY_ENV} is exported."
    )
}

pub(super) fn project(path: &str) -> Location {
    Location {
        scope: "project",
        os: None,
        path: path.to_string(),
    }
}

pub(super) fn user(path: &str) -> Location {
    Location {
        scope: "user",
        os: None,
        path: path.to_string(),
    }
}

pub(super) fn local(path: &str) -> Location {
    Location {
        scope: "local",
        os: None,
        path: path.to_string(),
    }
}

pub(super) fn user_os(os: &'static str, path: &str) -> Location {
    Location {
        scope: "user",
        os: Some(os),
        path: path.to_string(),
    }
}

pub(super) fn to_json(value: &impl Serialize) -> Result<String> {
    serde_json::to_string_pretty(value)
        .map(|s| s + "\n")
        .map_err(|e| internal(format!("JSON rendering failed: {e}")))
}

/// Quotes one word for a POSIX shell: bare when it is plainly safe, otherwise in
/// single quotes (inside which nothing is special but `'` itself).
pub(super) fn sh_quote(word: &str) -> String {
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

pub(super) fn internal(message: String) -> Error {
    Error::new(codes::CONFIG_VALIDATION_FAILED, message)
        .hint("this is a bug in Gatehouse; please report it with the command you ran")
}

// Input checks

pub(super) fn check_server_name(name: &str) -> Result<()> {
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

pub(super) fn absolute_utf8(path: &Path, what: &str) -> Result<String> {
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

/// Whether `client` can carry a referenced key in its remote form.
pub(super) fn remote_reference(client: Client) -> bool {
    client
        .spec()
        .remote_shape()
        .is_some_and(|s| s.header_ref || s.bearer_env.is_some())
}

/// A `gatehouse serve` endpoint a config may name: `https`, or `http` to a
/// loopback address only (anything else would send the key in clear), with
/// no user info, no fragment and no key anywhere in it (the server refuses a
/// key in the query string, and a URL lands in logs).
/// `text` with every `%XX` decoded (bytes that do not make UTF-8 shown as
/// U+FFFD), for finding what a URL says whichever way it is spelt.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(super) fn check_url(text: &str) -> Result<String> {
    let bad = |why: &str| {
        Error::invalid(
            codes::CONFIG_URL_INVALID,
            format!("the server URL {:?} {why}", keys_masked(text)),
            "give the endpoint of `gatehouse serve`, e.g. https://gatehouse.example.org/mcp \
             (http only to 127.0.0.1, ::1 or localhost)",
        )
    };
    // Percent-decoded too: `gatehouse%5Fsk%5F…` is the same key to a server.
    if text.contains("gatehouse_sk_") || percent_decoded(text).contains("gatehouse_sk_") {
        // Not echoed: masking finds a key only as it is spelt.
        return Err(Error::invalid(
            codes::CONFIG_URL_INVALID,
            "the server URL carries an API key; the key goes in a header, never in the URL",
            "give the endpoint of `gatehouse serve` without the key, e.g. https://gatehouse.example.org/mcp",
        ));
    }
    let url = url::Url::parse(text.trim()).map_err(|e| bad(&format!("does not parse ({e})")))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return Err(bad("has no host")),
    };
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        "http" => {
            return Err(bad(
                "is plain http to another machine, which would send the key in clear",
            ));
        }
        _ => return Err(bad("is not an http(s) URL")),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("carries user info"));
    }
    if url.fragment().is_some() {
        return Err(bad("has a fragment"));
    }
    Ok(url.to_string())
}

fn keys_masked(text: &str) -> String {
    super::merge::mask_keys(text)
}

pub(super) fn check_key(key: &RawKey) -> Result<()> {
    // Refusing a malformed key here beats a config whose server refuses later;
    // `parse` also guarantees the key is plain ASCII alphanumerics and `_`, which
    // no config format or client `${...}` expansion can misread.
    keys::parse(key.expose())
        .map(|_| ())
        .map_err(|_| keys::Refusal::Malformed.error(None))
}
