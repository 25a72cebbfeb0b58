//! `gatehouse serve` run by the desktop app: one supervised child per window,
//! started from the CLI binary for the open site, read while it runs, and
//! stopped cleanly with the app.
//!
//! Map:
//! - this file: [`ServeSettings`] (the panel's form, one field per serve
//!   flag), [`ServeSpec`] (what to start; checked by serve's own rules
//!   before anything runs),
//!   [`ServeSlot`] (the one server of a window: start, status, stop) and the
//!   views the page gets ([`ServeStatus`], [`ServeStats`]);
//! - [`child`]: the process itself: spawn (no secret in argv, a cleared
//!   environment, its own process group, stdin held as the lifeline), the
//!   readiness wait, the bounded stderr tail, the stop;
//! - [`metrics`]: serve's Prometheus text read back into counters, and the
//!   request rate over the last seconds;
//! - [`remote`]: every client's remote config for the served URL.
//!
//! The numbers come from serve's metrics endpoint, not its logs: counters are
//! exact and cumulative, while stderr is a bounded tail for a person (see
//! docs/decisions.md, "Serve panel reads metrics").

mod child;
pub mod metrics;
pub mod remote;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::access::oauth::flow::Issuer;
use crate::error::{Error, Result, codes};
use crate::mcp::server::http::guard::Exposure;
use crate::mcp::server::http::{self, Options, TlsFiles};
use crate::sandbox::stderr::StderrCounters;

pub use child::Supervised;
pub use metrics::LimitedKey;

/// The Serve panel's settings as the page gives them: text, checked by
/// [`ServeSpec::new`]. Each field is the `gatehouse serve` flag of the same
/// name; empty text means the flag is left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(default, deny_unknown_fields)]
pub struct ServeSettings {
    /// `--listen`: an address and port, such as `127.0.0.1:8808`.
    pub listen: String,
    /// `--allow-host`: `Host` names served besides the loopback ones.
    pub hosts: Vec<String>,
    /// `--allow-origin`: browser origins accepted besides the loopback ones.
    pub origins: Vec<String>,
    /// `--public-url`: the origin clients reach the server at; OAuth for
    /// connectors is on when it is given.
    pub public_url: String,
    /// `--tls-cert` and `--tls-key`: PEM files, both or neither.
    pub tls_cert: String,
    pub tls_key: String,
    /// `--behind-proxy`: the addresses of the TLS-terminating proxies in front.
    pub behind_proxy: Vec<String>,
}

/// What to start: the CLI, the site, where to listen, whom to let in.
#[derive(Debug, Clone)]
pub struct ServeSpec {
    /// The `gatehouse` CLI binary (absolute).
    pub cli: PathBuf,
    /// The open site's folder; its `gatehouse.toml` names the database, so no
    /// URL (which may hold a password) is ever passed.
    pub site_dir: PathBuf,
    pub listen: SocketAddr,
    /// `Host` names served besides the loopback ones.
    pub hosts: Vec<String>,
    /// Browser origins accepted besides the loopback ones.
    pub origins: Vec<String>,
    /// The OAuth issuer, from the public URL.
    pub oauth: Option<Issuer>,
    pub tls: Option<TlsFiles>,
    pub behind_proxy: Vec<IpAddr>,
    /// serve's whole environment: by default [`child::PASS_ENV`] as this
    /// process has them (never a key, a token or a database URL).
    pub env: Vec<(String, std::ffi::OsString)>,
}

