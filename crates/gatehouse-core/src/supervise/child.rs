//! The `gatehouse serve` child: spawned from the CLI binary with a cleared
//! environment and no secret in argv, in a process group of its own, its
//! stdin held as a lifeline (`--stop-on-stdin-close`: the kernel closes the
//! pipe when the app exits however it exits, and serve then drains and
//! stops), its stderr drained from spawn to end-of-file into a bounded tail.
//!
//! Stop: close stdin (serve drains in-flight calls within `--drain`), then
//! SIGTERM to the group, then SIGKILL, each after a grace; reap; drain the
//! reader; kill anything left in the group.

use std::ffi::OsString;
use std::net::{IpAddr, SocketAddr};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::process::{Child, ChildStdin, Command};
use tokio::task::JoinHandle;

use super::metrics::{self, Window};
use super::{ServeSpec, ServeStats, ServeStatus, exposure};
use crate::error::{Error, Result, codes};
use crate::sandbox::stderr::{StderrTail, TailLimits, reader};

/// The variables serve gets from the app's environment; everything else
/// (keys, tokens, a database URL in `GATEHOUSE_DATABASE_URL`) stays behind.
/// The site's `gatehouse.toml` names its database; a PostgreSQL password
/// comes from `PGPASSWORD` or the password file, as for the CLI.
pub(super) const PASS_ENV: &[&str] = &[
    "PATH",
    "GATEHOUSE_CONFIG_DIR",
    "GATEHOUSE_SCRATCH_DIR",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "TZ",
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "GATEHOUSE_LOG",
    "PGPASSWORD",
    "PGPASSFILE",
    "SYSTEMROOT",
    "WINDIR",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "TEMP",
    "TMP",
];

/// [`PASS_ENV`] as this process has them.
pub(super) fn passed_env() -> Vec<(String, std::ffi::OsString)> {
    PASS_ENV
        .iter()
        .filter_map(|name| std::env::var_os(name).map(|v| (name.to_string(), v)))
        .collect()
}

/// What serve gives in-flight calls after its stdin closes.
const DRAIN: Duration = Duration::from_secs(5);
/// How long serve may take to answer after it started (it opens the site
/// and runs migrations first).
const READY_WITHIN: Duration = Duration::from_secs(30);
/// Each escalation step's grace.
const GRACE: Duration = Duration::from_secs(3);

/// A running (or ended) `gatehouse serve`.
#[derive(Debug)]
pub struct Supervised {
    spec: ServeSpec,
    child: Child,
    pid: Option<u32>,
    stdin: Option<ChildStdin>,
    tail: StderrTail,
    reader: Option<JoinHandle<std::io::Result<u64>>>,
    metrics_url: String,
    http: reqwest::Client,
    window: Window,
    started_at: i64,
    exit: Option<String>,
}

/// A free port on `ip` for the metrics listener: bound and released, so
/// another process could take it in between; serve then fails to start and
/// says so, and starting again picks another.
fn free_port(ip: IpAddr) -> Result<SocketAddr> {
    std::net::TcpListener::bind((ip, 0))
        .and_then(|l| l.local_addr())
        .map_err(|e| {
            Error::new(
                codes::IO_ERROR,
                format!("cannot find a free port for serve's metrics: {e}"),
            )
        })
}

