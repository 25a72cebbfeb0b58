//! `[serve]` in `gatehouse.toml`: the settings of `gatehouse serve` kept with
//! the site, and the one set of rules every source of them passes (a flag,
//! this table, the desktop's Serve form).
//!
//! Map: [`Key`] names each setting (its key here and its flag);
//! [`ServeTable`] is what one source gives, each value checked as it is set
//! ([`ServeTable::set`]); [`ServeTable::over`] lays the flags over the table
//! (a flag given wins, also when it gives nothing: `--allow-host=` empties
//! the list); [`ServeTable::resolve`] fills in the defaults and checks what
//! needs the whole (TLS files in pairs, the exposure) into a
//! [`ServeConfig`]; [`ServeTable::from_toml`] reads the table with errors that
//! name the key; [`save`] writes it back with `toml_edit`, touching only the
//! keys whose value changed, through a temporary file renamed over the old
//! one, so comments and other tables stay and a reader never sees half a file.
//!
//! No secret is kept here: a value shaped like one (a token, a private key, a
//! URL with a password) is refused before any message could echo it. Keys are
//! presented by each client per request, and the TLS key stays in its own
//! file, named by its path.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::access::oauth::flow::Issuer;
use crate::error::{Error, Result, codes};
use crate::site::SITE_FILE;
use crate::site::config::secret_shaped;

/// Where serve listens when neither a flag nor the table says.
pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 8808);
/// The longest drain accepted (a day): a bound, not a wish to wait that long.
const MAX_DRAIN_SECONDS: u64 = 86_400;

/// One setting of `gatehouse serve`: its key in `[serve]` and its flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Listen,
    AllowHosts,
    AllowOrigins,
    PublicUrl,
    TlsCert,
    TlsKey,
    BehindProxy,
    RequireKey,
    OauthDocumentHosts,
    RatePerKey,
    MaxBodyBytes,
    MaxInFlight,
    DrainSeconds,
    MetricsListen,
    LogFormat,
}

impl Key {
    pub const ALL: [Key; 15] = [
        Key::Listen,
        Key::AllowHosts,
        Key::AllowOrigins,
        Key::PublicUrl,
        Key::TlsCert,
        Key::TlsKey,
        Key::BehindProxy,
        Key::RequireKey,
        Key::OauthDocumentHosts,
        Key::RatePerKey,
        Key::MaxBodyBytes,
        Key::MaxInFlight,
        Key::DrainSeconds,
        Key::MetricsListen,
        Key::LogFormat,
    ];

    /// The key in `[serve]`.
    pub fn name(self) -> &'static str {
        match self {
            Key::Listen => "listen",
            Key::AllowHosts => "allow_hosts",
            Key::AllowOrigins => "allow_origins",
            Key::PublicUrl => "public_url",
            Key::TlsCert => "tls_cert",
            Key::TlsKey => "tls_key",
            Key::BehindProxy => "behind_proxy",
            Key::RequireKey => "require_key",
            Key::OauthDocumentHosts => "oauth_document_hosts",
            Key::RatePerKey => "rate_per_key",
            Key::MaxBodyBytes => "max_body_bytes",
            Key::MaxInFlight => "max_in_flight",
            Key::DrainSeconds => "drain_seconds",
            Key::MetricsListen => "metrics_listen",
            Key::LogFormat => "log_format",
        }
    }

    /// The flag of `gatehouse serve` that sets the same.
    pub fn flag(self) -> &'static str {
        match self {
            Key::Listen => "--listen",
            Key::AllowHosts => "--allow-host",
            Key::AllowOrigins => "--allow-origin",
            Key::PublicUrl => "--public-url",
            Key::TlsCert => "--tls-cert",
            Key::TlsKey => "--tls-key",
            Key::BehindProxy => "--behind-proxy",
            Key::RequireKey => "--require-key",
            Key::OauthDocumentHosts => "--oauth-document-host",
            Key::RatePerKey => "--rate",
            Key::MaxBodyBytes => "--max-body",
            Key::MaxInFlight => "--max-in-flight",
            Key::DrainSeconds => "--drain",
            Key::MetricsListen => "--metrics-listen",
            Key::LogFormat => "--log-format",
        }
    }

    fn named(name: &str) -> Option<Key> {
        Key::ALL.into_iter().find(|k| k.name() == name)
    }

    /// What the key takes, as a type error says it.
    fn shape(self) -> &'static str {
        match self {
            Key::Listen | Key::MetricsListen => {
                "a string: an address and port, such as \"127.0.0.1:8808\""
            }
            Key::AllowHosts | Key::OauthDocumentHosts => {
                "a list of host names, such as [\"gatehouse.example.org\"]"
            }
            Key::AllowOrigins => "a list of origins, such as [\"https://app.example.org\"]",
            Key::PublicUrl => "a string: an https origin, such as \"https://mcp.example.org\"",
            Key::TlsCert | Key::TlsKey => "a string: the absolute path of a PEM file",
            Key::BehindProxy => "a list of IP addresses, such as [\"127.0.0.1\"]",
            Key::RequireKey => "true or false",
            Key::RatePerKey => "a number of requests per second, such as 100",
            Key::MaxBodyBytes => "a whole number of bytes",
            Key::MaxInFlight => "a whole number of requests",
            Key::DrainSeconds => "a whole number of seconds",
            Key::LogFormat => "\"text\" or \"json\"",
        }
    }
}

/// A value as its source gives it, before it is checked.
#[derive(Debug, Clone, Copy)]
pub enum Raw<'a> {
    Text(&'a str),
    List(&'a [String]),
    Bool(bool),
    Int(i64),
    Number(f64),
}

/// How serve writes its log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

impl LogFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }
}