impl ServeSpec {
    /// Checks and normalises the page's input with the checks `gatehouse
    /// serve` applies (the issuer's, the exposure's, the TLS files read as
    /// serve reads them), so a bad setting is refused with its own code
    /// before anything runs: bare host names, origins as
    /// `scheme://host[:port]`, absolute TLS paths.
    pub fn new(cli: PathBuf, site_dir: PathBuf, settings: &ServeSettings) -> Result<Self> {
        let listen = settings.listen.trim();
        let listen: SocketAddr = listen.parse().map_err(|_| {
            Error::invalid(
                codes::INPUT_INVALID,
                format!("{listen:?} is not an address and port"),
                "give an address and a port, such as 127.0.0.1:8808",
            )
        })?;
        let hosts = clean(&settings.hosts)
            .map(check_host)
            .collect::<Result<Vec<_>>>()?;
        let origins = clean(&settings.origins)
            .map(check_origin)
            .collect::<Result<Vec<_>>>()?;
        let behind_proxy = clean(&settings.behind_proxy)
            .map(check_proxy)
            .collect::<Result<Vec<_>>>()?;
        let behind_proxy = dedup(behind_proxy);
        let public_url = settings.public_url.trim();
        let oauth = match public_url {
            "" => None,
            url => Some(Issuer::new(url)?),
        };
        let tls = tls_files(settings.tls_cert.trim(), settings.tls_key.trim())?;
        let spec = ServeSpec {
            cli,
            site_dir,
            listen,
            hosts: dedup(hosts),
            origins: dedup(origins),
            oauth,
            tls,
            behind_proxy,
            env: child::passed_env(),
        };
        http::check_exposure(&spec.options())?;
        if let Some(files) = &spec.tls {
            http::check_tls(files)?;
        }
        Ok(spec)
    }

    /// serve's options for this spec (what its own checks read).
    fn options(&self) -> Options {
        let mut opts = Options::new(self.listen);
        opts.hosts = self.hosts.clone();
        opts.origins = self.origins.clone();
        opts.behind_proxy = self.behind_proxy.clone();
        opts.tls = self.tls.clone();
        opts.oauth = self.oauth.clone();
        opts
    }

    /// The settings as checked and normalised.
    pub fn settings(&self) -> ServeSettings {
        let text = |v: &[IpAddr]| v.iter().map(IpAddr::to_string).collect();
        let path = |f: &dyn Fn(&TlsFiles) -> &PathBuf| {
            self.tls
                .as_ref()
                .map(|t| f(t).display().to_string())
                .unwrap_or_default()
        };
        ServeSettings {
            listen: self.listen.to_string(),
            hosts: self.hosts.clone(),
            origins: self.origins.clone(),
            public_url: self
                .oauth
                .as_ref()
                .map(|i| i.issuer.clone())
                .unwrap_or_default(),
            tls_cert: path(&|t| &t.cert),
            tls_key: path(&|t| &t.key),
            behind_proxy: text(&self.behind_proxy),
        }
    }

    /// The endpoint clients call: under the public URL when there is one,
    /// else at the listening address (loopback for an unspecified one).
    pub fn url(&self) -> String {
        if let Some(issuer) = &self.oauth {
            return issuer.resource.clone();
        }
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}/mcp", reachable(self.listen))
    }
}

/// `listen` as a local client reaches it: `0.0.0.0` and `::` are no address
/// to call, so their loopback stands in.
fn reachable(listen: SocketAddr) -> SocketAddr {
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, listen.port())
}

/// A proxy's address, as `--behind-proxy` takes it.
fn check_proxy(proxy: &str) -> Result<IpAddr> {
    proxy.parse().map_err(|_| {
        Error::invalid(
            codes::INPUT_INVALID,
            format!("{proxy:?} is not an IP address"),
            "give the address the TLS-terminating proxy connects from, such as 127.0.0.1 (no port, no name)",
        )
    })
}

/// Both TLS files or neither, each an absolute path (serve runs in the
/// site's folder, so a relative path would name another file there).
fn tls_files(cert: &str, key: &str) -> Result<Option<TlsFiles>> {
    let hint = "give both the certificate chain and its private key as absolute paths to PEM files, or neither";
    match (cert, key) {
        ("", "") => Ok(None),
        ("", _) | (_, "") => Err(Error::invalid(
            codes::INPUT_INVALID,
            "TLS needs both a certificate and a key",
            hint,
        )),
        (cert, key) => {
            for path in [cert, key] {
                if !std::path::Path::new(path).is_absolute() {
                    return Err(Error::invalid(
                        codes::INPUT_INVALID,
                        format!("{path:?} is not an absolute path"),
                        hint,
                    ));
                }
            }
            Ok(Some(TlsFiles {
                cert: cert.into(),
                key: key.into(),
            }))
        }
    }
}

