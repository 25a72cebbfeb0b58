//! `gatehouse`: parse the command line, make one core call, print, exit.
//!
//! Errors go to stderr as `error[CODE]: message` plus a hint (and as a JSON
//! object with `--json`); stdout carries only the result, so scripts can pipe it.

mod actor_flags;
mod approvals_cmd;
mod audit_cmd;
mod call_cmd;
mod config_cmd;
mod config_doctor_cmd;
mod config_install_cmd;
mod config_mcpb_cmd;
mod connections_cmd;
mod interrupt;
mod keys_cmd;
mod mcp_cmd;
mod oauth_cmd;
mod output;
mod permissions_cmd;
mod probe_cmd;
mod serve_cmd;
mod site_cmd;
mod site_config_cmd;
mod tail_cmd;
mod users_cmd;
mod whoami_cmd;

/// mimalloc instead of glibc's allocator: the server's calls allocate and free
/// many small JSON values across runtime threads (docs/decisions.md).
#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use gatehouse_core::site::{self, Flags, Settings};

/// `gatehouse --version`: the package version and the git commit it was built
/// from (stamped by `build.rs`), e.g. `gatehouse 0.1.0 (a1b2c3d)`.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("GATEHOUSE_GIT_COMMIT"),
    ")"
);

#[derive(Parser)]
#[command(
    name = "gatehouse",
    version = VERSION,
    about = "Safe, scoped MCP access to your site for AI clients"
)]
struct Cli {
    /// The site folder (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    site: Option<PathBuf>,
    /// Database URL (sqlite:// or postgres://); default: the site's embedded SQLite file.
    #[arg(long, global = true, value_name = "URL")]
    database_url: Option<String>,
    /// Print the result, and any error, as JSON.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create a site.
    #[command(subcommand)]
    Site(site_cmd::SiteCommand),
    /// Mint, list, roll and revoke API keys.
    #[command(subcommand)]
    Keys(keys_cmd::KeysCommand),
    /// List and revoke the grants OAuth clients hold (`serve --public-url`).
    #[command(subcommand)]
    Oauth(oauth_cmd::OAuthCommand),
    /// Manage the site's users.
    #[command(subcommand)]
    Users(users_cmd::UsersCommand),
    /// Print the actor these flags resolve to.
    Whoami(whoami_cmd::WhoamiArgs),
    /// The calls held for a person's yes: list, show, approve, deny.
    #[command(subcommand)]
    Approvals(approvals_cmd::ApprovalsCommand),
    /// Verify and list the audit log.
    #[command(subcommand)]
    Audit(audit_cmd::AuditCommand),
    /// Print the permission table.
    Permissions(permissions_cmd::PermissionsArgs),
    /// Print ready-to-paste MCP configuration for an AI client.
    Config(Box<config_cmd::ConfigArgs>),
    /// Serve MCP over stdio for an AI client (both protocol eras).
    Mcp(mcp_cmd::McpArgs),
    /// Serve MCP over Streamable HTTP at /mcp (keys per request).
    Serve(serve_cmd::ServeArgs),
    /// Store, list and remove MCP servers to connect to.
    #[command(subcommand)]
    Connections(connections_cmd::ConnectionsCommand),
    /// Connect to a stored server, negotiate, list its tools, disconnect.
    Probe(probe_cmd::ProbeArgs),
    /// Call one tool of a stored server (recorded in the site).
    Call(call_cmd::CallArgs),
    /// Connect to a stored server and follow its stderr.
    Tail(tail_cmd::TailArgs),
}

/// Context every subcommand gets: the resolved site settings and `--json`.
pub struct Ctx {
    pub settings: Settings,
    pub json: bool,
}

impl Ctx {
    pub async fn open(&self) -> gatehouse_core::Result<site::Site> {
        site::open(&self.settings).await
    }
}

