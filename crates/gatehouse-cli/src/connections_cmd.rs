//! `gatehouse connections add|list|show|approve|remove`: MCP servers stored in
//! the site, their isolation profile and their tool pin.

use clap::{Args, Subcommand};
use gatehouse_core::Result;
use gatehouse_core::connections::saved::{self, SavedConnection, SavedLimits};
use gatehouse_core::error::{Error, codes};
use gatehouse_core::sandbox::{Backend, ChildSpec, EnvValue, Profile};

use crate::Ctx;
use crate::output;

#[derive(Subcommand)]
pub enum ConnectionsCommand {
    /// Store a connection: `add NAME [flags] -- CMD ARGS…`.
    Add(Box<AddArgs>),
    /// List stored connections.
    List,
    /// Show one connection: command, limits, isolation profile, tool pin.
    Show { name: String },
    /// Approve the tool change a connection is held for (shown in its refusal).
    Approve { name: String },
    /// Remove a stored connection.
    Remove { name: String },
}

#[derive(Args)]
pub struct AddArgs {
    /// Name to refer to the connection by (lowercase letters, digits, - and _).
    name: String,
    /// A plain variable for the server, `K=V` (repeatable).
    #[arg(long = "env", value_name = "K=V")]
    env: Vec<String>,
    /// Pass the host's variable NAME through (repeatable; `K=NAME` renames it).
    #[arg(long = "env-from-host", value_name = "NAME")]
    env_from_host: Vec<String>,
    /// A secret the server gets as K, read from the host's K when connecting;
    /// never stored, logged or shown (`K=NAME` reads host variable NAME).
    #[arg(long = "secret", value_name = "K")]
    secret: Vec<String>,
    /// Total deadline of each call, e.g. 30s.
    #[arg(long)]
    timeout: Option<String>,
    /// Inactivity timeout of each call (progress resets it), e.g. 10s.
    #[arg(long)]
    inactivity: Option<String>,
    /// Memory ceiling of the server's process group, e.g. 512MiB; unset: the
    /// site's default ([limits] max_rss_mib in gatehouse.toml, 1 GiB when absent).
    #[arg(long = "max-rss")]
    max_rss: Option<String>,
    /// CPU-time ceiling of the server's process group, e.g. 60s; unset: the
    /// site's default ([limits] max_cpu_seconds, 10 min when absent).
    #[arg(long = "max-cpu")]
    max_cpu: Option<String>,
    /// Isolation backend: landlock (default), bwrap, or none.
    #[arg(long = "sandbox", value_name = "BACKEND")]
    sandbox: Option<String>,
    /// A path the server may read (repeatable); nothing else of the user's files is visible.
    #[arg(long = "allow-read", value_name = "PATH")]
    allow_read: Vec<std::path::PathBuf>,
    /// A path the server may write (repeatable), besides its scratch directory.
    #[arg(long = "allow-write", value_name = "PATH")]
    allow_write: Vec<std::path::PathBuf>,
    /// Let the server use TCP (off by default).
    #[arg(long)]
    network: bool,
    /// A TCP port the server may connect to without --network (repeatable;
    /// any address; landlock backend only).
    #[arg(long = "allow-port", value_name = "PORT")]
    allow_port: Vec<u16>,
    /// Scratch disk quota, e.g. 256MiB (the server is stopped past it).
    #[arg(long = "scratch-quota")]
    scratch_quota: Option<String>,
    /// Processes the server may add (RLIMIT_NPROC above the user's current count).
    #[arg(long = "max-processes")]
    max_processes: Option<u64>,
    /// Open files per process (RLIMIT_NOFILE).
    #[arg(long = "max-open-files")]
    max_open_files: Option<u64>,
    /// Let the server open UNIX sockets, named ones included (off: it cannot
    /// reach the user's D-Bus or Docker socket). Landlock backend only.
    #[arg(long = "allow-unix-sockets")]
    allow_unix_sockets: bool,
    /// Scheduling niceness, 0 (as the host) to 19; default 10, below the
    /// admin's own programs.
    #[arg(long = "nice")]
    nice: Option<u8>,
    /// The server command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

fn split_pair(s: &str) -> (String, String) {
    match s.split_once('=') {
        Some((k, v)) => (k.to_string(), v.to_string()),
        None => (s.to_string(), s.to_string()),
    }
}

pub async fn run(ctx: &Ctx, cmd: ConnectionsCommand) -> Result<String> {
    let site = ctx.open().await?;
    let json = ctx.json;
    let out = match cmd {
        ConnectionsCommand::Add(a) => add(&site, *a).await,
        ConnectionsCommand::List => list(&site, json).await,
        ConnectionsCommand::Show { name } => saved::show(&site, &name).await.map(|v| {
            if json {
                output::to_json(&v)
            } else {
                show_text(&v)
            }
        }),
        ConnectionsCommand::Approve { name } => {
            saved::approve(&site.store, crate::keys_cmd::CLI_ACTOR, &name)
                .await
                .map(|a| {
                    if json {
                        output::to_json(&a)
                    } else {
                        // What was pinned, so the approver sees it was what
                        // they reviewed.
                        let pinned = match (&a.approved_sha256, a.diff.summary()) {
                            (None, _) => "; the list after it could not be read, so the old pin stays and the next connect is checked against it".to_string(),
                            (Some(_), s) if s.is_empty() => String::new(),
                            (Some(_), s) => format!(":\n{s}"),
                        };
                        format!(
                            "approved the tool change of {name} ({}){pinned}",
                            a.reason.as_str()
                        )
                    }
                })
        }
        ConnectionsCommand::Remove { name } => {
            saved::remove(&site.store, crate::keys_cmd::CLI_ACTOR, &name)
                .await
                .map(|()| format!("removed connection {name}"))
        }
    };
    site.close().await;
    out
}

async fn add(site: &gatehouse_core::site::Site, a: AddArgs) -> Result<String> {
    let mut spec = ChildSpec::new(&a.command[0]);
    spec.args = a.command[1..].to_vec();
    for e in &a.env {
        let Some((k, v)) = e.split_once('=') else {
            return Err(Error::invalid(
                codes::ENV_INVALID,
                format!("--env {e:?} is not K=V"),
                "write --env NAME=value",
            ));
        };
        spec.env.insert(
            k.to_string(),
            EnvValue::Plain {
                value: v.to_string(),
            },
        );
    }
    for e in &a.env_from_host {
        let (k, host) = split_pair(e);
        spec.env.insert(k, EnvValue::FromHost { name: host });
    }
    for e in &a.secret {
        let (k, host) = split_pair(e);
        spec.env.insert(k, EnvValue::SecretFromHost { name: host });
    }
    let limits = SavedLimits {
        timeout_ms: a
            .timeout
            .as_deref()
            .map(gatehouse_core::time::parse_duration)
            .transpose()?
            .map(|d| d.as_millis() as u64),
        inactivity_ms: a
            .inactivity
            .as_deref()
            .map(gatehouse_core::time::parse_duration)
            .transpose()?
            .map(|d| d.as_millis() as u64),
        max_rss_bytes: a.max_rss.as_deref().map(saved::parse_size).transpose()?,
        max_cpu_ms: a
            .max_cpu
            .as_deref()
            .map(gatehouse_core::time::parse_duration)
            .transpose()?
            .map(|d| d.as_millis() as u64),
        sandbox: Profile {
            backend: a
                .sandbox
                .as_deref()
                .map(Backend::parse)
                .transpose()?
                .unwrap_or_default(),
            read_only: a.allow_read,
            read_write: a.allow_write,
            network: a.network,
            unix_sockets: a.allow_unix_sockets,
            connect_ports: a.allow_port,
            scratch_quota_bytes: a
                .scratch_quota
                .as_deref()
                .map(saved::parse_size)
                .transpose()?,
            max_processes: a.max_processes,
            max_open_files: a.max_open_files,
            max_memory_bytes: None,
            max_cpu_ms: None,
            nice: a.nice,
        },
    };
    let conn = SavedConnection {
        name: a.name.clone(),
        spec,
        limits,
        created_at: gatehouse_core::time::now_ms(),
    };
    saved::add(&site.store, crate::keys_cmd::CLI_ACTOR, &conn).await?;
    Ok(format!("added connection {}", a.name))
}

async fn list(site: &gatehouse_core::site::Site, json: bool) -> Result<String> {
    let all = saved::list(&site.store).await?;
    if json {
        return Ok(output::to_json(&all));
    }
    let rows = all
        .iter()
        .map(|c| {
            let mut cmd = vec![c.spec.program.clone()];
            cmd.extend(c.spec.args.iter().cloned());
            vec![
                c.name.clone(),
                c.limits.sandbox.backend.as_str().to_string(),
                cmd.join(" "),
                c.spec.env.keys().cloned().collect::<Vec<_>>().join(","),
            ]
        })
        .collect();
    Ok(output::table(&["NAME", "SANDBOX", "COMMAND", "ENV"], rows))
}

/// A CPU-time budget in the largest whole unit (`10 min`, `90 s`, `1500 ms`).
fn cpu_text(ms: u64) -> String {
    match ms {
        ms if ms % 60_000 == 0 => format!("{} min", ms / 60_000),
        ms if ms % 1000 == 0 => format!("{} s", ms / 1000),
        ms => format!("{ms} ms"),
    }
}

fn show_text(v: &saved::ConnectionView) -> String {
    let c = &v.connection;
    let mut cmd = vec![c.spec.program.clone()];
    cmd.extend(c.spec.args.iter().cloned());
    let mut out = format!(
        "{}
  command: {}
",
        c.name,
        cmd.join(" ")
    );
    let env: Vec<&str> = c.spec.env.keys().map(String::as_str).collect();
    if !env.is_empty() {
        out.push_str(&format!(
            "  env: {}
",
            env.join(", ")
        ));
    }
    out.push_str(&crate::probe_cmd::profile_text(&c.limits.sandbox));
    let whose = |default: bool| if default { " (site default)" } else { "" };
    out.push_str(&format!(
        "  max memory: {} MiB{}
  max CPU time: {}{}
",
        v.ceilings.max_rss_bytes >> 20,
        whose(v.ceilings.max_rss_default),
        cpu_text(v.ceilings.max_cpu_ms),
        whose(v.ceilings.max_cpu_default),
    ));
    if v.isolation.landlock_abi > 0 {
        out.push_str(&format!(
            "  Landlock ABI here: {}\n",
            v.isolation.landlock_abi
        ));
    }
    out.push_str(&crate::probe_cmd::layers_text(&v.isolation));
    for w in &v.isolation.warnings {
        out.push_str(&format!("  warning: {w}\n"));
    }
    match &v.pin {
        Some(p) => out.push_str(&crate::probe_cmd::pin_text(&c.name, p)),
        None => out.push_str("  tools: not pinned yet (the first connect pins them)\n"),
    }
    out
}
