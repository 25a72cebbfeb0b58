//! `gatehouse serve` run by the desktop app: one supervised child per window,
//! started from the CLI binary for the open site, read while it runs, and
//! stopped cleanly with the app.
//!
//! Map:
//! - this file: [`ServeSettings`] (the panel's form, one field per serve
//!   flag, kept in `[serve]` of gatehouse.toml by [`save_settings`] and read
//!   back by [`saved_settings`]), [`ServeSpec`] (what to start; checked by
//!   serve's own rules, [`crate::site::serve`], before anything runs),
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
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::access::oauth::flow::Issuer;
use crate::error::{Error, Result, codes};
use crate::mcp::server::http::guard::Exposure;
use crate::mcp::server::http::{self, Options, TlsFiles};
use crate::sandbox::stderr::StderrCounters;
use crate::site;
use crate::site::serve::{DEFAULT_LISTEN, Key, Raw, ServeTable};

pub use child::Supervised;
pub use metrics::LimitedKey;

/// The Serve panel's settings as the page gives them: text, checked by
/// [`ServeSpec::new`]. Each field is the `gatehouse serve` flag of the same
/// name (and the `[serve]` key of gatehouse.toml); empty text means none,
/// which the child is told explicitly, so `[serve]` never fills a field the
/// form left empty.
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
    /// `--require-key`: refuse requests without a key instead of serving
    /// them as `public`.
    pub require_key: bool,
}

impl ServeSettings {
    /// The form as serve's settings, each checked by serve's own rules
    /// ([`site::serve`]). Every field counts as given: an empty one means
    /// "none" and wins over `[serve]` in gatehouse.toml.
    pub fn table(&self) -> Result<ServeTable> {
        let mut t = ServeTable::default();
        t.set(Key::Listen, Raw::Text(&self.listen))?;
        t.set(Key::AllowHosts, Raw::List(&self.hosts))?;
        t.set(Key::AllowOrigins, Raw::List(&self.origins))?;
        t.set(Key::PublicUrl, Raw::Text(&self.public_url))?;
        t.set(Key::TlsCert, Raw::Text(&self.tls_cert))?;
        t.set(Key::TlsKey, Raw::Text(&self.tls_key))?;
        t.set(Key::BehindProxy, Raw::List(&self.behind_proxy))?;
        t.set(Key::RequireKey, Raw::Bool(self.require_key))?;
        Ok(t)
    }

    /// The form that shows `table` (a saved `[serve]`): serve's defaults
    /// where it says nothing.
    pub fn from_table(table: &ServeTable) -> ServeSettings {
        let path = |p: &Option<Option<PathBuf>>| {
            p.clone()
                .flatten()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        };
        ServeSettings {
            listen: table.listen.unwrap_or(DEFAULT_LISTEN).to_string(),
            hosts: table.allow_hosts.clone().unwrap_or_default(),
            origins: table.allow_origins.clone().unwrap_or_default(),
            public_url: table.public_url.clone().flatten().unwrap_or_default(),
            tls_cert: path(&table.tls_cert),
            tls_key: path(&table.tls_key),
            behind_proxy: table
                .behind_proxy
                .iter()
                .flatten()
                .map(IpAddr::to_string)
                .collect(),
            require_key: table.require_key.unwrap_or(false),
        }
    }
}

/// The Serve form as `[serve]` in `site_dir`'s gatehouse.toml has it now
/// (read from disk: the admin may have edited the file since the site was
/// opened).
pub fn saved_settings(site_dir: &Path) -> Result<ServeSettings> {
    let table = site::serve::read(site_dir)?;
    Ok(ServeSettings::from_table(&table))
}