impl Supervised {
    /// Spawns serve for `spec` and waits until its metrics endpoint answers
    /// (bound after `/mcp`, so `/mcp` is listening then). A serve that exits
    /// first is `SERVE_START_FAILED` with its stderr.
    pub async fn start(spec: ServeSpec) -> Result<Self> {
        // Metrics stay on loopback whatever serve listens on: they name keys.
        let metrics_ip = match spec.listen.ip() {
            ip if ip.is_loopback() => ip,
            _ => IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        };
        let metrics_addr = free_port(metrics_ip)?;
        let mut cmd = Command::new(&spec.cli);
        cmd.arg("--site")
            .arg(&spec.site_dir)
            .arg("serve")
            .arg(format!("--listen={}", spec.listen))
            .arg(format!("--metrics-listen={metrics_addr}"))
            .arg(format!("--drain={}", DRAIN.as_secs()))
            .arg("--stop-on-stdin-close");
        // Every setting of the form is passed, an empty one as `--flag=`:
        // the form wins over `[serve]` in gatehouse.toml, which serve reads
        // for the rest (the rate, the body bound, ...).
        let list = |flag: &str, items: Vec<String>| {
            if items.is_empty() {
                vec![format!("{flag}=")]
            } else {
                items.into_iter().map(|i| format!("{flag}={i}")).collect()
            }
        };
        cmd.args(list("--allow-host", spec.hosts.clone()))
            .args(list("--allow-origin", spec.origins.clone()))
            .args(list(
                "--behind-proxy",
                spec.behind_proxy.iter().map(IpAddr::to_string).collect(),
            ))
            .arg(format!(
                "--public-url={}",
                spec.oauth.as_ref().map_or("", |i| i.issuer.as_str())
            ))
            .arg(format!("--require-key={}", spec.require_key));
        // `--flag=value`: a path is never read as another flag.
        let (mut cert, mut key) = (OsString::from("--tls-cert="), OsString::from("--tls-key="));
        if let Some(tls) = &spec.tls {
            cert.push(&tls.cert);
            key.push(&tls.key);
        }
        cmd.arg(cert).arg(key);
        cmd.env_clear().envs(spec.env.iter().map(|(k, v)| (k, v)));
        cmd.current_dir(&spec.site_dir)
            .stdin(Stdio::piped())
            // serve writes nothing on stdout; its diagnostics go to stderr.
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn().map_err(|e| {
            Error::invalid(
                codes::SPAWN_FAILED,
                format!("cannot start {}: {e}", spec.cli.display()),
                "check that the gatehouse CLI is installed next to the desktop app, or set GATEHOUSE_BIN",
            )
        })?;
        let pid = child.id();
        let stdin = child.stdin.take();
        let stderr = child.stderr.take().expect("stderr is piped");
        let tail = StderrTail::new(TailLimits::default());
        let reader = {
            let tail = tail.clone();
            reader::spawn(async move { reader::drain_child(stderr, &tail).await })
        };
        // reqwest is built without a default TLS provider (plain HTTP here).
        crate::mcp::server::http_fetch::install_crypto_provider();
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(2))
            .build()
            .map_err(|e| {
                Error::new(
                    codes::IO_ERROR,
                    format!("cannot set up the HTTP client: {e}"),
                )
            })?;
        let mut served = Supervised {
            spec,
            child,
            pid,
            stdin,
            tail,
            reader: Some(reader),
            metrics_url: format!("http://{metrics_addr}/metrics"),
            http,
            window: Window::default(),
            started_at: crate::time::now_ms(),
            exit: None,
        };
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Ok(Some(status)) = served.child.try_wait() {
                served.finish(Some(status)).await;
                return Err(served.failed(&format!(
                    "gatehouse serve exited before it answered ({status})"
                )));
            }
            if served.scrape().await.is_ok() {
                return Ok(served);
            }
            if Instant::now() > deadline {
                let stopped = served.stop().await;
                return Err(Error::invalid(
                    codes::SERVE_START_FAILED,
                    format!(
                        "gatehouse serve did not answer within {} s",
                        READY_WITHIN.as_secs()
                    ),
                    "see its output below; the site's database may be slow or unreachable",
                )
                .detail(serde_json::json!({ "stderr": stopped.stderr })));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `SERVE_START_FAILED` with the server's own last words as the hint.
    fn failed(&self, message: &str) -> Error {
        let text = self.tail.excerpt().text;
        let last: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let hint = last[last.len().saturating_sub(3)..].join(" · ");
        Error::invalid(
            codes::SERVE_START_FAILED,
            message,
            if hint.is_empty() {
                "it wrote nothing on stderr".to_string()
            } else {
                hint
            },
        )
        .detail(serde_json::json!({ "stderr": text }))
    }

    pub fn url(&self) -> String {
        self.spec.url()
    }

    pub fn is_running(&mut self) -> bool {
        self.exit.is_none() && matches!(self.child.try_wait(), Ok(None))
    }

    /// Reads the metrics endpoint and feeds the rate.
    async fn scrape(&mut self) -> std::result::Result<ServeStats, String> {
        let response = self
            .http
            .get(&self.metrics_url)
            .send()
            .await
            .map_err(|e| format!("the metrics endpoint did not answer: {e}"))?;
        if !response.status().is_success() {
            return Err(format!(
                "the metrics endpoint answered {}",
                response.status()
            ));
        }
        let text = response
            .text()
            .await
            .map_err(|e| format!("reading the metrics failed: {e}"))?;
        let sample = metrics::parse(&text);
        let rate = self.window.push(Instant::now(), sample.requests);
        Ok(ServeStats::new(sample, rate))
    }

    /// The state now, with fresh counters while it runs.
    pub async fn status(&mut self) -> ServeStatus {
        if self.exit.is_none()
            && let Ok(Some(status)) = self.child.try_wait()
        {
            self.finish(Some(status)).await;
        }
        let stats = match self.exit {
            None => Some(self.scrape().await),
            Some(_) => None,
        };
        self.status_now(stats)
    }

    pub(super) fn status_now(
        &self,
        stats: Option<std::result::Result<ServeStats, String>>,
    ) -> ServeStatus {
        let all = exposure(&self.spec);
        let excerpt = self.tail.excerpt();
        let (stats, stats_error) = match stats {
            Some(Ok(s)) => (Some(s), None),
            Some(Err(e)) => (None, Some(e)),
            None => (None, None),
        };
        ServeStatus {
            running: self.exit.is_none(),
            url: self.spec.url(),
            listen: self.spec.listen.to_string(),
            pid: self.pid,
            started_at: self.started_at,
            hosts: all.hosts,
            origins: all.origins,
            oauth_issuer: self.spec.oauth.as_ref().map(|i| i.issuer.clone()),
            settings: self.spec.settings(),
            stats,
            stats_error,
            exit: self.exit.clone(),
            stderr: excerpt.text,
            stderr_counters: self.tail.counters(),
        }
    }

    /// Stops serve (see the module doc) and returns its last state.
    pub async fn stop(mut self) -> ServeStatus {
        if self.exit.is_none() {
            // The lifeline: serve stops accepting and drains.
            drop(self.stdin.take());
            let mut status = tokio::time::timeout(DRAIN + GRACE, self.child.wait())
                .await
                .ok()
                .and_then(|r| r.ok());
            if status.is_none() {
                tracing::warn!(pid = ?self.pid, "serve did not stop when its stdin closed; terminating its group");
                self.signal_group(crate::sandbox::Stop::Term);
                status = tokio::time::timeout(GRACE, self.child.wait())
                    .await
                    .ok()
                    .and_then(|r| r.ok());
            }
            if status.is_none() {
                self.signal_group(crate::sandbox::Stop::Kill);
                let _ = self.child.start_kill();
                status = self.child.wait().await.ok();
            }
            self.finish(status).await;
        }
        self.status_now(None)
    }

    /// Records how it ended, kills whatever is left in its group, and waits
    /// for the stderr reader to reach end-of-file.
    async fn finish(&mut self, status: Option<ExitStatus>) {
        self.exit = Some(match status {
            Some(s) => s.to_string(),
            None => "not observed".to_string(),
        });
        self.signal_group(crate::sandbox::Stop::Kill);
        if let Some(reader) = self.reader.take()
            && tokio::time::timeout(GRACE, reader).await.is_err()
        {
            tracing::warn!("serve's stderr stayed open after it exited");
        }
    }

    fn signal_group(&self, stop: crate::sandbox::Stop) {
        #[cfg(unix)]
        if let Some(pid) = self.pid {
            let group = crate::sandbox::ProcessGroup { pgid: pid as i32 };
            if let Err(e) = group.signal(stop) {
                tracing::warn!(code = %e.code, "could not signal serve's process group");
            }
        }
        #[cfg(not(unix))]
        let _ = stop;
    }
}

impl Drop for Supervised {
    /// Never an orphan: a server dropped while running loses its group at
    /// once (the app's exit path stops it cleanly before this).
    fn drop(&mut self) {
        if self.exit.is_none() {
            self.signal_group(crate::sandbox::Stop::Kill);
            let _ = self.child.start_kill();
        }
    }
}
