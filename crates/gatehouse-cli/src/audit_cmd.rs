//! `gatehouse audit verify|list|checkpoint export`.

use clap::Subcommand;
use gatehouse_core::Result;
use gatehouse_core::access::audit;
use gatehouse_core::access::keys::rfc3339;
use gatehouse_core::error::{Error, codes};
use gatehouse_core::site::checkpoint;

use crate::Ctx;
use crate::output::{table, to_json};

#[derive(Subcommand)]
pub enum AuditCommand {
    /// Check the whole hash chain and the signed checkpoints of it; names the
    /// first entry altered, removed or reordered.
    Verify {
        /// Also check against a checkpoint kept elsewhere (from `audit checkpoint export`).
        #[arg(long, value_name = "FILE")]
        checkpoint: Option<std::path::PathBuf>,
        /// The public key (hex, from `audit key`) of the machine that exported
        /// the checkpoint, when it is not this one (repeatable).
        #[arg(long = "trust-key", value_name = "KEY", requires = "checkpoint")]
        trust_keys: Vec<String>,
    },
    /// Show the newest entries.
    List {
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
    /// Signed checkpoints of the chain's head.
    #[command(subcommand)]
    Checkpoint(CheckpointCommand),
    /// Print this machine's audit signing key (public half, hex): what
    /// another admin passes to `site import --trust-key` for your exports.
    Key,
}

#[derive(Subcommand)]
pub enum CheckpointCommand {
    /// Sign the current head and print it, to keep somewhere the database's
    /// users cannot write (check it later with `audit verify --checkpoint FILE`).
    Export,
}

pub async fn run(ctx: &Ctx, cmd: AuditCommand) -> Result<String> {
    let site = ctx.open().await?;
    let store = &site.store;
    let json = ctx.json;
    let out = match cmd {
        AuditCommand::Verify {
            checkpoint: file,
            trust_keys,
        } => {
            let extra = match file {
                Some(path) => Some(checkpoint::parse_trusted(
                    &std::fs::read_to_string(&path).map_err(|e| {
                        Error::new(
                            codes::IO_ERROR,
                            format!("cannot read {}: {e}", path.display()),
                        )
                    })?,
                    &trust_keys,
                )?),
                None => None,
            };
            let report = checkpoint::verify(&site, extra.as_ref()).await?;
            store.close().await;
            audit::require_ok(&report)?;
            if json {
                to_json(&report)
            } else {
                let ok = match report.anchored_at {
                    Some(seq) => format!(
                        "audit chain ok: {} entries, matching the signed checkpoint at entry {seq}",
                        report.entries
                    ),
                    None => format!(
                        "audit chain ok: {} entries (no signed checkpoint from this machine yet)",
                        report.entries
                    ),
                };
                std::iter::once(ok)
                    .chain(report.imported.iter().map(|i| i.describe()))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        }
        AuditCommand::Key => {
            store.close().await;
            let signer = checkpoint::signer::Signer::load_or_create(
                &gatehouse_core::host_env::config_dir()?,
            )?;
            // Where it is kept goes to stderr: stdout is the key alone, for scripts.
            if let Some(place) = signer.place() {
                eprintln!("kept in {place}");
            }
            signer.public_hex()
        }
        AuditCommand::Checkpoint(CheckpointCommand::Export) => {
            let text = checkpoint::export(&site).await;
            store.close().await;
            text?
        }
        AuditCommand::List { limit } => {
            let rows = audit::list(store, limit).await?;
            store.close().await;
            if json {
                to_json(&rows)
            } else {
                table(
                    &["seq", "time", "actor", "action", "subject"],
                    rows.iter()
                        .map(|r| {
                            vec![
                                r.seq.to_string(),
                                rfc3339(r.ts),
                                r.actor.clone(),
                                r.action.clone(),
                                r.subject.clone(),
                            ]
                        })
                        .collect(),
                )
            }
        }
    };
    Ok(out)
}
