//! `gatehouse approvals list|show|approve|deny`: the site owner's queue of
//! calls held for a yes (see `gatehouse_core::access::approvals`). Decisions
//! are made as the terminal's owner (`cli`) or, with `--email`, as an admin
//! user; a key never decides.

use clap::Subcommand;
use gatehouse_core::Result;
use gatehouse_core::access::actor;
use gatehouse_core::access::approvals::{self, Decision, HeldCall};
use gatehouse_core::access::keys::rfc3339;

use crate::Ctx;
use crate::actor_flags::ActorArgs;
use crate::keys_cmd::CLI_ACTOR;
use crate::output::{table, to_json};

#[derive(Subcommand)]
pub enum ApprovalsCommand {
    /// List the calls waiting for a decision (--all: every held call).
    List {
        #[arg(long)]
        all: bool,
    },
    /// Show one held call: who, what, its arguments and, for content, the diff.
    Show { id: String },
    /// Approve a held call: the waiting server runs it.
    Approve {
        id: String,
        #[command(flatten)]
        actor: ActorArgs,
    },
    /// Deny a held call: the client gets a refusal.
    Deny {
        id: String,
        #[command(flatten)]
        actor: ActorArgs,
    },
}

pub async fn run(ctx: &Ctx, cmd: ApprovalsCommand) -> Result<String> {
    let site = ctx.open().await?;
    let out = run_on(&site, cmd, ctx.json).await;
    site.close().await;
    out
}

async fn run_on(
    site: &gatehouse_core::site::Site,
    cmd: ApprovalsCommand,
    json: bool,
) -> Result<String> {
    let store = &site.store;
    Ok(match cmd {
        ApprovalsCommand::List { all } => {
            // Holds whose server is gone are recorded as not run before listing.
            approvals::sweep(store).await?;
            let list = approvals::list(store, all).await?;
            if json {
                to_json(&list)
            } else if list.is_empty() {
                "no calls are waiting for a decision".into()
            } else {
                table(
                    &[
                        "id", "status", "caller", "tool", "held", "expires", "summary",
                    ],
                    list.iter()
                        .map(|h| {
                            vec![
                                h.id.clone(),
                                h.status.to_string(),
                                h.actor.clone(),
                                h.tool.clone(),
                                rfc3339(h.created_at),
                                rfc3339(h.expires_at),
                                h.summary.clone(),
                            ]
                        })
                        .collect(),
                )
            }
        }
        ApprovalsCommand::Show { id } => {
            let h = approvals::get(store, &id).await?;
            if json { to_json(&h) } else { shown(&h) }
        }
        ApprovalsCommand::Approve { id, actor } => {
            decide(site, &id, Decision::Approve, &actor, json).await?
        }
        ApprovalsCommand::Deny { id, actor } => {
            decide(site, &id, Decision::Deny, &actor, json).await?
        }
    })
}

async fn decide(
    site: &gatehouse_core::site::Site,
    id: &str,
    decision: Decision,
    flags: &ActorArgs,
    json: bool,
) -> Result<String> {
    let flags = flags.flags();
    let who = match flags.source()? {
        None => None,
        Some(_) => Some(actor::resolve(&site.store, site.is_scratch(), &flags).await?),
    };
    let by = approvals::decider_label(CLI_ACTOR, who.as_ref())?;
    let h = approvals::decide(&site.store, id, decision, &by).await?;
    Ok(if json {
        to_json(&h)
    } else {
        format!("{} {}: {} ({})", h.status, h.id, h.summary, h.tool)
    })
}

fn shown(h: &HeldCall) -> String {
    let mut out = format!(
        "{}\n\nid        {}\nstatus    {}\ncaller    {}\ntool      {}\nheld      {} by {}\nexpires   {}\ndecider   {}\nargs sha  {}\narguments {}\n",
        h.summary,
        h.id,
        h.status,
        h.actor,
        h.tool,
        rfc3339(h.created_at),
        h.holder,
        rfc3339(h.expires_at),
        h.decider,
        h.args_sha256,
        serde_json::to_string_pretty(&h.arguments).unwrap_or_default(),
    );
    if let (Some(by), Some(at)) = (&h.decided_by, h.decided_at) {
        out.push_str(&format!("decided   {} by {by}\n", rfc3339(at)));
    }
    if let Some(diff) = &h.diff {
        out.push('\n');
        out.push_str(diff);
    }
    out
}
