//! `gatehouse config install CLIENT`: merges the Gatehouse entry into the
//! client's own file for this OS (see `client_config::install`). stdout gets the
//! diff (any raw key masked), or the whole outcome with `--json`; stderr says
//! what was written, where the backup is, and what to do in the client.
//!
//! `HOME` (`USERPROFILE` on Windows) and the variables clients honour
//! (`XDG_CONFIG_HOME`, `APPDATA`, `CODEX_HOME`, ...) decide where user files
//! are, so a test points the command at a fixture home by setting `HOME`.

use std::path::PathBuf;

use clap::Args;
use gatehouse_core::client_config::{self, Home, InstallRequest};
use gatehouse_core::error::{Error, Result, codes};

use crate::Ctx;
use crate::config_cmd::ActorChoice;
use crate::output;

// No `Debug`: the flattened actor flags hold the raw `--api-key` text.
#[derive(Args)]
pub struct InstallArgs {
    /// The client (see `gatehouse config --help`).
    #[arg(value_name = "CLIENT")]
    pub client: String,
    /// user (every project) or project (this folder's file); claude-code also has local.
    /// Default: user where the client has a user file.
    #[arg(long, value_name = "SCOPE")]
    pub scope: Option<String>,
    /// Show the diff, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The project folder for project and local scopes [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    #[command(flatten)]
    pub who: ActorChoice,
}

pub fn run(ctx: &Ctx, args: InstallArgs) -> Result<String> {
    let project = match args.project {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(|e| {
            Error::new(
                codes::IO_ERROR,
                format!("cannot read the current directory: {e}"),
            )
        })?,
    };
    let request = InstallRequest {
        config: crate::config_cmd::request(ctx, &args.client, &args.who)?,
        scope: args.scope.as_deref().map(str::parse).transpose()?,
        home: Home::from_env()?,
        project: Some(client_config::client_path(&project)?),
        dry_run: args.dry_run,
        expected_hash: None,
    };
    let outcome = client_config::install(&request)?;
    if ctx.json {
        return Ok(output::to_json(&outcome));
    }
    let path = outcome.path.display();
    let what = if outcome.dry_run {
        format!(
            "dry run: {path} would {}",
            if outcome.changed {
                "change as shown"
            } else {
                "stay as it is"
            }
        )
    } else if !outcome.changed {
        format!("{path} already holds this entry; nothing written")
    } else {
        let backup = outcome
            .backup
            .as_ref()
            .map(|b| format!(" (previous version kept as {})", b.display()))
            .unwrap_or_default();
        format!(
            "wrote {} \"{}\" into {path}{backup}",
            outcome.client_name, outcome.server_name
        )
    };
    eprintln!("# {what}");
    eprintln!("# {}: {}", outcome.client_name, outcome.instructions);
    Ok(outcome.diff)
}