/// What one source (the flags, `[serve]`, the desktop's form) sets; `None`
/// where it says nothing. A value inside is checked and normalised. For a
/// setting whose default is "none" (`public_url`, the TLS files,
/// `metrics_listen`), `Some(None)` is "given as nothing", which still wins
/// over the table below it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServeTable {
    pub listen: Option<SocketAddr>,
    pub allow_hosts: Option<Vec<String>>,
    pub allow_origins: Option<Vec<String>>,
    /// The issuer, as [`Issuer::new`] normalises it.
    pub public_url: Option<Option<String>>,
    pub tls_cert: Option<Option<PathBuf>>,
    pub tls_key: Option<Option<PathBuf>>,
    pub behind_proxy: Option<Vec<IpAddr>>,
    pub require_key: Option<bool>,
    pub oauth_document_hosts: Option<Vec<String>>,
    pub rate_per_key: Option<f64>,
    pub max_body_bytes: Option<u64>,
    pub max_in_flight: Option<u64>,
    pub drain_seconds: Option<u64>,
    pub metrics_listen: Option<Option<SocketAddr>>,
    pub log_format: Option<LogFormat>,
}

// `rate_per_key` is finite whenever set (NaN is refused), so equality is total.
impl Eq for ServeTable {}

/// The TLS files serve loads (and reloads on SIGHUP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsPaths {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Serve's settings once every source is laid over the defaults, and the
/// checks of the whole have passed.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub hosts: Vec<String>,
    pub origins: Vec<String>,
    pub oauth: Option<Issuer>,
    pub tls: Option<TlsPaths>,
    pub behind_proxy: Vec<IpAddr>,
    pub require_key: bool,
    pub oauth_document_hosts: Vec<String>,
    /// `None`: serve's own default.
    pub rate_per_key: Option<f64>,
    pub max_body_bytes: Option<usize>,
    pub max_in_flight: Option<usize>,
    pub drain: Option<Duration>,
    pub metrics_listen: Option<SocketAddr>,
    pub log_format: LogFormat,
}

impl ServeTable {
    /// Checks `raw` as `key`'s value and sets it. The error is about the
    /// value alone (`INPUT_INVALID`, or `SERVE_SETTING_SECRET`); its caller
    /// says where the value came from.
    pub fn set(&mut self, key: Key, raw: Raw<'_>) -> Result<()> {
        refuse_secret(key, raw)?;
        match key {
            Key::Listen => self.listen = Some(address(text(key, raw)?)?),
            Key::MetricsListen => {
                self.metrics_listen = Some(optional(text(key, raw)?).map(address).transpose()?)
            }
            Key::AllowHosts => self.allow_hosts = Some(checked(list(key, raw)?, check_host)?),
            Key::OauthDocumentHosts => {
                self.oauth_document_hosts = Some(checked(list(key, raw)?, check_host)?)
            }
            Key::AllowOrigins => self.allow_origins = Some(checked(list(key, raw)?, check_origin)?),
            Key::BehindProxy => self.behind_proxy = Some(checked(list(key, raw)?, check_proxy)?),
            Key::PublicUrl => {
                self.public_url = Some(
                    optional(text(key, raw)?)
                        .map(|url| Issuer::new(url).map(|i| i.issuer))
                        .transpose()?,
                )
            }
            Key::TlsCert => {
                self.tls_cert = Some(optional(text(key, raw)?).map(tls_path).transpose()?)
            }
            Key::TlsKey => {
                self.tls_key = Some(optional(text(key, raw)?).map(tls_path).transpose()?)
            }
            Key::RequireKey => match raw {
                Raw::Bool(b) => self.require_key = Some(b),
                _ => return Err(wrong_type(key)),
            },
            Key::RatePerKey => {
                let rate = match raw {
                    Raw::Number(n) => n,
                    Raw::Int(n) => n as f64,
                    _ => return Err(wrong_type(key)),
                };
                if !(rate.is_finite() && rate > 0.0) {
                    return Err(Error::invalid(
                        codes::INPUT_INVALID,
                        format!("the request rate must be a positive number, not {rate}"),
                        "give the requests per second each key (or keyless address) may make, such as 100",
                    ));
                }
                self.rate_per_key = Some(rate);
            }
            Key::MaxBodyBytes => self.max_body_bytes = Some(whole(key, raw, 1, usize::MAX as u64)?),
            Key::MaxInFlight => self.max_in_flight = Some(whole(key, raw, 1, usize::MAX as u64)?),
            Key::DrainSeconds => self.drain_seconds = Some(whole(key, raw, 0, MAX_DRAIN_SECONDS)?),
            Key::LogFormat => {
                self.log_format = Some(match text(key, raw)? {
                    "text" => LogFormat::Text,
                    "json" => LogFormat::Json,
                    other => {
                        return Err(Error::invalid(
                            codes::INPUT_INVALID,
                            format!("{other:?} is not a log format"),
                            "give text or json",
                        ));
                    }
                })
            }
        }
        Ok(())
    }

    /// `self` (the flags) over `below` (the table): each setting `self`
    /// gives wins. The TLS files go as a pair, so a certificate never meets
    /// another source's key.
    pub fn over(self, below: &ServeTable) -> ServeTable {
        let tls_given = self.tls_cert.is_some() || self.tls_key.is_some();
        let (tls_cert, tls_key) = if tls_given {
            (self.tls_cert, self.tls_key)
        } else {
            (below.tls_cert.clone(), below.tls_key.clone())
        };
        ServeTable {
            listen: self.listen.or(below.listen),
            allow_hosts: self.allow_hosts.or_else(|| below.allow_hosts.clone()),
            allow_origins: self.allow_origins.or_else(|| below.allow_origins.clone()),
            public_url: self.public_url.or_else(|| below.public_url.clone()),
            tls_cert,
            tls_key,
            behind_proxy: self.behind_proxy.or_else(|| below.behind_proxy.clone()),
            require_key: self.require_key.or(below.require_key),
            oauth_document_hosts: self
                .oauth_document_hosts
                .or_else(|| below.oauth_document_hosts.clone()),
            rate_per_key: self.rate_per_key.or(below.rate_per_key),
            max_body_bytes: self.max_body_bytes.or(below.max_body_bytes),
            max_in_flight: self.max_in_flight.or(below.max_in_flight),
            drain_seconds: self.drain_seconds.or(below.drain_seconds),
            metrics_listen: self.metrics_listen.or(below.metrics_listen),
            log_format: self.log_format.or(below.log_format),
        }
    }

