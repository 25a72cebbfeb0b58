//! `gatehouse oauth grants|revoke|approve`: the grants OAuth clients hold,
//! and the pairing codes their consent pages show.

use clap::Subcommand;
use gatehouse_core::Result;
use gatehouse_core::access::oauth::{flow, grants};
use gatehouse_core::time::rfc3339;

use crate::Ctx;
use crate::keys_cmd::CLI_ACTOR;
use crate::output::{table, to_json};

#[derive(Subcommand)]
pub enum OAuthCommand {
    /// List grants: client, redirect host, the key they act as, scopes, use.
    Grants {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a grant and its tokens now.
    Revoke { id: String },
    /// Approve the pairing code a consent page shows: the application will
    /// act as this key (never more than it may do).
    Approve {
        code: String,
        #[arg(long, value_name = "ID")]
        key_id: String,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(ctx: &Ctx, cmd: OAuthCommand) -> Result<String> {
    let site = ctx.open().await?;
    let store = &site.store;
    Ok(match cmd {
        OAuthCommand::Grants { json } => {
            let list = grants::list(store).await?;
            if json {
                to_json(&list)
            } else {
                let when = |t: Option<i64>| t.map(rfc3339).unwrap_or_else(|| "-".into());
                table(
                    &[
                        "id",
                        "client",
                        "redirect host",
                        "key",
                        "scopes",
                        "created",
                        "last used",
                        "from",
                        "status",
                    ],
                    list.iter()
                        .map(|g| {
                            vec![
                                g.id.clone(),
                                g.client_name.clone(),
                                g.redirect_host.clone(),
                                g.key_id.clone(),
                                g.scopes.clone(),
                                rfc3339(g.created_at),
                                when(g.last_used_at),
                                g.created_from.clone().unwrap_or_else(|| "-".into()),
                                match (&g.revoked_at, &g.revoked_reason) {
                                    (Some(_), Some(r)) => format!("revoked: {r}"),
                                    (Some(_), None) => "revoked".into(),
                                    _ => "active".into(),
                                },
                            ]
                        })
                        .collect(),
                )
            }
        }
        OAuthCommand::Approve { code, key_id, json } => {
            let a = flow::approve_pairing(store, CLI_ACTOR, &code, &key_id).await?;
            if json {
                to_json(&a)
            } else {
                format!(
                    "approved {code}: {} ({}) may act as key {} with {}; the page can continue now",
                    a.client_name, a.redirect_uri, a.key_id, a.scopes
                )
            }
        }
        OAuthCommand::Revoke { id } => {
            grants::revoke(store, CLI_ACTOR, &id).await?;
            format!("revoked OAuth grant {id}")
        }
    })
}
