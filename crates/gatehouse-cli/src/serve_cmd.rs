//! `gatehouse serve`: the MCP server over Streamable HTTP at `/mcp`, for
//! remote clients and for many instances in front of one database. Every
//! request brings its own key (`Authorization: Bearer`), or is `public`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::Args;
use gatehouse_core::error::codes;
use gatehouse_core::mcp::server::http::{self, Options};
use gatehouse_core::site;
use gatehouse_core::site::serve::{Key, LogFormat, Raw, ServeTable};
use gatehouse_core::{Error, Result};

use crate::Ctx;

/// Each setting below (but `--stop-on-stdin-close` and `--no-serve-table`)
/// may be kept in the site's gatehouse.toml under `[serve]`, by the key
/// named in its help, and is then the default. Precedence, per setting:
/// the flag > `[serve]` > the built-in default. A flag given as empty
/// (`--public-url=`, `--allow-host=`, `--tls-cert= --tls-key=`) means "none"
/// and still wins; `--require-key=false` turns a saved `require_key` off.
#[derive(Args)]
#[command(after_help = SERVE_TABLE_HELP)]
pub struct ServeArgs {
    /// Where to listen (beyond loopback only with TLS or --behind-proxy).
    /// [serve] listen; default 127.0.0.1:8808.
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Another name clients reach this server by (its Host header); loopback
    /// names are always served. [serve] allow_hosts.
    #[arg(long, value_name = "HOST")]
    allow_host: Vec<String>,
    /// A web page's origin allowed to call from a browser (e.g.
    /// https://app.example.org); its preflight and answers get CORS headers.
    /// [serve] allow_origins.
    #[arg(long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// The TLS-terminating proxies in front: only their X-Forwarded-* headers
    /// count. [serve] behind_proxy.
    #[arg(long, value_name = "ADDR", num_args = 1..)]
    behind_proxy: Vec<String>,
    /// PEM certificate chain for TLS (reread on SIGHUP). [serve] tls_cert.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<OsString>,
    /// PEM private key for TLS. [serve] tls_key (its path; never the key).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<OsString>,
    /// Refuse requests without a key instead of serving them as `public`.
    /// [serve] require_key.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    require_key: Option<bool>,
    /// Serve OAuth 2.1 for connectors (claude.ai, Claude Desktop, ChatGPT)
    /// as the issuer at this URL (https://…; http only for a loopback
    /// address). Requests without credentials then get the OAuth challenge
    /// instead of `public`. [serve] public_url.
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,
    /// A host (`host` or `host:port`) whose OAuth client metadata documents
    /// may be fetched although it resolves to an internal address (an
    /// intranet client); every other document must be at a public address.
    /// Needs a public URL. [serve] oauth_document_hosts.
    #[arg(long, value_name = "HOST[:PORT]")]
    oauth_document_host: Vec<String>,
    /// Requests per second per key (per address for keyless requests).
    /// [serve] rate_per_key; default 100.
    #[arg(long, value_name = "N")]
    rate: Option<f64>,
    /// The largest request body, in bytes. [serve] max_body_bytes.
    #[arg(long, value_name = "BYTES")]
    max_body: Option<u64>,
    /// Requests served at once. [serve] max_in_flight.
    #[arg(long, value_name = "N")]
    max_in_flight: Option<u64>,
    /// Seconds in-flight requests get to finish after SIGTERM.
    /// [serve] drain_seconds; default 10.
    #[arg(long, value_name = "SECONDS")]
    drain: Option<u64>,
    /// Serve Prometheus metrics at http://ADDR/metrics. [serve] metrics_listen.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<String>,
    /// Log lines as text or json (stderr; keys and header values never
    /// logged). [serve] log_format; default text.
    #[arg(long, value_name = "FORMAT", value_parser = ["text", "json"])]
    log_format: Option<String>,
    /// Stop (as on SIGTERM) when standard input closes: a supervisor that
    /// dies, however it dies, takes this server with it.
    #[arg(long)]
    stop_on_stdin_close: bool,
    /// Ignore `[serve]` in gatehouse.toml for this run: only the flags and
    /// the built-in defaults apply.
    #[arg(long)]
    no_serve_table: bool,
}

