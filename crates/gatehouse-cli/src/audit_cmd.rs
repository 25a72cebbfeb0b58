//! `gatehouse audit verify|list`.

use clap::Subcommand;
use gatehouse_core::Result;
use gatehouse_core::access::audit;
use gatehouse_core::access::keys::rfc3339;

use crate::Ctx;
use crate::output::{table, to_json};

#[derive(Subcommand)]
pub enum AuditCommand {
    /// Check the whole hash chain; names the first entry altered, removed or reordered.
    Verify {
        #[arg(long)]
        json: bool,
    },
    /// Show the newest entries.
    List {
        #[arg(long, default_value_t = 50)]
        limit: i64,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(ctx: &Ctx, cmd: AuditCommand) -> Result<String> {
    let site = ctx.open().await?;
    let store = &site.store;
    let out = match cmd {
        AuditCommand::Verify { json } => {
            let report = audit::verify(store).await?;
            store.close().await;
            audit::require_ok(&report)?;
            if json {
                to_json(&report)
            } else {
                format!("audit chain ok: {} entries", report.entries)
            }
        }
        AuditCommand::List { limit, json } => {
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