    /// The settings serve runs with: the defaults filled in, then what only
    /// the whole can say: TLS needs both files, OAuth document hosts need
    /// OAuth, and beyond loopback TLS or a proxy in front ([`check_exposure`]).
    pub fn resolve(&self) -> Result<ServeConfig> {
        let listen = self.listen.unwrap_or(DEFAULT_LISTEN);
        let tls = match (
            self.tls_cert.clone().flatten(),
            self.tls_key.clone().flatten(),
        ) {
            (Some(cert), Some(key)) => Some(TlsPaths { cert, key }),
            (None, None) => None,
            _ => return Err(tls_unpaired()),
        };
        let oauth = self
            .public_url
            .clone()
            .flatten()
            .map(|url| Issuer::new(&url))
            .transpose()?;
        let behind_proxy = self.behind_proxy.clone().unwrap_or_default();
        let oauth_document_hosts = self.oauth_document_hosts.clone().unwrap_or_default();
        if !oauth_document_hosts.is_empty() && oauth.is_none() {
            return Err(Error::invalid(
                codes::INPUT_INVALID,
                "OAuth document hosts (--oauth-document-host, oauth_document_hosts) are given without OAuth",
                "give the public URL too (--public-url, or public_url in [serve]), or leave the document hosts out",
            ));
        }
        check_exposure(listen, tls.is_some(), !behind_proxy.is_empty())?;
        Ok(ServeConfig {
            listen,
            hosts: self.allow_hosts.clone().unwrap_or_default(),
            origins: self.allow_origins.clone().unwrap_or_default(),
            oauth,
            tls,
            behind_proxy,
            require_key: self.require_key.unwrap_or(false),
            oauth_document_hosts,
            rate_per_key: self.rate_per_key,
            // Bounded to usize::MAX when set.
            max_body_bytes: self.max_body_bytes.map(|n| n as usize),
            max_in_flight: self.max_in_flight.map(|n| n as usize),
            drain: self.drain_seconds.map(Duration::from_secs),
            metrics_listen: self.metrics_listen.flatten(),
            log_format: self.log_format.unwrap_or_default(),
        })
    }

    /// Reads `[serve]` (`value`) of the file at `path`. An unknown key, a
    /// value of the wrong type or one the flag's own rule refuses is
    /// `SITE_CONFIG_INVALID` naming the key; a secret-shaped value is
    /// `SERVE_SETTING_SECRET` and is never echoed.
    pub fn from_toml(value: &toml::Value, path: &Path) -> Result<ServeTable> {
        let at = |key: &str, message: String, hint: String| {
            Error::invalid(
                codes::SITE_CONFIG_INVALID,
                format!("{} is not valid: [serve] {key}: {message}", path.display()),
                hint,
            )
        };
        let toml::Value::Table(table) = value else {
            return Err(Error::invalid(
                codes::SITE_CONFIG_INVALID,
                format!("{} is not valid: serve is not a table", path.display()),
                format!(
                    "write the settings under a [serve] heading: {}",
                    keys_list()
                ),
            ));
        };
        let mut out = ServeTable::default();
        for (name, value) in table {
            let Some(key) = Key::named(name) else {
                // A key shaped like a secret (a token pasted as a name) is not echoed.
                let shown = if secret_shaped(name) {
                    "(a key)"
                } else {
                    name.as_str()
                };
                return Err(at(
                    shown,
                    "no such setting of gatehouse serve".into(),
                    format!(
                        "remove or rename {shown}: [serve] holds {}, each the serve flag of the same meaning (see gatehouse serve --help)",
                        keys_list()
                    ),
                ));
            };
            let strings;
            let raw = match value {
                toml::Value::String(s) => Raw::Text(s),
                toml::Value::Boolean(b) => Raw::Bool(*b),
                toml::Value::Integer(i) => Raw::Int(*i),
                toml::Value::Float(f) => Raw::Number(*f),
                toml::Value::Array(items) => {
                    strings = items
                        .iter()
                        .map(|v| v.as_str().map(str::to_owned))
                        .collect::<Option<Vec<String>>>()
                        .ok_or_else(|| type_error(path, key))?;
                    Raw::List(&strings)
                }
                _ => return Err(type_error(path, key)),
            };
            out.set(key, raw).map_err(|e| in_file(path, key, e))?;
        }
        let given = |v: &Option<Option<PathBuf>>| v.clone().flatten().is_some();
        if given(&out.tls_cert) != given(&out.tls_key) {
            let e = tls_unpaired();
            return Err(at(
                "tls_cert, tls_key",
                e.message,
                e.hint.unwrap_or_default(),
            ));
        }
        Ok(out)
    }

