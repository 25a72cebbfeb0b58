//! `gatehouse serve`: the MCP server over Streamable HTTP at `/mcp`, for
//! remote clients and for many instances in front of one database. Every
//! request brings its own key (`Authorization: Bearer`), or is `public`.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use gatehouse_core::error::codes;
use gatehouse_core::mcp::server::http::{self, Options, TlsFiles, rate::Rate};
use gatehouse_core::site;
use gatehouse_core::{Error, Result};

use crate::Ctx;

#[derive(Args)]
pub struct ServeArgs {
    /// Where to listen (beyond loopback only with TLS or --behind-proxy).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8808")]
    listen: SocketAddr,
    /// Another name clients reach this server by (its Host header); loopback
    /// names are always served.
    #[arg(long, value_name = "HOST")]
    allow_host: Vec<String>,
    /// A browser origin allowed to call (e.g. https://app.example.org).
    #[arg(long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// The TLS-terminating proxies in front: only their X-Forwarded-* headers count.
    #[arg(long, value_name = "ADDR", num_args = 1..)]
    behind_proxy: Vec<IpAddr>,
    /// PEM certificate chain for TLS (reread on SIGHUP).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key for TLS.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Refuse requests without a key instead of serving them as `public`.
    #[arg(long)]
    require_key: bool,
    /// Serve OAuth 2.1 for connectors (claude.ai, Claude Desktop, ChatGPT)
    /// as the issuer at this URL (https://…; http only for a loopback
    /// address). Requests without credentials then get the OAuth challenge
    /// instead of `public`.
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,
    /// A host (`host` or `host:port`) whose OAuth client metadata documents
    /// may be fetched although it resolves to an internal address (an
    /// intranet client); every other document must be at a public address.
    #[arg(long, value_name = "HOST[:PORT]", requires = "public_url")]
    oauth_document_host: Vec<String>,
    /// Requests per second per key (per address for keyless requests); the
    /// default is `[serve] rate_per_key` in gatehouse.toml, else 100.
    #[arg(long, value_name = "N")]
    rate: Option<f64>,
    /// The largest request body, in bytes.
    #[arg(long, value_name = "BYTES")]
    max_body: Option<usize>,
    /// Requests served at once.
    #[arg(long, value_name = "N")]
    max_in_flight: Option<usize>,
    /// Seconds in-flight requests get to finish after SIGTERM.
    #[arg(long, value_name = "SECONDS")]
    drain: Option<u64>,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,
    /// Log lines as text or json (stderr; keys and header values never logged).
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
    /// Stop (as on SIGTERM) when standard input closes: a supervisor that
    /// dies, however it dies, takes this server with it.
    #[arg(long)]
    stop_on_stdin_close: bool,
}

pub async fn run(ctx: &Ctx, args: ServeArgs) -> Result<String> {
    let mut opts = Options::new(args.listen);
    opts.hosts = args.allow_host;
    opts.origins = args.allow_origin;
    opts.behind_proxy = args.behind_proxy;
    opts.require_key = args.require_key;
    if let Some(url) = &args.public_url {
        opts.oauth = Some(gatehouse_core::access::oauth::flow::Issuer::new(url)?);
    }
    opts.oauth_document_hosts = args.oauth_document_host;
    opts.metrics_listen = args.metrics_listen;
    if let (Some(cert), Some(key)) = (args.tls_cert, args.tls_key) {
        opts.tls = Some(TlsFiles { cert, key });
    }
    // The flag, else `[serve] rate_per_key` in gatehouse.toml, else the default.
    let rate = args.rate.or_else(|| {
        site::read_site_file(&ctx.settings.dir)
            .ok()
            .and_then(|f| f.serve)
            .and_then(|s| s.rate_per_key)
    });
    if let Some(r) = rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(Error::new(
                codes::INPUT_INVALID,
                format!("the request rate must be a positive number, not {r}"),
            )
            .hint("give --rate N or [serve] rate_per_key = N in gatehouse.toml, in requests per second"));
        }
        opts.limits.key_rate = Rate {
            per_second: r,
            burst: (r * 2.0).max(1.0),
        };
    }
    if let Some(b) = args.max_body {
        opts.limits.max_body_bytes = b;
    }
    if let Some(n) = args.max_in_flight {
        opts.limits.max_in_flight = n;
    }
    if let Some(d) = args.drain {
        opts.limits.drain = Duration::from_secs(d);
    }
    // Refuse an unsafe exposure before the site is even opened.
    http::check_exposure(&opts)?;
    let site = ctx.open().await?;
    let scheme = if opts.tls.is_some() { "https" } else { "http" };
    let stop = stop_when(args.stop_on_stdin_close);
    let served = http::run(site.clone(), opts, stop, |addr| {
        // The one line a supervisor or a test waits for.
        eprintln!("gatehouse serve: listening on {scheme}://{addr}/mcp");
    })
    .await;
    site.close().await;
    served.map(|_| String::new())
}

/// The signals `serve` obeys, and the end of standard input when asked: the
/// desktop app holds the other end of the pipe, and the kernel closes it
/// when the app exits, crashes or is killed (no orphaned server on any
/// system, Windows included, where there is no SIGTERM to send).
async fn stop_when(stdin_close: bool) -> http::Stopped {
    let stdin_closed = async {
        if !stdin_close {
            return std::future::pending().await;
        }
        use tokio::io::AsyncReadExt as _;
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 256];
        // Bytes written to the pipe mean nothing; only its end counts.
        while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
        http::Stopped::Requested
    };
    tokio::select! {
        s = http::stop_signal() => s,
        s = stdin_closed => s,
    }
}