/// Saves the form into `[serve]` of `site_dir`'s gatehouse.toml, checked as
/// a start checks it (the TLS files read as serve reads them). Only the
/// form's keys change; the rest of the table (`rate_per_key`, …), the other
/// tables and every comment stay. Returns the form as saved.
pub fn save_settings(site_dir: &Path, settings: &ServeSettings) -> Result<ServeSettings> {
    let form = settings.table()?;
    if let Some(tls) = form.resolve()?.tls {
        http::check_tls(&TlsFiles {
            cert: tls.cert,
            key: tls.key,
        })?;
    }
    let saved = site::serve::save(site_dir, |t| {
        t.listen = form.listen;
        t.allow_hosts = form.allow_hosts;
        t.allow_origins = form.allow_origins;
        t.public_url = form.public_url;
        t.tls_cert = form.tls_cert;
        t.tls_key = form.tls_key;
        t.behind_proxy = form.behind_proxy;
        t.require_key = form.require_key;
    })?;
    Ok(ServeSettings::from_table(&saved))
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
    pub require_key: bool,
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
        let config = settings.table()?.resolve()?;
        let spec = ServeSpec {
            cli,
            site_dir,
            listen: config.listen,
            hosts: config.hosts,
            origins: config.origins,
            oauth: config.oauth,
            tls: config.tls.map(|t| TlsFiles {
                cert: t.cert,
                key: t.key,
            }),
            behind_proxy: config.behind_proxy,
            require_key: config.require_key,
            env: child::passed_env(),
        };
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
        opts.require_key = self.require_key;
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
            require_key: self.require_key,
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
    /// The form is kept in `[serve]`: saved without touching the rest of
    /// the file (the table's other keys included), loaded back as it was
    /// typed, normalised; a secret or an unsafe exposure is never written.
    #[test]
    fn the_form_is_saved_into_serve_and_loaded_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(site::SITE_FILE);
        let original = "name = \"s\"\n\n[serve]\nrate_per_key = 3 # slow clients\n";
        std::fs::write(&file, original).unwrap();
        assert_eq!(
            saved_settings(dir.path()).unwrap(),
            ServeSettings {
                listen: "127.0.0.1:8808".into(),
                ..ServeSettings::default()
            }
        );
        let form = ServeSettings {
            listen: "0.0.0.0:8808".into(),
            hosts: v(&["MCP.example.org"]),
            public_url: "https://mcp.example.org".into(),
            behind_proxy: v(&["127.0.0.1"]),
            require_key: true,
            ..ServeSettings::default()
        };
        let saved = save_settings(dir.path(), &form).unwrap();
        assert_eq!(saved.hosts, ["mcp.example.org"]);
        assert_eq!(saved_settings(dir.path()).unwrap(), saved);
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with(original), "{text}");
        assert_eq!(
            site::serve::read(dir.path()).unwrap().rate_per_key,
            Some(3.0)
        );
        // A spec from the saved form is the one the form gave.
        let spec = ServeSpec::new("/usr/bin/gatehouse".into(), dir.path().into(), &saved).unwrap();
        assert_eq!(spec.settings(), saved);
        // Emptied fields are removed from the table, not kept.
        let cleared = save_settings(
            dir.path(),
            &ServeSettings {
                listen: "127.0.0.1:8808".into(),
                ..ServeSettings::default()
            },
        )
        .unwrap();
        assert!(cleared.hosts.is_empty() && cleared.public_url.is_empty() && !cleared.require_key);
        let before = std::fs::read_to_string(&file).unwrap();
        for hostile in [
            ServeSettings {
                listen: "0.0.0.0:8808".into(),
                ..ServeSettings::default()
            },
            ServeSettings {
                listen: "127.0.0.1:8808".into(),
                public_url: "https://admin:s3cretPassw0rd@mcp.example.org".into(),
                ..ServeSettings::default()
            },
        ] {
            let e = save_settings(dir.path(), &hostile).unwrap_err();
            assert!(
                [codes::LISTEN_UNSAFE, codes::SERVE_SETTING_SECRET].contains(&e.code),
                "{e:?}"
            );
            assert!(!e.message.contains("s3cret"), "{}", e.message);
            assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
        }
    }
}
