//! `gatehouse serve`: the same server core over Streamable HTTP, stateless.
//!
//! Map: here the listener (plain or TLS, reloaded on SIGHUP), the connection
//! limits and the drain; [`endpoint`] serves `/mcp` (auth, the era and header
//! rules, then [`super::admit`] and [`super::dispatch`] with a fresh
//! [`super::handler::State`] per request) and the health routes; [`guard`]
//! checks `Host` and `Origin` and finds the client's address; [`rate`] holds
//! the token buckets; `oauth` serves the OAuth routes (discovery, consent,
//! `/token`, `/register`) when `--public-url` names the issuer;
//! `request_body` closes the connection after an answer sent before the
//! request's body was read.
//!
//! Nothing of the protocol is kept between requests: each request is admitted,
//! authenticated and served on its own, so any number of instances can stand
//! behind a load balancer in front of one database. What is shared is only
//! what makes requests cheaper or bounded: verified keys
//! ([`crate::access::keys::VerifyCache`]), rate buckets, the memory budget and
//! the request slots.

mod endpoint;
pub mod guard;
mod oauth;
pub mod rate;
mod request_body;
mod tls;

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

use super::Limits;
use super::call_record::{ANSWER_GRACE, CALL_BOUND, Late};
use crate::error::{Error, Result, codes};
use crate::site::Site;
use crate::site::serve::{self, ServeConfig};
use rate::Rate;

pub use endpoint::Metrics;

/// The files of a TLS certificate chain and its private key (PEM).
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// How `gatehouse serve` listens and whom it lets in.
#[derive(Debug, Clone)]
pub struct Options {
    pub listen: SocketAddr,
    /// Extra `Host` values answered (loopback names always are).
    pub hosts: Vec<String>,
    /// Extra browser origins accepted (the loopback origins always are).
    pub origins: Vec<String>,
    /// Proxies whose `X-Forwarded-*` headers are believed.
    pub behind_proxy: Vec<IpAddr>,
    pub tls: Option<TlsFiles>,
    /// Refuse requests without a key instead of serving them as `public`.
    pub require_key: bool,
    /// Where Prometheus metrics are served, apart from `/mcp`.
    pub metrics_listen: Option<SocketAddr>,
    /// The OAuth issuer (from `--public-url`); `None` serves no OAuth.
    pub oauth: Option<crate::access::oauth::flow::Issuer>,
    /// Hosts (`host` or `host:port`) whose client metadata documents are
    /// fetched even at an internal address (an intranet client, a test's
    /// fixture); every other document host must be public.
    pub oauth_document_hosts: Vec<String>,
    pub limits: HttpLimits,
}

impl Options {
    pub fn new(listen: SocketAddr) -> Options {
        Options {
            listen,
            hosts: Vec::new(),
            origins: Vec::new(),
            behind_proxy: Vec::new(),
            tls: None,
            require_key: false,
            metrics_listen: None,
            oauth: None,
            oauth_document_hosts: Vec::new(),
            limits: HttpLimits::default(),
        }
    }
}

impl Options {
    /// serve's options for settings resolved from the flags over `[serve]`
    /// ([`serve::ServeTable::resolve`]); unset limits keep their defaults.
    pub fn from_config(config: &ServeConfig) -> Options {
        let mut opts = Options::new(config.listen);
        opts.hosts = config.hosts.clone();
        opts.origins = config.origins.clone();
        opts.behind_proxy = config.behind_proxy.clone();
        opts.tls = config.tls.as_ref().map(|t| TlsFiles {
            cert: t.cert.clone(),
            key: t.key.clone(),
        });
        opts.require_key = config.require_key;
        opts.metrics_listen = config.metrics_listen;
        opts.oauth = config.oauth.clone();
        opts.oauth_document_hosts = config.oauth_document_hosts.clone();
        if let Some(r) = config.rate_per_key {
            opts.limits.key_rate = Rate {
                per_second: r,
                burst: (r * 2.0).max(1.0),
            };
        }
        if let Some(b) = config.max_body_bytes {
            opts.limits.max_body_bytes = b;
        }
        if let Some(n) = config.max_in_flight {
            opts.limits.max_in_flight = n;
        }
        if let Some(d) = config.drain {
            opts.limits.drain = d;
        }
        opts
    }
}

