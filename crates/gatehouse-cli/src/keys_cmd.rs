//! `gatehouse keys mint|list|revoke|roll|restrict`.

use clap::{Args, Subcommand};
use gatehouse_core::access::key_usage;
use gatehouse_core::access::keys::{self, Minted, rfc3339};
use gatehouse_core::access::permissions::{format_roles, parse_roles};
use gatehouse_core::access::restrictions::Restrictions;
use gatehouse_core::mcp::server::reach::{self, RestrictionChange};
use gatehouse_core::time::now_ms;
use gatehouse_core::{Error, Result, error::codes};

use crate::Ctx;
use crate::output::{USAGE_HEADER, table, to_json, usage_cells};

/// Who the CLI acts as in the audit log: the local administrator.
pub const CLI_ACTOR: &str = gatehouse_core::access::audit::AuditActor::CLI;

#[derive(Subcommand)]
pub enum KeysCommand {
    /// Mint a key; the raw key is printed once and never again.
    Mint {
        #[arg(long)]
        label: String,
        /// The key's scope, comma-separated: viewer, author, editor, admin.
        #[arg(long)]
        roles: String,
        /// A duration (30d, 12h) from now.
        #[arg(long, value_name = "DURATION", conflicts_with = "expires_at")]
        expires_in: Option<String>,
        /// An RFC 3339 time.
        #[arg(long, value_name = "TIME")]
        expires_at: Option<String>,
        #[command(flatten)]
        restrict: RestrictFlags,
    },
    /// Change what a key may do beyond its roles (it only ever narrows them).
    Restrict {
        id: String,
        #[command(flatten)]
        restrict: RestrictFlags,
        /// Lift restrictions: tools, read-only, content, rate, approve, from or all (comma-separated).
        #[arg(long, value_name = "WHAT")]
        clear: Vec<String>,
    },
    /// List keys (never their secrets).
    List {
        /// Add each key's calls by tool over the last day and week, refusals and last call.
        #[arg(long)]
        usage: bool,
    },
    /// Revoke a key now.
    Revoke { id: String },
    /// Mint a replacement and let the old key expire after a grace period.
    Roll {
        id: String,
        #[arg(long, default_value = "24h", value_name = "DURATION")]
        grace: String,
    },
}

/// A key's restrictions as flags; each one given replaces that restriction.
#[derive(Args)]
pub struct RestrictFlags {
    /// Only these tools, comma-separated (e.g. content_read,content_search).
    #[arg(long, value_name = "TOOLS")]
    tools: Option<String>,
    /// Only tools whose effect class is read.
    #[arg(long)]
    read_only: bool,
    /// Only entries whose slug matches one of these patterns (`*`: any run), comma-separated.
    #[arg(long, value_name = "PATTERNS")]
    content: Option<String>,
    /// Only drafts, only published entries, or any.
    #[arg(long, value_name = "draft|published|any")]
    content_status: Option<String>,
    /// At most this many calls per period, e.g. 60/min, 5/s, 1000/h.
    #[arg(long, value_name = "N/PERIOD")]
    rate: Option<String>,
    /// Calls of these tools or effect classes wait for the site owner's yes (never the key's own client's), e.g. publish,media_write.
    #[arg(long, value_name = "TOOLS|EFFECTS")]
    approve: Option<String>,
    /// gatehouse serve accepts the key only from these client networks, e.g. 10.0.0.0/8,192.168.1.0/24.
    #[arg(long, value_name = "NETWORKS")]
    from: Option<String>,
}

impl RestrictFlags {
    fn change(self, clear: Vec<String>) -> RestrictionChange {
        RestrictionChange {
            tools: self.tools,
            read_only: self.read_only,
            content: self.content,
            content_status: self.content_status,
            rate: self.rate,
            approve: self.approve,
            from: self.from,
            clear,
        }
    }
}

/// A key as `keys list --json` and `keys restrict --json` print it: the
/// stored fields and its reach in words.
fn key_json(k: &keys::KeyInfo) -> serde_json::Value {
    let mut v = serde_json::to_value(k).expect("keys serialise");
    v["reach"] = serde_json::to_value(reach::describe_key(k)).expect("reach serialises");
    v
}

fn minted_json(m: &Minted) -> String {
    to_json(&serde_json::json!({
        "key": m.key.expose(),
        "id": m.info.id,
        "label": m.info.label,
        "roles": m.info.roles,
        "expires_at": m.info.expires_at.map(rfc3339),
        "restrictions": m.info.restrictions,
        "reach": reach::describe_key(&m.info),
    }))
}

fn minted_text(m: &Minted) -> String {
    format!(
        "{}\n\nkey id {} ({}) roles {}{}\n{}\nThis is the only time the key is shown: store it now.",
        m.key.expose(),
        m.info.id,
        m.info.label,
        format_roles(&m.info.roles),
        m.info
            .expires_at
            .map(|e| format!(", expires {}", rfc3339(e)))
            .unwrap_or_default(),
        reach_text(&m.info),
    )
}