const SERVE_TABLE_HELP: &str = "\
Settings kept in gatehouse.toml (flags win over them, for this run):
  [serve]
  listen = \"127.0.0.1:8808\"
  allow_hosts = [\"mcp.example.org\"]
  public_url = \"https://mcp.example.org\"
  behind_proxy = [\"127.0.0.1\"]
  require_key = true
Precedence: flag > [serve] > default. An empty flag (--public-url=, --allow-host=)
means none and still wins. No secret goes there: a value that looks like one is
refused (SERVE_SETTING_SECRET); TLS files are named by their paths.";

impl ServeArgs {
    /// The settings these flags give (only those given), each checked by
    /// serve's rules; an error names the flag.
    fn table(&self) -> Result<ServeTable> {
        let mut t = ServeTable::default();
        let mut set = |key: Key, raw: Raw<'_>| {
            t.set(key, raw).map_err(|e| {
                let message = format!("{}: {}", key.flag(), e.message);
                Error { message, ..e }
            })
        };
        if let Some(l) = &self.listen {
            set(Key::Listen, Raw::Text(l))?;
        }
        for (key, list) in [
            (Key::AllowHosts, &self.allow_host),
            (Key::AllowOrigins, &self.allow_origin),
            (Key::BehindProxy, &self.behind_proxy),
            (Key::OauthDocumentHosts, &self.oauth_document_host),
        ] {
            if !list.is_empty() {
                set(key, Raw::List(list))?;
            }
        }
        if let Some(url) = &self.public_url {
            set(Key::PublicUrl, Raw::Text(url))?;
        }
        // A path from the command line is the current directory's; serve
        // then runs with it absolute, as [serve] must hold it.
        for (key, path) in [(Key::TlsCert, &self.tls_cert), (Key::TlsKey, &self.tls_key)] {
            if let Some(path) = path {
                let path = if path.is_empty() {
                    PathBuf::new()
                } else {
                    std::path::absolute(path).map_err(|e| {
                        Error::new(
                            codes::IO_ERROR,
                            format!("bad path {}: {e}", path.to_string_lossy()),
                        )
                    })?
                };
                set(key, Raw::Text(&path.to_string_lossy()))?;
            }
        }
        if let Some(b) = self.require_key {
            set(Key::RequireKey, Raw::Bool(b))?;
        }
        if let Some(r) = self.rate {
            set(Key::RatePerKey, Raw::Number(r))?;
        }
        for (key, n) in [
            (Key::MaxBodyBytes, self.max_body),
            (Key::MaxInFlight, self.max_in_flight),
            (Key::DrainSeconds, self.drain),
        ] {
            if let Some(n) = n {
                set(key, Raw::Int(i64::try_from(n).unwrap_or(i64::MAX)))?;
            }
        }
        if let Some(m) = &self.metrics_listen {
            set(Key::MetricsListen, Raw::Text(m))?;
        }
        if let Some(f) = &self.log_format {
            set(Key::LogFormat, Raw::Text(f))?;
        }
        Ok(t)
    }

    /// `[serve]` of the site, unless `--no-serve-table`.
    fn saved(&self, dir: &Path) -> Result<ServeTable> {
        if self.no_serve_table {
            return Ok(ServeTable::default());
        }
        site::serve::read(dir)
    }

    /// Whether serve logs JSON: the flag, else `[serve] log_format`. Asked
    /// before logging starts, so a broken table is left for [`run`] to report.
    pub fn json_logs(&self, site_dir: Option<&Path>) -> bool {
        if let Some(f) = &self.log_format {
            return f == "json";
        }
        let Some(dir) = site_dir else { return false };
        self.saved(dir)
            .ok()
            .and_then(|t| t.log_format)
            .is_some_and(|f| f == LogFormat::Json)
    }
}

pub async fn run(ctx: &Ctx, args: ServeArgs) -> Result<String> {
    // Flag > [serve] > default, checked once by core's rules; an unsafe
    // exposure is refused before the site's database is even opened.
    let flags = args.table()?;
    let config = flags.over(&args.saved(&ctx.settings.dir)?).resolve()?;
    let opts = Options::from_config(&config);
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
