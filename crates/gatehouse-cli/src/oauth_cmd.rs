//! `gatehouse oauth grants|revoke|approve`: the grants OAuth clients hold,
//! and the pairing codes their consent pages show.

use clap::Subcommand;
use gatehouse_core::Result;
use gatehouse_core::access::oauth::{Principal, flow, grants};
use gatehouse_core::error::{Error, codes};
use gatehouse_core::time::{now_ms, rfc3339};

use crate::Ctx;
use crate::keys_cmd::CLI_ACTOR;
use crate::output::{USAGE_HEADER, table, to_json, usage_cells};

#[derive(Subcommand)]
pub enum OAuthCommand {
    /// List grants: client, redirect host, the key or user they act as,
    /// scopes, use.
    Grants {
        /// Each grant's calls: the last one and from where, by tool over the
        /// last day and week, and how many were refused.
        #[arg(long)]
        usage: bool,
    },
    /// Revoke a grant and its tokens now.
    Revoke {
        /// The grant's id, as `oauth grants` lists it (one made before ids
        /// began with `gr_` may begin with `-`).
        #[arg(allow_hyphen_values = true)]
        id: String,
    },
    /// Approve the pairing code a consent page shows: the application will
    /// act as this key or this user (never more than they may do).
    #[command(group(clap::ArgGroup::new("principal").required(true).args(["key_id", "as_user"])))]
    Approve {
        code: String,
        /// Act as this API key's actor.
        #[arg(long, value_name = "ID")]
        key_id: Option<String>,
        /// Act as this user (who must exist and be enabled).
        #[arg(long = "as", value_name = "EMAIL")]
        as_user: Option<String>,
        /// Approve: without it the command shows which application the code
        /// would let in and approves nothing.
        #[arg(long)]
        yes: bool,
    },
}

pub async fn run(ctx: &Ctx, cmd: OAuthCommand) -> Result<String> {
    let site = ctx.open().await?;
    let store = &site.store;
    let json = ctx.json;
    Ok(match cmd {
        OAuthCommand::Grants { usage: true } => {
            let list = grants::list_with_usage(store, now_ms()).await?;
            if json {
                to_json(&list)
            } else {
                table(
                    &["id", "client", "acts as", "status"]
                        .into_iter()
                        .chain(USAGE_HEADER)
                        .collect::<Vec<_>>(),
                    list.iter()
                        .map(|o| {
                            let (g, u) = (&o.grant, &o.usage);
                            vec![
                                g.id.clone(),
                                g.client_name.clone(),
                                g.acts_as.to_string(),
                                status(g),
                            ]
                            .into_iter()
                            .chain(usage_cells(u))
                            .collect()
                        })
                        .collect(),
                )
            }
        }
        OAuthCommand::Grants { usage: false } => {
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
                        "acts as",
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
                                g.acts_as.to_string(),
                                g.scopes.clone(),
                                rfc3339(g.created_at),
                                when(g.last_used_at),
                                g.created_from.clone().unwrap_or_else(|| "-".into()),
                                status(g),
                            ]
                        })
                        .collect(),
                )
            }
        }
        OAuthCommand::Approve {
            code,
            key_id,
            as_user,
            yes,
        } => {
            let principal = match (key_id, as_user) {
                (Some(id), _) => Principal::Key(id),
                (None, Some(email)) => Principal::User(email),
                (None, None) => unreachable!("clap requires --key-id or --as"),
            };
            if !yes {
                let r = flow::pairing_request(store, &code, &principal).await?;
                return Err(Error::new(
                    codes::OAUTH_PAIRING_UNCONFIRMED,
                    format!(
                        "nothing approved: {code} would let {:?} (client {}, redirecting to {}) act as {principal} with {}",
                        r.client_name, r.client_id, r.redirect_uri, r.scopes
                    ),
                )
                .hint("approve only an application you expect; then run the same command with --yes")
                .detail(serde_json::to_value(&r).unwrap_or_default()));
            }
            let a = flow::approve_pairing(store, CLI_ACTOR, &code, &principal).await?;
            if json {
                to_json(&a)
            } else {
                format!(
                    "approved {code}: {} ({}) may act as {} with {}; the page can continue now",
                    a.client_name, a.redirect_uri, a.acts_as, a.scopes
                )
            }
        }
        OAuthCommand::Revoke { id } => {
            grants::revoke(store, CLI_ACTOR, &id).await?;
            format!("revoked OAuth grant {id}")
        }
    })
}

fn status(g: &grants::GrantInfo) -> String {
    match (&g.revoked_at, &g.revoked_reason) {
        (Some(_), Some(r)) => format!("revoked: {r}"),
        (Some(_), None) => "revoked".into(),
        _ => "active".into(),
    }
}
