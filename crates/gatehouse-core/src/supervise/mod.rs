//! `gatehouse serve` run by the desktop app: one supervised child per window,
//! started from the CLI binary for the open site, read while it runs, and
//! stopped cleanly with the app.
//!
//! Map:
//! - this file: [`ServeSpec`] (what to start; checked before anything runs),
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

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use crate::error::{Error, Result, codes};
use crate::mcp::server::http::guard::Exposure;
use crate::sandbox::stderr::StderrCounters;

pub use child::Supervised;
pub use metrics::LimitedKey;

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
    /// serve's whole environment: by default [`child::PASS_ENV`] as this
    /// process has them (never a key, a token or a database URL).
    pub env: Vec<(String, std::ffi::OsString)>,
}

impl ServeSpec {
    /// Checks and normalises the page's input: a loopback address (the panel
    /// has no TLS settings, and serve refuses clear text beyond loopback),
    /// bare host names, and origins as `scheme://host[:port]`.
    pub fn new(
        cli: PathBuf,
        site_dir: PathBuf,
        listen: &str,
        hosts: &[String],
        origins: &[String],
    ) -> Result<Self> {
        let listen: SocketAddr = listen.trim().parse().map_err(|_| {
            Error::invalid(
                codes::INPUT_INVALID,
                format!("{:?} is not an address and port", listen.trim()),
                "give an address and a port, such as 127.0.0.1:8808",
            )
        })?;
        if !listen.ip().is_loopback() {
            return Err(Error::invalid(
                codes::LISTEN_UNSAFE,
                format!("the desktop serves on loopback only, not on {listen}"),
                "listen on 127.0.0.1 here; to serve other machines run `gatehouse serve` with --tls-cert/--tls-key or --behind-proxy",
            ));
        }
        let hosts = clean(hosts).map(check_host).collect::<Result<Vec<_>>>()?;
        let origins = clean(origins)
            .map(check_origin)
            .collect::<Result<Vec<_>>>()?;
        Ok(ServeSpec {
            cli,
            site_dir,
            listen,
            hosts: dedup(hosts),
            origins: dedup(origins),
            env: child::passed_env(),
        })
    }

    /// The endpoint clients call.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.listen)
    }
}

fn clean(list: &[String]) -> impl Iterator<Item = &str> {
    list.iter().map(|s| s.trim()).filter(|s| !s.is_empty())
}

fn dedup(mut list: Vec<String>) -> Vec<String> {
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
    /// The names added to the loopback ones, as given.
    pub added_hosts: Vec<String>,
    pub added_origins: Vec<String>,
    /// Every `Host` value served and every origin accepted (loopback included).
    pub hosts: Vec<String>,
    pub origins: Vec<String>,
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
    Exposure::new(spec.listen, &spec.hosts, &spec.origins, &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(listen: &str, hosts: &[&str], origins: &[&str]) -> Result<ServeSpec> {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        ServeSpec::new(
            PathBuf::from("/usr/bin/gatehouse"),
            PathBuf::from("/srv/site"),
            listen,
            &v(hosts),
            &v(origins),
        )
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
    }

    #[test]
    fn only_loopback_is_served_from_the_desktop() {
        assert_eq!(
            spec("0.0.0.0:8808", &[], &[]).unwrap_err().code,
            codes::LISTEN_UNSAFE
        );
        assert_eq!(
            spec("localhost", &[], &[]).unwrap_err().code,
            codes::INPUT_INVALID
        );
        assert!(spec("[::1]:8808", &[], &[]).is_ok());
    }
}
