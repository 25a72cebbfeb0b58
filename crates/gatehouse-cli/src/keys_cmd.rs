//! `gatehouse keys mint|list|revoke|roll`.

use clap::Subcommand;
use gatehouse_core::access::keys::{self, Minted, rfc3339};
use gatehouse_core::access::permissions::{format_roles, parse_roles};
use gatehouse_core::time::now_ms;
use gatehouse_core::{Error, Result, error::codes};

use crate::Ctx;
use crate::output::{table, to_json};

/// Who the CLI acts as in the audit log: the local administrator.
pub const CLI_ACTOR: &str = "cli";

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
        #[arg(long)]
        json: bool,
    },
    /// List keys (never their secrets).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key now.
    Revoke { id: String },
    /// Mint a replacement and let the old key expire after a grace period.
    Roll {
        id: String,
        #[arg(long, default_value = "24h", value_name = "DURATION")]
        grace: String,
        #[arg(long)]
        json: bool,
    },
}

fn minted_json(m: &Minted) -> String {
    to_json(&serde_json::json!({
        "key": m.key.expose(),
        "id": m.info.id,
        "label": m.info.label,
        "roles": m.info.roles,
        "expires_at": m.info.expires_at.map(rfc3339),
    }))
}

fn minted_text(m: &Minted) -> String {
    format!(
        "{}\n\nkey id {} ({}) roles {}{}\nThis is the only time the key is shown: store it now.",
        m.key.expose(),
        m.info.id,
        m.info.label,
        format_roles(&m.info.roles),
        m.info
            .expires_at
            .map(|e| format!(", expires {}", rfc3339(e)))
            .unwrap_or_default(),
    )
}

pub async fn run(ctx: &Ctx, cmd: KeysCommand) -> Result<String> {
    let site = ctx.open().await?;
    let store = &site.store;
    let out = match cmd {
        KeysCommand::Mint {
            label,
            roles,
            expires_in,
            expires_at,
            json,
        } => {
            let roles = parse_roles(&roles)?;
            let expiry = match (expires_in, expires_at) {
                (Some(d), _) => Some(keys::after(
                    now_ms(),
                    keys::parse_duration_ms(&d).map_err(|e| bad_expiry(&d, e))?,
                )?),
                (None, Some(t)) => Some(keys::parse_expiry(&t, now_ms())?),
                (None, None) => None,
            };
            let minted = keys::mint(store, CLI_ACTOR, &label, &roles, expiry).await?;
            if json {
                minted_json(&minted)
            } else {
                minted_text(&minted)
            }
        }
        KeysCommand::List { json } => {
            let list = keys::list(store).await?;
            if json {
                to_json(&list)
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
                            ]
                        })
                        .collect(),
                )
            }
        }
        KeysCommand::Revoke { id } => {
            let k = keys::revoke(store, CLI_ACTOR, &id).await?;
            format!("revoked key {} ({})", k.id, k.label)
        }
        KeysCommand::Roll { id, grace, json } => {
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