    /// The value `key` has here, as `[serve]` writes it; `None` when unset
    /// or set to nothing.
    fn toml_value(&self, key: Key) -> Option<toml_edit::Value> {
        fn strings<T: ToString>(list: &Option<Vec<T>>) -> Option<toml_edit::Value> {
            let list = list.as_ref().filter(|l| !l.is_empty())?;
            Some(toml_edit::Value::Array(
                list.iter().map(|s| s.to_string()).collect(),
            ))
        }
        let path = |p: &Option<Option<PathBuf>>| {
            p.clone()
                .flatten()
                .map(|p| toml_edit::Value::from(p.to_string_lossy().into_owned()))
        };
        let int = |n: Option<u64>| {
            n.map(|n| toml_edit::Value::from(i64::try_from(n).unwrap_or(i64::MAX)))
        };
        match key {
            Key::Listen => self.listen.map(|a| a.to_string().into()),
            Key::AllowHosts => strings(&self.allow_hosts),
            Key::AllowOrigins => strings(&self.allow_origins),
            Key::PublicUrl => self.public_url.clone().flatten().map(Into::into),
            Key::TlsCert => path(&self.tls_cert),
            Key::TlsKey => path(&self.tls_key),
            Key::BehindProxy => strings(&self.behind_proxy),
            Key::RequireKey => self.require_key.map(Into::into),
            Key::OauthDocumentHosts => strings(&self.oauth_document_hosts),
            Key::RatePerKey => self.rate_per_key.map(|r| {
                if r.fract() == 0.0 && r.abs() < 1e15 {
                    toml_edit::Value::from(r as i64)
                } else {
                    toml_edit::Value::from(r)
                }
            }),
            Key::MaxBodyBytes => int(self.max_body_bytes),
            Key::MaxInFlight => int(self.max_in_flight),
            Key::DrainSeconds => int(self.drain_seconds),
            Key::MetricsListen => self.metrics_listen.flatten().map(|a| a.to_string().into()),
            Key::LogFormat => self.log_format.map(|f| f.as_str().into()),
        }
    }
}

fn keys_list() -> String {
    Key::ALL.map(Key::name).join(", ")
}

/// A value from the file, refused: the same cause as for the flag, said
/// with the key it stands under.
fn in_file(path: &Path, key: Key, e: Error) -> Error {
    let code = if e.code == codes::SERVE_SETTING_SECRET {
        e.code
    } else {
        codes::SITE_CONFIG_INVALID
    };
    let hint = match &e.hint {
        Some(h) => format!(
            "{h} (key {} under [serve] in {SITE_FILE}, or the flag {})",
            key.name(),
            key.flag()
        ),
        None => format!("fix {} under [serve] in {SITE_FILE}", key.name()),
    };
    Error::invalid(
        code,
        format!(
            "{} is not valid: [serve] {}: {}",
            path.display(),
            key.name(),
            e.message
        ),
        hint,
    )
}

fn type_error(path: &Path, key: Key) -> Error {
    Error::invalid(
        codes::SITE_CONFIG_INVALID,
        format!(
            "{} is not valid: [serve] {} must be {}",
            path.display(),
            key.name(),
            key.shape()
        ),
        format!("write {} = {}", key.name(), example(key)),
    )
}

fn example(key: Key) -> &'static str {
    match key {
        Key::Listen => "\"127.0.0.1:8808\"",
        Key::MetricsListen => "\"127.0.0.1:9808\"",
        Key::AllowHosts => "[\"gatehouse.example.org\"]",
        Key::OauthDocumentHosts => "[\"intranet.example.org\"]",
        Key::AllowOrigins => "[\"https://app.example.org\"]",
        Key::PublicUrl => "\"https://mcp.example.org\"",
        Key::TlsCert => "\"/etc/gatehouse/cert.pem\"",
        Key::TlsKey => "\"/etc/gatehouse/key.pem\"",
        Key::BehindProxy => "[\"127.0.0.1\"]",
        Key::RequireKey => "true",
        Key::RatePerKey => "100",
        Key::MaxBodyBytes => "4194304",
        Key::MaxInFlight => "256",
        Key::DrainSeconds => "10",
        Key::LogFormat => "\"json\"",
    }
}

fn wrong_type(key: Key) -> Error {
    Error::invalid(
        codes::INPUT_INVALID,
        format!("must be {}", key.shape()),
        format!("for example {}", example(key)),
    )
}

fn text<'a>(key: Key, raw: Raw<'a>) -> Result<&'a str> {
    match raw {
        Raw::Text(s) => Ok(s.trim()),
        _ => Err(wrong_type(key)),
    }
}

/// Empty text is "nothing" (a flag given as `--public-url=`).
fn optional(text: &str) -> Option<&str> {
    Some(text).filter(|t| !t.is_empty())
}

fn list<'a>(key: Key, raw: Raw<'a>) -> Result<impl Iterator<Item = &'a str>> {
    match raw {
        Raw::List(l) => Ok(l.iter().map(|s| s.trim()).filter(|s| !s.is_empty())),
        _ => Err(wrong_type(key)),
    }
}

fn checked<'a, T: Clone + Eq + std::hash::Hash>(
    items: impl Iterator<Item = &'a str>,
    check: fn(&str) -> Result<T>,
) -> Result<Vec<T>> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for item in items {
        let v = check(item)?;
        if seen.insert(v.clone()) {
            out.push(v);
        }
    }
    Ok(out)
}

fn whole(key: Key, raw: Raw<'_>, min: u64, max: u64) -> Result<u64> {
    let Raw::Int(n) = raw else {
        return Err(wrong_type(key));
    };
    match u64::try_from(n) {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(Error::invalid(
            codes::INPUT_INVALID,
            format!("{n} is out of range"),
            format!("give {} from {min} to {max}", key.shape()),
        )),
    }
}