pub async fn run(ctx: &Ctx, cmd: KeysCommand) -> Result<String> {
    let site = ctx.open().await?;
    let store = &site.store;
    let json = ctx.json;
    let out = match cmd {
        KeysCommand::Mint {
            label,
            roles,
            expires_in,
            expires_at,
            restrict,
        } => {
            let roles = parse_roles(&roles)?;
            let restrictions = restrict.change(Vec::new()).apply(Restrictions::default())?;
            let expiry = match (expires_in, expires_at) {
                (Some(d), _) => Some(keys::after(
                    now_ms(),
                    keys::parse_duration_ms(&d).map_err(|e| bad_expiry(&d, e))?,
                )?),
                (None, Some(t)) => Some(keys::parse_expiry(&t, now_ms())?),
                (None, None) => None,
            };
            let minted =
                keys::mint_restricted(store, CLI_ACTOR, &label, &roles, expiry, &restrictions)
                    .await?;
            if json {
                minted_json(&minted)
            } else {
                minted_text(&minted)
            }
        }
        KeysCommand::List { usage } => {
            let list = keys::list(store).await?;
            let used = if usage {
                Some(key_usage::by_key(store, now_ms()).await?)
            } else {
                None
            };
            let usage_of = |k: &keys::KeyInfo| {
                used.as_ref()
                    .map(|u| u.get(&k.id).cloned().unwrap_or_default())
            };
            if json {
                to_json(
                    &list
                        .iter()
                        .map(|k| {
                            let mut v = key_json(k);
                            if let Some(u) = usage_of(k) {
                                v["usage"] = serde_json::to_value(u).expect("usage serialises");
                            }
                            v
                        })
                        .collect::<Vec<_>>(),
                )
            } else if let Some(used) = &used {
                table(
                    &["id", "label", "status"]
                        .into_iter()
                        .chain(USAGE_HEADER)
                        .collect::<Vec<_>>(),
                    list.iter()
                        .map(|k| {
                            let u = used.get(&k.id).cloned().unwrap_or_default();
                            vec![k.id.clone(), k.label.clone(), k.status.to_string()]
                                .into_iter()
                                .chain(usage_cells(&u))
                                .collect()
                        })
                        .collect(),
                )
            } else {
                let dash = || "-".to_string();
                table(
                    &[
                        "id",
                        "label",
                        "roles",
                        "status",
                        "created",
                        "expires",
                        "last used",
                        "restrictions",
                    ],
                    list.iter()
                        .map(|k| {
                            vec![
                                k.id.clone(),
                                k.label.clone(),
                                format_roles(&k.roles),
                                k.status.to_string(),
                                rfc3339(k.created_at),
                                k.expires_at.map(rfc3339).unwrap_or_else(dash),
                                k.last_used_at.map(rfc3339).unwrap_or_else(dash),
                                restrictions_cell(&k.restrictions),
                            ]
                        })
                        .collect(),
                )
            }
        }
        KeysCommand::Restrict {
            id,
            restrict,
            clear,
        } => {
            let k = reach::restrict(store, CLI_ACTOR, &id, &restrict.change(clear)).await?;
            if json {
                to_json(&key_json(&k))
            } else {
                format!("key {} ({})\n{}", k.id, k.label, reach_text(&k))
            }
        }
        KeysCommand::Revoke { id } => {
            let k = keys::revoke(store, CLI_ACTOR, &id).await?;
            format!("revoked key {} ({})", k.id, k.label)
        }
        KeysCommand::Roll { id, grace } => {
            let grace = keys::parse_duration_ms(&grace)?;
            let minted = keys::roll(store, CLI_ACTOR, &id, grace).await?;
            if json {
                minted_json(&minted)
            } else {
                format!(
                    "{}\nthe old key {id} stays valid until {}",
                    minted_text(&minted),
                    rfc3339(now_ms() + grace)
                )
            }
        }
    };
    site.close().await;
    Ok(out)
}

/// The reach in words, one fact a line.
fn reach_text(k: &keys::KeyInfo) -> String {
    reach::describe_key(k)
        .words
        .iter()
        .map(|w| format!("  {w}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The restrictions in one table cell.
fn restrictions_cell(r: &Restrictions) -> String {
    let mut parts = Vec::new();
    if let Some(tools) = &r.tools {
        parts.push(format!("tools {}", tools.join(",")));
    }
    if r.read_only {
        parts.push("read-only".into());
    }
    if let Some(c) = &r.content {
        parts.push(format!("content {}", c.describe()));
    }
    if let Some(rate) = r.rate {
        parts.push(format!("rate {rate}"));
    }
    if let Some(list) = &r.approve {
        parts.push(format!("approve {}", list.join(",")));
    }
    if let Some(nets) = &r.from {
        let nets: Vec<String> = nets.iter().map(ToString::to_string).collect();
        parts.push(format!("from {}", nets.join(",")));
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join("; ")
    }
}

fn bad_expiry(d: &str, e: Error) -> Error {
    if e.message.contains("too long") {
        return Error::invalid(codes::EXPIRY_INVALID, e.message, e.hint.unwrap_or_default());
    }
    Error::invalid(
        codes::EXPIRY_INVALID,
        format!("cannot read duration {d:?}"),
        "use forms such as 30d, 12h or 90m",
    )
}