/// Logging starts once the arguments are parsed: `gatehouse serve` logs JSON
/// when `--log-format json` or `[serve] log_format` says so.
fn init_tracing(json: bool) {
    // stdout is for results (and the MCP protocol): diagnostics go to stderr, no ANSI.
    let filter = tracing_subscriber::EnvFilter::try_from_env("GATEHOUSE_LOG")
        .unwrap_or_else(|_| "warn".into());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// The site folder as [`run`] will resolve it, for the choice of log format.
fn site_dir(cli: &Cli) -> Option<PathBuf> {
    let flags = Flags {
        site: cli.site.clone(),
        database_url: None,
    };
    Settings::resolve(&flags, gatehouse_core::host_env::host_var)
        .ok()
        .map(|s| s.dir)
}

#[allow(unsafe_code)]
fn main() -> ExitCode {
    // SAFETY: no other thread exists yet (tracing starts none, the runtime
    // is built below).
    unsafe { gatehouse_core::host_env::take_host_secrets() };
    let cli = Cli::try_parse();
    let json_logs = match &cli {
        Ok(
            parsed @ Cli {
                command: Command::Serve(args),
                ..
            },
        ) => args.json_logs(site_dir(parsed).as_deref()),
        _ => false,
    };
    init_tracing(json_logs);
    // Non-dumpable (children cannot read our environment or memory through
    // /proc) and the subreaper of escaped descendants.
    if let Err(e) = gatehouse_core::sandbox::harden_host() {
        tracing::warn!(error = %e, "host hardening failed");
    }
    let cli = match cli {
        Ok(cli) => cli,
        Err(e) => return output::parse_failed(&e, asked_for_json(std::env::args_os())),
    };
    // `gatehouse mcp` answers each call on one thread, end to end: stdin,
    // the tool, its audit commit and stdout (see mcp::server's `stdio`); more
    // workers would only add thread wake-ups to every call.
    let mut runtime = match cli.command {
        Command::Mcp(_) => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    runtime
        .enable_all()
        .build()
        .expect("the async runtime starts")
        .block_on(run(cli))
}

async fn run(cli: Cli) -> ExitCode {
    let json = cli.json;
    let settings = match Settings::resolve(
        &Flags {
            site: cli.site.clone(),
            database_url: cli.database_url.clone(),
        },
        gatehouse_core::host_env::host_var,
    ) {
        Ok(s) => s,
        Err(e) => return output::fail(&e, json),
    };
    let ctx = Ctx { settings, json };
    let result = match cli.command {
        Command::Site(c) => site_cmd::run(&ctx, c).await,
        Command::Keys(c) => keys_cmd::run(&ctx, c).await,
        Command::Oauth(c) => oauth_cmd::run(&ctx, c).await,
        Command::Users(c) => users_cmd::run(&ctx, c).await,
        Command::Whoami(a) => whoami_cmd::run(&ctx, a).await,
        Command::Audit(c) => audit_cmd::run(&ctx, c).await,
        Command::Approvals(c) => approvals_cmd::run(&ctx, c).await,
        Command::Permissions(a) => permissions_cmd::run(a),
        Command::Config(a) => config_cmd::run(&ctx, *a).await,
        Command::Mcp(a) => mcp_cmd::run(&ctx, a).await,
        Command::Serve(a) => serve_cmd::run(&ctx, a).await,
        Command::Connections(c) => connections_cmd::run(&ctx, c).await,
        Command::Probe(a) => probe_cmd::run(&ctx, a).await,
        Command::Call(a) => call_cmd::run(&ctx, a).await,
        Command::Tail(a) => tail_cmd::run(&ctx, a).await,
    };
    match result {
        Ok(text) => {
            output::print(&text);
            ExitCode::SUCCESS
        }
        Err(e) => output::fail(&e, json),
    }
}

/// Whether the raw arguments ask for JSON: the parsed flag does not exist when
/// parsing failed, yet a script that passed `--json` still reads the error as
/// JSON. Anything after `--` is an operand (a connection's command), not ours.
fn asked_for_json(args: impl IntoIterator<Item = std::ffi::OsString>) -> bool {
    args.into_iter()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(argv: &[&str]) -> bool {
        asked_for_json(argv.iter().map(std::ffi::OsString::from))
    }

    #[test]
    fn json_is_asked_before_the_operands_only() {
        assert!(asked(&["gatehouse", "keys", "list", "--json"]));
        assert!(asked(&["gatehouse", "--json", "keys", "--bogus"]));
        assert!(!asked(&[
            "gatehouse",
            "connections",
            "add",
            "x",
            "--",
            "srv",
            "--json"
        ]));
    }
}