/// Refuses a value shaped like a secret, without echoing it. Paths are
/// judged part by part (a long folder name is not a token), host names in
/// lower case (as they are kept).
fn refuse_secret(key: Key, raw: Raw<'_>) -> Result<()> {
    let looks = |value: &str| match key {
        Key::TlsCert | Key::TlsKey => {
            value.contains("-----BEGIN")
                || secret_shaped(value) && value.split(['/', '\\']).any(secret_shaped)
        }
        Key::AllowHosts | Key::AllowOrigins | Key::OauthDocumentHosts => {
            secret_shaped(&value.to_ascii_lowercase())
        }
        _ => secret_shaped(value),
    };
    let secret = match raw {
        Raw::Text(s) => looks(s),
        Raw::List(l) => l.iter().any(|s| looks(s)),
        _ => false,
    };
    if !secret {
        return Ok(());
    }
    let hint = match key {
        Key::TlsCert | Key::TlsKey => "give the absolute path of the PEM file, never its contents",
        _ => {
            "serve's settings are kept in clear text and hold no secret: clients present their keys per request"
        }
    };
    Err(Error::invalid(
        codes::SERVE_SETTING_SECRET,
        "the value looks like a secret (a token, a private key or a URL with a password) and is not kept",
        hint,
    ))
}

fn address(text: &str) -> Result<SocketAddr> {
    text.parse().map_err(|_| {
        Error::invalid(
            codes::INPUT_INVALID,
            format!("{text:?} is not an address and port"),
            "give an address and a port, such as 127.0.0.1:8808",
        )
    })
}

/// A TLS file: an absolute path (serve runs in the site's folder, so a
/// relative path would name another file there; the CLI makes a flag's
/// path absolute against the current directory first).
fn tls_path(text: &str) -> Result<PathBuf> {
    if !Path::new(text).is_absolute() {
        return Err(Error::invalid(
            codes::INPUT_INVALID,
            format!("{text:?} is not an absolute path"),
            "give both the certificate chain and its private key as absolute paths to PEM files, or neither",
        ));
    }
    Ok(PathBuf::from(text))
}

fn tls_unpaired() -> Error {
    Error::invalid(
        codes::INPUT_INVALID,
        "TLS needs both a certificate and a key",
        "give both the certificate chain and its private key as absolute paths to PEM files, or neither (--tls-cert and --tls-key, or tls_cert and tls_key in [serve])",
    )
}

/// A proxy's address, as `--behind-proxy` takes it.
pub fn check_proxy(proxy: &str) -> Result<IpAddr> {
    proxy.parse().map_err(|_| {
        Error::invalid(
            codes::INPUT_INVALID,
            format!("{proxy:?} is not an IP address"),
            "give the address the TLS-terminating proxy connects from, such as 127.0.0.1 (no port, no name)",
        )
    })
}

/// A `Host` value: `name` or `name:port`, nothing else (no scheme, path or
/// space, and never a leading `-` that argv could read as a flag).
pub fn check_host(host: &str) -> Result<String> {
    let ok = !host.starts_with('-')
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    if !ok {
        return Err(Error::invalid(
            codes::INPUT_INVALID,
            format!("{host:?} is not a host name"),
            "give the name clients use, such as gatehouse.example.org or gatehouse.example.org:8808 (no scheme, no path)",
        ));
    }
    Ok(host.to_ascii_lowercase())
}

/// A browser origin, as `scheme://host[:port]`.
pub fn check_origin(origin: &str) -> Result<String> {
    let bad = || {
        Error::invalid(
            codes::INPUT_INVALID,
            format!("{origin:?} is not an origin"),
            "give scheme, host and optional port, such as https://app.example.org",
        )
    };
    let url = url::Url::parse(origin).map_err(|_| bad())?;
    let bare = url.path() == "/" && url.query().is_none() && url.fragment().is_none();
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() || !bare {
        return Err(bad());
    }
    Ok(url.origin().ascii_serialization())
}

/// Refuses to listen beyond loopback without TLS or a trusted proxy in front:
/// keys would cross the network in clear text.
pub fn check_exposure(listen: SocketAddr, tls: bool, proxied: bool) -> Result<()> {
    if listen.ip().is_loopback() || tls || proxied {
        return Ok(());
    }
    Err(Error::new(
        codes::LISTEN_UNSAFE,
        format!(
            "refusing to listen on {listen} without TLS: keys would cross the network in clear text"
        ),
    )
    .hint("give --tls-cert and --tls-key, or --behind-proxy ADDR for the TLS-terminating proxy in front, or listen on 127.0.0.1 (in gatehouse.toml: tls_cert and tls_key, behind_proxy or listen under [serve])"))
}

/// `[serve]` of `dir`'s gatehouse.toml, checked by serve's rules (empty when
/// there is none). Read apart from the rest of the site: a bad value here
/// stops only what serves (`gatehouse serve`, the Serve panel).
pub fn read(dir: &Path) -> Result<ServeTable> {
    parse(&super::read_site_text(dir)?, &dir.join(SITE_FILE))
}

/// `[serve]` of the gatehouse.toml text found at `path`, once the whole file
/// is valid.
fn parse(text: &str, path: &Path) -> Result<ServeTable> {
    match super::parse_site_parts(text, path)?.1 {
        Some(v) => ServeTable::from_toml(&v, path),
        None => Ok(ServeTable::default()),
    }
}