fn clean(list: &[String]) -> impl Iterator<Item = &str> {
    list.iter().map(|s| s.trim()).filter(|s| !s.is_empty())
}

fn dedup<T: Clone + Eq + std::hash::Hash>(mut list: Vec<T>) -> Vec<T> {
    let mut seen = std::collections::HashSet::new();
    list.retain(|s| seen.insert(s.clone()));
    list
}

/// A `Host` value: `name` or `name:port`, nothing else (no scheme, path or
/// space, and never a leading `-` that argv could read as a flag).
fn check_host(host: &str) -> Result<String> {
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
fn check_origin(origin: &str) -> Result<String> {
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

/// The server of one window, if any: at most one at a time. Cloning shares
/// it (the app's exit and a site switch stop the same child).
#[derive(Debug, Clone, Default)]
pub struct ServeSlot {
    inner: Arc<tokio::sync::Mutex<Option<Supervised>>>,
}

impl ServeSlot {
    /// Starts serve as `spec` says and returns once it answers, or the reason
    /// it did not (with its stderr). A server already running is refused
    /// (`SERVE_ALREADY_RUNNING`); one that ended is replaced.
    pub async fn start(&self, spec: ServeSpec) -> Result<ServeStatus> {
        let mut slot = self.inner.lock().await;
        if let Some(running) = slot.as_mut()
            && running.is_running()
        {
            return Err(Error::invalid(
                codes::SERVE_ALREADY_RUNNING,
                format!("gatehouse serve is already running at {}", running.url()),
                "stop it first, then start it with the new settings",
            ));
        }
        if let Some(old) = slot.take() {
            old.stop().await;
        }
        let started = Supervised::start(spec).await?;
        let status = started.status_now(None);
        *slot = Some(started);
        Ok(status)
    }

    /// The server's state and counters now; `None` when none was started.
    pub async fn status(&self) -> Option<ServeStatus> {
        let mut slot = self.inner.lock().await;
        match slot.as_mut() {
            Some(s) => Some(s.status().await),
            None => None,
        }
    }

    /// Stops the server (stdin closed, then SIGTERM, then SIGKILL to its
    /// group, each after a grace) and returns its last state.
    pub async fn stop(&self) -> Result<ServeStatus> {
        let taken = self.inner.lock().await.take();
        match taken {
            Some(s) => Ok(s.stop().await),
            None => Err(Error::invalid(
                codes::SERVE_NOT_RUNNING,
                "gatehouse serve is not running",
                "start it from the Serve panel first",
            )),
        }
    }
}

/// What the Serve panel shows.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct ServeStatus {
    pub running: bool,
    /// The `/mcp` endpoint clients call.
    pub url: String,
    pub listen: String,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// When it was started (epoch ms).
    pub started_at: i64,
    /// Every `Host` value served and every origin accepted (loopback included).
    pub hosts: Vec<String>,
    pub origins: Vec<String>,
    /// The OAuth issuer (the public URL) when OAuth is on: connectors
    /// (claude.ai, Claude Desktop, ChatGPT) are then given `url`.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oauth_issuer: Option<String>,
    /// The settings it runs with, normalised (for the form, and to start it
    /// again).
    pub settings: ServeSettings,
    /// The counters, when the metrics endpoint answered.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<ServeStats>,
    /// Why there are no counters (the endpoint did not answer).
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats_error: Option<String>,
    /// How it ended, once it has ("exit status 0", "signal 9", …).
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<String>,
    /// The kept stderr (head and tail, with Gatehouse's marker when cut),
    /// within the excerpt budget.
    pub stderr: String,
    pub stderr_counters: StderrCounters,
}

/// Serve's counters since it started, and the request rate now.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct ServeStats {
    pub requests: u64,
    /// Requests per second over the last few seconds.
    pub requests_per_second: f64,
    pub in_flight: u64,
    pub calls_ok: u64,
    pub calls_error: u64,
    pub calls_refused: u64,
    pub auth_failures: u64,
    /// Everything that went wrong: tool errors, refused calls, failed
    /// authentications and rate-limited requests.
    pub errors: u64,
    pub rate_limited: u64,
    pub limited_keys: Vec<LimitedKey>,
}