/// Bounds on what clients may cost the server.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// The largest request body (413 above it): the stdio line limit.
    pub max_body_bytes: usize,
    /// The longest a request may take, body included (above the longest call).
    pub request_timeout: Duration,
    /// The longest a connection may take to send a request's headers, and
    /// the longest an idle keep-alive connection is kept.
    pub header_timeout: Duration,
    /// Requests served at once (503 above it).
    pub max_in_flight: usize,
    /// Event streams open at once.
    pub max_streams: usize,
    /// Connections open at once (further ones are closed on accept).
    pub max_connections: usize,
    /// Requests per key (keyless requests: per client address).
    pub key_rate: Rate,
    /// Failed authentications per client network.
    pub auth_failures: Rate,
    /// The most a request's line and headers may take (431 above it; hyper
    /// checks between reads, so one read's worth more may land): each
    /// connection may buffer this much, counted in no budget, so hyper's
    /// default of ~400 KB let 1,024 idle connections pin 540 MB.
    pub max_header_bytes: usize,
    /// Verified keys remembered, and for how long.
    pub key_cache: usize,
    pub key_cache_ttl: Duration,
    /// How long in-flight requests may finish after SIGTERM.
    pub drain: Duration,
    /// The core's own limits (the memory budget).
    pub core: Limits,
}

impl Default for HttpLimits {
    fn default() -> Self {
        let core = Limits::default();
        HttpLimits {
            max_body_bytes: core.max_message_bytes,
            request_timeout: CALL_BOUND + Duration::from_secs(10),
            header_timeout: Duration::from_secs(30),
            max_in_flight: 256,
            max_streams: 64,
            max_connections: 1024,
            key_rate: Rate {
                per_second: 100.0,
                burst: 200.0,
            },
            auth_failures: Rate {
                per_second: 0.2,
                burst: 10.0,
            },
            max_header_bytes: 32 * 1024,
            key_cache: 10_000,
            key_cache_ttl: Duration::from_secs(300),
            drain: Duration::from_secs(10),
            core,
        }
    }
}

/// Why serving stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    Signal(&'static str),
    /// The caller's stop future resolved.
    Requested,
}

/// Whom serve answers for `opts` once bound at `bound`: the loopback names,
/// the ones added, and the public URL's name and origin (answered without
/// more flags, so a connector reaching the issuer is never refused).
pub fn exposure(opts: &Options, bound: SocketAddr) -> guard::Exposure {
    let (mut hosts, mut origins) = (opts.hosts.clone(), opts.origins.clone());
    if let Some(issuer) = &opts.oauth
        && let Ok(u) = url::Url::parse(&issuer.issuer)
    {
        if let Some(h) = u.host_str() {
            hosts.push(match u.port() {
                Some(p) => format!("{h}:{p}"),
                None => h.to_string(),
            });
        }
        origins.push(u.origin().ascii_serialization());
    }
    guard::Exposure::new(bound, &hosts, &origins, &opts.behind_proxy)
}

/// Reads the TLS files as serve will, so a supervisor refuses a bad
/// certificate or key (`TLS_INVALID`) before it starts anything.
pub fn check_tls(files: &TlsFiles) -> Result<()> {
    tls::Reloading::load(files.clone()).map(|_| ())
}

/// Refuses to listen beyond loopback without TLS or a trusted proxy in front
/// (the rule of [`serve::check_exposure`], for every source of settings).
pub fn check_exposure(opts: &Options) -> Result<()> {
    serve::check_exposure(
        opts.listen,
        opts.tls.is_some(),
        !opts.behind_proxy.is_empty(),
    )
}