/// Writes serve's settings into `[serve]` of the site's `gatehouse.toml`:
/// `edit` changes the table as it is on disk now, the result is checked as
/// serve would check it alone (a table that would listen in clear text
/// beyond loopback is refused), and only keys whose value changed are
/// written (a key set to nothing is removed). Comments, the other tables
/// and untouched keys stay byte for byte. The new text is read back and
/// must give the table written, then it replaces the file atomically.
/// Returns the table as read back (an empty list reads as unset).
pub fn save(dir: &Path, edit: impl FnOnce(&mut ServeTable)) -> Result<ServeTable> {
    let path = dir.join(SITE_FILE);
    let old_text = super::read_site_text(dir)?;
    let old = parse(&old_text, &path)?;
    let mut new = old.clone();
    edit(&mut new);
    new.resolve()?;
    let mut doc: toml_edit::DocumentMut = old_text.parse().map_err(|e: toml_edit::TomlError| {
        Error::invalid(
            codes::SITE_CONFIG_INVALID,
            format!("{} is not valid: {}", path.display(), e.message()),
            "fix the file by hand, then save again",
        )
    })?;
    let table = doc
        .entry("serve")
        .or_insert_with(toml_edit::table)
        .as_table_like_mut()
        .ok_or_else(|| {
            Error::invalid(
                codes::SITE_CONFIG_INVALID,
                format!("{} is not valid: serve is not a table", path.display()),
                "write the settings under a [serve] heading",
            )
        })?;
    for key in Key::ALL {
        let (was, now) = (old.toml_value(key), new.toml_value(key));
        let same = match (&was, &now) {
            (Some(a), Some(b)) => a.to_string() == b.to_string(),
            (None, None) => true,
            _ => false,
        };
        if same {
            continue;
        }
        match now {
            None => {
                table.remove(key.name());
            }
            Some(mut value) => match table.get_mut(key.name()) {
                // Replaced in place: the comment above the key and the one
                // after the old value stay.
                Some(item) => {
                    if let Some(old) = item.as_value() {
                        *value.decor_mut() = old.decor().clone();
                    }
                    *item = toml_edit::Item::Value(value);
                }
                None => {
                    table.insert(key.name(), toml_edit::Item::Value(value));
                }
            },
        }
    }
    let text = doc.to_string();
    if text == old_text {
        return Ok(old);
    }
    let written = parse(&text, &path)?;
    if written.resolve().is_err() || !same_settings(&written, &new) {
        return Err(Error::new(
            codes::IO_ERROR,
            format!(
                "the edit of {} did not read back as written; the file is unchanged",
                path.display()
            ),
        ));
    }
    write_atomically(&path, text.as_bytes())?;
    Ok(written)
}

/// Whether two tables say the same (nothing and "given as nothing" alike).
fn same_settings(a: &ServeTable, b: &ServeTable) -> bool {
    Key::ALL
        .into_iter()
        .all(|k| a.toml_value(k).map(|v| v.to_string()) == b.toml_value(k).map(|v| v.to_string()))
}

