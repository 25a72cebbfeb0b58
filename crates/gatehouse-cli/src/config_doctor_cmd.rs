//! `gatehouse config doctor`: finds the MCP clients configured on this machine
//! (by their files under `HOME` and in the project folder) and checks every
//! Gatehouse entry in them; a remote entry's server is called with the entry's
//! key (or `GATEHOUSE_API_KEY` from this shell, where the entry references it;
//! a project's URLs and database servers only with `--trust-project`). Prints a report (or `--json`); exits non-zero with
//! `CONFIG_DOCTOR_PROBLEMS` when any check failed or warned, so scripts can
//! gate on it.

use std::path::PathBuf;

use clap::Args;
use gatehouse_core::access::actor::ActorFlags;
use gatehouse_core::client_config::doctor::Status;
use gatehouse_core::client_config::{self, DoctorOptions, DoctorReport, Home};
use gatehouse_core::error::{Error, Result, codes};

use crate::output;

#[derive(Args)]
pub struct DoctorArgs {
    /// The project folder whose project files to check [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Reach the hosts the project's files name: call a remote entry's URL,
    /// open a site whose database is on a server. Off by default: a cloned
    /// repository's files may name any host.
    #[arg(long)]
    pub trust_project: bool,
}

pub async fn run(args: DoctorArgs, json: bool) -> Result<String> {
    let project = match args.project {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(|e| {
            Error::new(
                codes::IO_ERROR,
                format!("cannot read the current directory: {e}"),
            )
        })?,
    };
    // Taken out of the environment at start (see main), so read through core:
    // a remote entry that references the key is called with it, as its
    // client would call it.
    let options = DoctorOptions {
        env_key: ActorFlags::default()
            .with_env()
            .env_api_key
            .filter(|k| !k.expose().is_empty()),
        trust_project: args.trust_project,
    };
    let report = client_config::doctor_with(&Home::from_env()?, Some(&project), &options).await;
    let text = if json {
        output::to_json(&report)
    } else {
        render(&report)
    };
    if report.ok {
        return Ok(text);
    }
    // The report is the result; the error only sets the exit status.
    output::print(&text);
    Err(Error::new(
        codes::CONFIG_DOCTOR_PROBLEMS,
        "some Gatehouse entries have problems (see the report above)",
    )
    .hint("re-run `gatehouse config install CLIENT` for an entry, or mint a new key"))
}

fn render(report: &DoctorReport) -> String {
    if report.files.is_empty() {
        return "no MCP client configuration found".to_string();
    }
    let mut out = String::new();
    for file in &report.files {
        out.push_str(&format!(
            "{} ({}): {}\n",
            file.client_name,
            file.scope.as_str(),
            file.path.display()
        ));
        if let Some(error) = &file.error {
            out.push_str(&format!("  unreadable: {error}\n"));
        }
        if file.entries.is_empty() && file.error.is_none() {
            out.push_str("  no Gatehouse entry\n");
        }
        for entry in &file.entries {
            let remote = entry
                .url
                .as_ref()
                .map(|u| format!(" (remote, {u})"))
                .unwrap_or_default();
            out.push_str(&format!(
                "  {}{remote}: {}\n",
                entry.name,
                if entry.ok { "ok" } else { "PROBLEM" }
            ));
            for check in &entry.checks {
                let mark = match check.status {
                    Status::Pass => "ok  ",
                    Status::Warn => "warn",
                    Status::Fail => "FAIL",
                    Status::Skip => "skip",
                };
                out.push_str(&format!("    {mark} {:<8}{}\n", check.name, check.message));
            }
        }
    }
    out
}