impl ServeStats {
    fn new(s: metrics::Sample, rate: f64) -> Self {
        ServeStats {
            requests: s.requests,
            requests_per_second: rate,
            in_flight: s.in_flight,
            calls_ok: s.calls_ok,
            calls_error: s.calls_error,
            calls_refused: s.calls_refused,
            auth_failures: s.auth_failures,
            errors: s.calls_error + s.calls_refused + s.auth_failures + s.rate_limited,
            rate_limited: s.rate_limited,
            limited_keys: s.limited_keys,
        }
    }
}

/// The full allowlist serve applies for `spec` (the loopback names always).
fn exposure(spec: &ServeSpec) -> Exposure {
    http::exposure(&spec.options(), spec.listen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(l: &[&str]) -> Vec<String> {
        l.iter().map(|s| s.to_string()).collect()
    }

    fn with(settings: ServeSettings) -> Result<ServeSpec> {
        ServeSpec::new(
            PathBuf::from("/usr/bin/gatehouse"),
            PathBuf::from("/srv/site"),
            &settings,
        )
    }

    fn spec(listen: &str, hosts: &[&str], origins: &[&str]) -> Result<ServeSpec> {
        with(ServeSettings {
            listen: listen.into(),
            hosts: v(hosts),
            origins: v(origins),
            ..ServeSettings::default()
        })
    }

    #[test]
    fn the_allowlist_is_checked_and_normalised_before_anything_runs() {
        let s = spec(
            "127.0.0.1:8808",
            &[" Gatehouse.Example.org ", "", "gatehouse.example.org"],
            &["https://App.example.org/", "http://localhost:3000"],
        )
        .unwrap();
        assert_eq!(s.hosts, ["gatehouse.example.org"]);
        assert_eq!(
            s.origins,
            ["https://app.example.org", "http://localhost:3000"]
        );
        assert_eq!(s.url(), "http://127.0.0.1:8808/mcp");
        assert!(s.oauth.is_none());
        let all = exposure(&s);
        assert!(all.hosts.contains(&"127.0.0.1:8808".to_string()));
        assert!(all.hosts.contains(&"gatehouse.example.org".to_string()));
    }

    #[test]
    fn hostile_allowlist_entries_are_refused() {
        for host in ["--require-key", "evil.example/path", "http://x", "a b"] {
            let err = spec("127.0.0.1:1", &[host], &[]).unwrap_err();
            assert_eq!(err.code, codes::INPUT_INVALID, "{host}");
        }
        for origin in [
            "app.example.org",
            "https://x/path",
            "file:///etc",
            "ftp://x",
        ] {
            let err = spec("127.0.0.1:1", &[], &[origin]).unwrap_err();
            assert_eq!(err.code, codes::INPUT_INVALID, "{origin}");
        }
        for proxy in ["--tls-cert=/x", "proxy.example", "10.0.0.1:443"] {
            let err = with(ServeSettings {
                listen: "127.0.0.1:1".into(),
                behind_proxy: v(&[proxy]),
                ..ServeSettings::default()
            })
            .unwrap_err();
            assert_eq!(err.code, codes::INPUT_INVALID, "{proxy}");
        }
    }

    #[test]
    fn clear_text_beyond_loopback_is_refused_as_serve_refuses_it() {
        let err = spec("0.0.0.0:8808", &[], &[]).unwrap_err();
        assert_eq!(err.code, codes::LISTEN_UNSAFE);
        assert!(err.hint.unwrap().contains("--behind-proxy"));
        assert_eq!(
            spec("localhost", &[], &[]).unwrap_err().code,
            codes::INPUT_INVALID
        );
        assert!(spec("[::1]:8808", &[], &[]).is_ok());
        // A TLS-terminating proxy in front makes it safe, as for the CLI.
        let proxied = with(ServeSettings {
            listen: "0.0.0.0:8808".into(),
            behind_proxy: v(&["10.0.0.2", " ", "10.0.0.2"]),
            public_url: "https://mcp.example.org/".into(),
            ..ServeSettings::default()
        })
        .unwrap();
        assert_eq!(
            proxied.behind_proxy,
            ["10.0.0.2".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(proxied.url(), "https://mcp.example.org/mcp");
        let all = exposure(&proxied);
        assert!(all.hosts.contains(&"mcp.example.org".to_string()));
        assert!(all.origins.contains(&"https://mcp.example.org".to_string()));
        assert_eq!(all.proxies, proxied.behind_proxy);
    }

    #[test]
    fn the_public_url_is_checked_by_the_issuers_own_rules() {
        let public = |url: &str, listen: &str| {
            with(ServeSettings {
                listen: listen.into(),
                public_url: url.into(),
                ..ServeSettings::default()
            })
        };
        for bad in [
            "http://mcp.example.org",
            "mcp.example.org",
            "https://mcp.example.org/gatehouse",
            "https://user@mcp.example.org",
        ] {
            let err = public(bad, "127.0.0.1:8808").unwrap_err();
            assert_eq!(err.code, codes::INPUT_INVALID, "{bad}");
            assert!(err.message.contains("public URL"), "{}", err.message);
            assert!(err.hint.is_some(), "{bad}");
        }
        let local = public(" http://127.0.0.1:8808 ", "127.0.0.1:8808").unwrap();
        assert_eq!(
            local.oauth.as_ref().map(|i| i.issuer.as_str()),
            Some("http://127.0.0.1:8808")
        );
        assert_eq!(local.url(), "http://127.0.0.1:8808/mcp");
        assert_eq!(local.settings().public_url, "http://127.0.0.1:8808");
    }

    #[test]
    fn tls_needs_both_absolute_files_that_serve_can_read() {
        let tls = |cert: &str, key: &str| {
            with(ServeSettings {
                listen: "0.0.0.0:8443".into(),
                tls_cert: cert.into(),
                tls_key: key.into(),
                ..ServeSettings::default()
            })
        };
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate").unwrap();
        let junk = junk.to_str().unwrap();
        assert_eq!(tls(junk, "").unwrap_err().code, codes::INPUT_INVALID);
        assert_eq!(tls("", junk).unwrap_err().code, codes::INPUT_INVALID);
        assert_eq!(
            tls("cert.pem", "key.pem").unwrap_err().code,
            codes::INPUT_INVALID
        );
        let missing = dir.path().join("missing.pem");
        let missing = missing.to_str().unwrap();
        assert_eq!(tls(missing, missing).unwrap_err().code, codes::TLS_INVALID);
        assert_eq!(tls(junk, junk).unwrap_err().code, codes::TLS_INVALID);
    }

    #[test]
    fn an_unspecified_address_is_called_at_its_loopback() {
        assert_eq!(
            reachable("0.0.0.0:8808".parse().unwrap()).to_string(),
            "127.0.0.1:8808"
        );
        assert_eq!(
            reachable("[::]:8808".parse().unwrap()).to_string(),
            "[::1]:8808"
        );
        assert_eq!(
            reachable("10.1.2.3:8808".parse().unwrap()).to_string(),
            "10.1.2.3:8808"
        );
    }
}