/// Writes `bytes` to a fresh file beside `path`, flushes it, gives it the
/// old file's permissions and renames it over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let tmp = path.with_file_name(format!(
        ".{SITE_FILE}.{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| -> std::io::Result<()> {
        let mut file = std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::invalid(
            codes::IO_ERROR,
            format!("cannot write {}: {e}", path.display()),
            "check that the site folder is writable; the file is unchanged",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `p` (written Unix-absolute) as an absolute path here: Windows, where
    /// these tests also run (under Wine), wants a drive in front.
    fn abs(p: &str) -> String {
        if cfg!(windows) {
            format!("C:{p}")
        } else {
            p.to_string()
        }
    }

    /// Reads `[serve]` of `text`, whose quoted absolute paths go through [`abs`].
    fn parse(text: &str) -> Result<ServeTable> {
        let text = text.replace("\"/", &format!("\"{}", abs("/")));
        let value: toml::Value = toml::from_str(&text).unwrap();
        let serve = value
            .get("serve")
            .cloned()
            .unwrap_or(toml::Value::Table(Default::default()));
        ServeTable::from_toml(&serve, Path::new("/srv/site/gatehouse.toml"))
    }

    /// The flags' table, as `gatehouse serve` builds it.
    fn flags(given: &[(Key, Raw<'_>)]) -> Result<ServeTable> {
        let mut t = ServeTable::default();
        for (key, raw) in given {
            t.set(*key, *raw)?;
        }
        Ok(t)
    }

    fn site(text: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SITE_FILE), text).unwrap();
        dir
    }

    fn file_text(dir: &tempfile::TempDir) -> String {
        std::fs::read_to_string(dir.path().join(SITE_FILE)).unwrap()
    }

    const FULL: &str = r#"
[serve]
listen = "0.0.0.0:8808"
allow_hosts = ["MCP.example.org", "mcp.example.org"]
allow_origins = ["https://App.example.org/"]
public_url = "https://mcp.example.org/"
tls_cert = "/etc/gatehouse/cert.pem"
tls_key = "/etc/gatehouse/key.pem"
behind_proxy = ["10.0.0.2"]
require_key = true
oauth_document_hosts = ["intranet.example.org:8443"]
rate_per_key = 2.5
max_body_bytes = 65536
max_in_flight = 32
drain_seconds = 30
metrics_listen = "127.0.0.1:9808"
log_format = "json"
"#;

    #[test]
    fn every_setting_of_serve_is_read_checked_and_normalised() {
        let t = parse(FULL).unwrap();
        assert_eq!(
            t.allow_hosts.as_deref(),
            Some(&["mcp.example.org".to_string()][..])
        );
        assert_eq!(
            t.allow_origins.as_deref(),
            Some(&["https://app.example.org".to_string()][..])
        );
        assert_eq!(t.public_url, Some(Some("https://mcp.example.org".into())));
        let c = t.resolve().unwrap();
        assert_eq!(c.listen.to_string(), "0.0.0.0:8808");
        assert_eq!(
            c.tls.unwrap().key,
            PathBuf::from(abs("/etc/gatehouse/key.pem"))
        );
        assert!(c.require_key);
        assert_eq!(c.rate_per_key, Some(2.5));
        assert_eq!(c.max_body_bytes, Some(65536));
        assert_eq!(c.max_in_flight, Some(32));
        assert_eq!(c.drain, Some(Duration::from_secs(30)));
        assert_eq!(c.metrics_listen.unwrap().to_string(), "127.0.0.1:9808");
        assert_eq!(c.log_format, LogFormat::Json);
        assert_eq!(c.oauth_document_hosts, ["intranet.example.org:8443"]);
        // Nothing said: serve's defaults.
        let none = parse("").unwrap().resolve().unwrap();
        assert_eq!(none.listen, DEFAULT_LISTEN);
        assert!(none.tls.is_none() && none.oauth.is_none() && !none.require_key);
        assert_eq!(none.rate_per_key, None);
    }

    /// Each refusal names the key and the cause, and its hint says what to
    /// write; nothing of the refused value is lost in a generic parse error.
    #[test]
    fn unknown_keys_and_bad_values_are_refused_naming_the_key() {
        let cases = [
            ("listenn = \"127.0.0.1:1\"", "listenn", "no such setting"),
            ("listen = 8808", "listen", "must be a string"),
            (
                "listen = \"localhost\"",
                "listen",
                "not an address and port",
            ),
            (
                "allow_hosts = \"x.example\"",
                "allow_hosts",
                "must be a list",
            ),
            (
                "allow_hosts = [\"evil.example/path\"]",
                "allow_hosts",
                "not a host name",
            ),
            (
                "allow_origins = [\"app.example.org\"]",
                "allow_origins",
                "not an origin",
            ),
            (
                "public_url = \"http://mcp.example.org\"",
                "public_url",
                "must be https",
            ),
            (
                "tls_cert = \"cert.pem\"\ntls_key = \"/k.pem\"",
                "tls_cert",
                "not an absolute path",
            ),
            (
                "tls_cert = \"/c.pem\"",
                "tls_cert, tls_key",
                "both a certificate and a key",
            ),
            (
                "behind_proxy = [\"10.0.0.1:443\"]",
                "behind_proxy",
                "not an IP address",
            ),
            ("require_key = \"yes\"", "require_key", "true or false"),
            ("rate_per_key = -1", "rate_per_key", "positive number"),
            ("rate_per_key = nan", "rate_per_key", "positive number"),
            ("max_body_bytes = 0", "max_body_bytes", "out of range"),
            ("max_in_flight = 1.5", "max_in_flight", "whole number"),
            ("drain_seconds = 100000", "drain_seconds", "out of range"),
            (
                "metrics_listen = \"9808\"",
                "metrics_listen",
                "not an address and port",
            ),
            ("log_format = \"xml\"", "log_format", "not a log format"),
        ];
        for (body, key, cause) in cases {
            let e = parse(&format!("[serve]\n{body}\n")).unwrap_err();
            assert_eq!(e.code, codes::SITE_CONFIG_INVALID, "{body}");
            assert!(
                e.message.contains(&format!("[serve] {key}")),
                "{body}: {}",
                e.message
            );
            assert!(e.message.contains(cause), "{body}: {}", e.message);
            let hint = e.hint.unwrap_or_default();
            assert!(
                hint.contains(key.split(',').next().unwrap()),
                "{body}: {hint}"
            );
        }
    }

    /// A secret pasted into `[serve]` (a key file's contents, a token, a URL
    /// with a password) is refused with its own code and never echoed.
    #[test]
    fn a_secret_looking_value_is_refused_and_never_echoed() {
        let pem = "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----";
        let token = "ghp_Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVb";
        let cases = [
            format!("tls_key = \"{pem}\"\ntls_cert = \"/c.pem\""),
            format!("public_url = \"https://admin:{token}@mcp.example.org\""),
            format!("allow_hosts = [\"{token}\"]"),
            format!("allow_origins = [\"https://x.example\", \"{token}\"]"),
            format!("metrics_listen = \"{token}\""),
            format!("{token} = 1"),
        ];
        for body in cases {
            let e = parse(&format!("[serve]\n{body}\n")).unwrap_err();
            let shown = format!("{} {}", e.message, e.hint.clone().unwrap_or_default());
            assert!(
                !shown.contains(token) && !shown.contains("MIIE"),
                "{body}: {shown}"
            );
            if !body.starts_with(token) {
                assert_eq!(e.code, codes::SERVE_SETTING_SECRET, "{body}");
            }
        }
        // A long folder name in a TLS path is not a token.
        let t = parse("[serve]\ntls_cert = \"/home/Admin/Certificates2024/fullchain.pem\"\ntls_key = \"/home/Admin/Certificates2024/privkey.pem\"\nlisten = \"0.0.0.0:8443\"\n").unwrap();
        assert!(t.resolve().unwrap().tls.is_some());
    }

    /// `[serve]` alone asking for clear text beyond loopback is refused
    /// with the error the flag gets, code, message and hint alike.
    #[test]
    fn a_table_listening_beyond_loopback_in_clear_text_is_refused_as_the_flag_is() {
        let from_table = parse("[serve]\nlisten = \"0.0.0.0:8808\"\n")
            .unwrap()
            .resolve()
            .unwrap_err();
        let from_flag = flags(&[(Key::Listen, Raw::Text("0.0.0.0:8808"))])
            .unwrap()
            .resolve()
            .unwrap_err();
        assert_eq!(from_table.code, codes::LISTEN_UNSAFE);
        assert_eq!(
            (from_table.code, &from_table.message, &from_table.hint),
            (from_flag.code, &from_flag.message, &from_flag.hint)
        );
        assert!(from_table.hint.unwrap().contains("behind_proxy"));
        // A proxy in front, from the table or a flag, makes it safe.
        let table =
            parse("[serve]\nlisten = \"0.0.0.0:8808\"\nbehind_proxy = [\"10.0.0.2\"]\n").unwrap();
        assert!(table.resolve().is_ok());
        // ...and a flag that clears the proxies makes it unsafe again.
        let cleared = flags(&[(Key::BehindProxy, Raw::List(&[String::new()]))]).unwrap();
        assert_eq!(
            cleared.over(&table).resolve().unwrap_err().code,
            codes::LISTEN_UNSAFE
        );
    }

    #[test]
    fn a_flag_given_wins_over_the_table_even_when_it_gives_nothing() {
        let table = parse(FULL).unwrap();
        let given = flags(&[
            (Key::Listen, Raw::Text("127.0.0.1:9000")),
            (Key::AllowHosts, Raw::List(&["Other.example".to_string()])),
            (Key::PublicUrl, Raw::Text("")),
            (Key::OauthDocumentHosts, Raw::List(&[String::new()])),
            (Key::TlsCert, Raw::Text(&abs("/other/cert.pem"))),
            (Key::TlsKey, Raw::Text(&abs("/other/key.pem"))),
            (Key::RequireKey, Raw::Bool(false)),
            (Key::RatePerKey, Raw::Number(7.0)),
        ])
        .unwrap();
        let c = given.over(&table).resolve().unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:9000");
        assert_eq!(c.hosts, ["other.example"]);
        assert!(c.oauth.is_none());
        assert_eq!(c.tls.unwrap().cert, PathBuf::from(abs("/other/cert.pem")));
        assert!(!c.require_key);
        assert_eq!(c.rate_per_key, Some(7.0));
        // What the flags leave alone comes from the table.
        assert_eq!(c.origins, ["https://app.example.org"]);
        assert_eq!(c.max_in_flight, Some(32));
        assert_eq!(c.log_format, LogFormat::Json);
        // TLS files go as a pair: `--tls-cert= --tls-key=` turns TLS off.
        let off = flags(&[(Key::TlsCert, Raw::Text("")), (Key::TlsKey, Raw::Text(""))]).unwrap();
        let mut loopback = table.clone();
        loopback.listen = Some(DEFAULT_LISTEN);
        assert!(off.over(&loopback).resolve().unwrap().tls.is_none());
    }

    const COMMENTED: &str = r#"# The site of the docs team.
name = "docs"   # shown in the app
scratch = false

[limits]
max_rss_mib = 2048 # big imports

# How the team's clients reach us.
[serve]
# behind the company proxy
listen = "127.0.0.1:8808" # the proxy's upstream
allow_hosts = ["docs.example.org"]
rate_per_key = 5 # per second

[approvals]
tools = ["publish"]
"#;

    /// Saving changes only the keys whose value changed: comments, the
    /// other tables, key order and untouched values stay byte for byte.
    #[test]
    fn saving_keeps_comments_other_tables_and_untouched_keys() {
        let dir = site(COMMENTED);
        let saved = save(dir.path(), |t| {
            t.listen = Some("127.0.0.1:9000".parse().unwrap());
            t.behind_proxy = Some(vec!["127.0.0.1".parse().unwrap()]);
            t.allow_hosts = Some(Vec::new());
        })
        .unwrap();
        let text = file_text(&dir);
        let expected = COMMENTED
            .replace(
                "\"127.0.0.1:8808\" # the proxy's upstream",
                "\"127.0.0.1:9000\" # the proxy's upstream",
            )
            .replace("allow_hosts = [\"docs.example.org\"]\n", "")
            .replace(
                "rate_per_key = 5 # per second\n",
                "rate_per_key = 5 # per second\nbehind_proxy = [\"127.0.0.1\"]\n",
            );
        assert_eq!(text, expected);
        // The file reads back as what was saved, and the rest as before.
        assert_eq!(read(dir.path()).unwrap(), saved);
        let file = super::super::read_site_file(dir.path()).unwrap();
        assert_eq!(file.limits().unwrap().max_rss_mib, Some(2048));
        assert!(file.approvals().unwrap().is_some());
        // Saving the same again writes nothing new.
        save(dir.path(), |t| {
            t.listen = Some("127.0.0.1:9000".parse().unwrap())
        })
        .unwrap();
        assert_eq!(file_text(&dir), expected);
        // No temporary file is left beside it.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from(SITE_FILE)]);
    }

    #[test]
    fn saving_into_a_file_without_serve_adds_the_table_at_the_end() {
        let dir = site("name = \"s\" # mine\n");
        save(dir.path(), |t| {
            t.listen = Some(DEFAULT_LISTEN);
            t.require_key = Some(true);
            t.public_url = Some(Some("https://mcp.example.org".into()));
        })
        .unwrap();
        assert_eq!(
            file_text(&dir),
            "name = \"s\" # mine\n\n[serve]\nlisten = \"127.0.0.1:8808\"\npublic_url = \"https://mcp.example.org\"\nrequire_key = true\n"
        );
    }

    /// What would be refused when serve reads it is never written: the file
    /// stays as it was.
    #[test]
    fn an_unsafe_or_secret_table_is_never_written() {
        let dir = site(COMMENTED);
        let e = save(dir.path(), |t| {
            t.listen = Some("0.0.0.0:8808".parse().unwrap())
        })
        .unwrap_err();
        assert_eq!(e.code, codes::LISTEN_UNSAFE);
        assert_eq!(file_text(&dir), COMMENTED);
        // A secret never reaches the table: `set` refuses it first.
        let mut t = ServeTable::default();
        let e = t
            .set(
                Key::PublicUrl,
                Raw::Text("https://u:hunter2hunter2@mcp.example.org"),
            )
            .unwrap_err();
        assert_eq!(e.code, codes::SERVE_SETTING_SECRET);
        assert!(!e.message.contains("hunter2"));
        // A file that is broken already is not rewritten over.
        let broken = site("name = \"s\"\n[serve]\nlisten = 1\n");
        let e = save(broken.path(), |t| t.require_key = Some(true)).unwrap_err();
        assert_eq!(e.code, codes::SITE_CONFIG_INVALID);
        assert_eq!(file_text(&broken), "name = \"s\"\n[serve]\nlisten = 1\n");
    }
}