/// Serves MCP over HTTP on `opts.listen` until `stop` resolves; `ready` gets
/// the bound address (port 0 picks a free one) once requests are accepted.
/// In-flight requests then get [`HttpLimits::drain`] to finish; calls still
/// running after that are answered with the shutdown error and recorded
/// `interrupted` (a held call's hold `abandoned`) before this returns.
pub async fn run(
    site: Site,
    opts: Options,
    stop: impl Future<Output = Stopped>,
    ready: impl FnOnce(SocketAddr),
) -> Result<Stopped> {
    check_exposure(&opts)?;
    site.file.check_policies()?;
    sweep_holds(&site).await;
    let acceptor = match &opts.tls {
        Some(files) => Some(tls::Reloading::load(files.clone())?),
        None => None,
    };
    let listener = TcpListener::bind(opts.listen).await.map_err(|e| {
        Error::new(
            codes::IO_ERROR,
            format!("cannot listen on {}: {e}", opts.listen),
        )
        .hint("pick another address or port with --listen, or stop what holds this one")
    })?;
    let bound = listener.local_addr().map_err(|e| {
        Error::new(
            codes::IO_ERROR,
            format!("cannot read the bound address: {e}"),
        )
    })?;
    let late = Late::default();
    let (closing_tx, closing_rx) = watch::channel(false);
    let server = Arc::new(endpoint::Server::new(
        site,
        &opts,
        bound,
        late.clone(),
        closing_rx,
    ));
    let metrics = match opts.metrics_listen {
        Some(addr) => Some(serve_metrics(addr, server.metrics.clone(), &opts).await?),
        None => None,
    };
    let connections = Arc::new(Semaphore::new(opts.limits.max_connections));
    // A trusted proxy carries everyone's connections: only others are held
    // to their network's share.
    let connection_shares = rate::Shares::new(rate::per_network(opts.limits.max_connections));
    // Named as peers are below (IPv4 as IPv4), once, not per connection.
    let proxies: Vec<IpAddr> = opts.behind_proxy.iter().map(IpAddr::to_canonical).collect();
    // Beyond loopback without TLS, the proxy's TLS is the only protection:
    // no one but the proxy may connect (anyone on the network had been
    // served in clear text, keys included).
    let proxy_only = acceptor.is_none() && !bound.ip().is_loopback() && !proxies.is_empty();
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(opts.limits.header_timeout)
        .max_buf_size(opts.limits.max_header_bytes)
        .keep_alive(true);
    let builder = Arc::new(builder);
    #[cfg(unix)]
    let reload = acceptor
        .as_ref()
        .map(|a| tokio::spawn(tls::reload_on_hangup(a.clone())));
    let mut tasks = tokio::task::JoinSet::new();
    ready(bound);
    tokio::pin!(stop);

    let stopped = loop {
        let (tcp, peer) = tokio::select! {
            stopped = &mut stop => break stopped,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors and the like: breathe, then go on.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // A dual-stack listener (`[::]`) sees IPv4 peers as `::ffff:a.b.c.d`:
        // named as IPv4 from here on, so a trusted IPv4 proxy is recognised
        // and a key's IPv4 `--from` networks apply.
        let peer = SocketAddr::new(peer.ip().to_canonical(), peer.port());
        if proxy_only && !proxies.contains(&peer.ip()) {
            tracing::debug!(peer = %peer.ip(), "a plain-HTTP listener serves its proxies only; closing");
            continue;
        }
        let Ok(slot) = connections.clone().try_acquire_owned() else {
            tracing::debug!("every connection slot is taken; closing a new connection");
            continue;
        };
        let share = if proxies.contains(&peer.ip()) {
            None
        } else {
            let Some(share) = connection_shares.take(peer.ip()) else {
                tracing::debug!("a network holds its share of connections; closing a new one");
                continue;
            };
            Some(share)
        };
        let _ = tcp.set_nodelay(true);
        let service = endpoint::service(server.clone(), peer);
        let watcher = graceful.watcher();
        let builder = builder.clone();
        let acceptor = acceptor.as_ref().map(tls::Reloading::current);
        let handshake = opts.limits.header_timeout;
        tasks.spawn(async move {
            let _held = (slot, share);
            match acceptor {
                None => {
                    let conn = builder.serve_connection(TokioIo::new(tcp), service);
                    let _ = watcher.watch(conn).await;
                }
                Some(acceptor) => {
                    let stream = match tokio::time::timeout(handshake, acceptor.accept(tcp)).await {
                        Ok(Ok(s)) => s,
                        Ok(Err(e)) => {
                            tracing::debug!(error = %e, "TLS handshake failed");
                            return;
                        }
                        Err(_) => return,
                    };
                    let conn = builder.serve_connection(TokioIo::new(stream), service);
                    let _ = watcher.watch(conn).await;
                }
            }
        });
    };

    // Stop accepting; let what was accepted finish, within the bound.
    drop(listener);
    #[cfg(unix)]
    if let Some(r) = reload {
        r.abort();
    }
    if let Some(m) = metrics {
        m.abort();
    }
    tracing::info!(?stopped, "draining in-flight requests");
    let _ = closing_tx.send(true);
    if tokio::time::timeout(opts.limits.drain, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("in-flight requests did not finish in time; answering them as cut short");
        // Each call records itself `interrupted` and answers with the shutdown
        // error (as JSON or as its stream's last event); the connections,
        // already told to close, then end after their answers.
        late.interrupting();
        let answered = async { while tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(ANSWER_GRACE, answered).await.is_err() {
            tracing::warn!("in-flight requests could not be answered in time; abandoning them");
            tasks.abort_all();
        }
    }
    while tasks.join_next().await.is_some() {}
    late.wait(CALL_BOUND).await;
    Ok(stopped)
}

/// Connections the metrics listener holds at once (scrapers are few), a
/// quarter of them per client network, and how long one may take to send
/// its request: 16 idle connections, renewed as they timed out, had kept
/// every scraper out.
const METRICS_CONNECTIONS: usize = 16;
const METRICS_HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// `GET /metrics` on its own listener (only there: `/mcp`'s clients never
/// see it). Held to what `/mcp`'s listener is: a `Host` it answers to (the
/// loopback names and `--allow-host`; no browser `Origin`), the header
/// timeout, and a bound on connections, since its figures name keys and
/// descriptors are shared with `/mcp`.
async fn serve_metrics(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    opts: &Options,
) -> Result<tokio::task::JoinHandle<()>> {
    let listener = TcpListener::bind(addr).await.map_err(|e| {
        Error::new(
            codes::IO_ERROR,
            format!("cannot listen on {addr} for metrics: {e}"),
        )
        .hint("pick another address with --metrics-listen")
    })?;
    let bound = listener.local_addr().unwrap_or(addr);
    let exposure = Arc::new(guard::Exposure::new(bound, &opts.hosts, &[], &[]));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(opts.limits.header_timeout.min(METRICS_HEADER_TIMEOUT))
        .max_buf_size(opts.limits.max_header_bytes);
    let builder = Arc::new(builder);
    let connections = Arc::new(Semaphore::new(METRICS_CONNECTIONS));
    let shares = Arc::new(rate::Shares::new(rate::per_network(METRICS_CONNECTIONS)));
    Ok(tokio::spawn(async move {
        loop {
            let Ok((tcp, peer)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let Some(share) = shares.take(peer.ip()) else {
                continue;
            };
            let Ok(slot) = connections.clone().try_acquire_owned() else {
                continue;
            };
            let (metrics, exposure, builder) = (metrics.clone(), exposure.clone(), builder.clone());
            tokio::spawn(async move {
                let _slot = (slot, share);
                let service = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let (metrics, exposure) = (metrics.clone(), exposure.clone());
                        async move {
                            use http_body_util::BodyExt;
                            let (status, text) =
                                if exposure.check(peer, req.uri(), req.headers()).is_err()
                                    || req.headers().contains_key(hyper::header::ORIGIN)
                                {
                                    (hyper::StatusCode::FORBIDDEN, "forbidden\n".to_string())
                                } else if req.uri().path() == "/metrics" {
                                    (hyper::StatusCode::OK, metrics.render())
                                } else {
                                    (hyper::StatusCode::NOT_FOUND, "not found\n".to_string())
                                };
                            let mut r = hyper::Response::new(
                                http_body_util::Full::new(hyper::body::Bytes::from(text))
                                    .boxed_unsync(),
                            );
                            *r.status_mut() = status;
                            r.headers_mut().insert(
                                hyper::header::CONTENT_TYPE,
                                hyper::header::HeaderValue::from_static(
                                    "text/plain; version=0.0.4",
                                ),
                            );
                            Ok::<_, std::convert::Infallible>(r)
                        }
                    },
                );
                let _ = builder.serve_connection(TokioIo::new(tcp), service).await;
            });
        }
    }))
}

/// SIGTERM or SIGINT (Ctrl-C on Windows): the stop `gatehouse serve` obeys.
pub fn stop_signal() -> impl Future<Output = Stopped> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let term = signal(SignalKind::terminate()).ok();
        let int = signal(SignalKind::interrupt()).ok();
        async move {
            let (mut term, mut int) = (term, int);
            tokio::select! {
                Some(()) = async { match term.as_mut() { Some(s) => s.recv().await, None => std::future::pending().await } } => Stopped::Signal("SIGTERM"),
                Some(()) = async { match int.as_mut() { Some(s) => s.recv().await, None => std::future::pending().await } } => Stopped::Signal("SIGINT"),
            }
        }
    }
    #[cfg(not(unix))]
    {
        async move {
            let _ = tokio::signal::ctrl_c().await;
            Stopped::Signal("Ctrl-C")
        }
    }
}

/// Records the holds a stopped server left waiting as not run (see
/// [`crate::access::approvals::sweep`]); a failure is logged, not fatal.
pub(crate) async fn sweep_holds(site: &Site) {
    match crate::access::approvals::sweep(&site.store).await {
        Ok(0) => {}
        Ok(n) => tracing::warn!(n, "held calls of a stopped server were recorded as not run"),
        Err(e) => tracing::warn!(code = %e.code, "could not check for abandoned held calls"),
    }
}
