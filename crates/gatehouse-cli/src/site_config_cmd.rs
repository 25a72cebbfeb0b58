//! `gatehouse site config list|get|set|unset`: the site's key/value config
//! (the `http_fetch` allowlist among it), each change audited.

use clap::Subcommand;
use gatehouse_core::Result;
use gatehouse_core::access::keys::rfc3339;
use gatehouse_core::site::config;

use crate::Ctx;
use crate::keys_cmd::CLI_ACTOR;
use crate::output::{table, to_json};

#[derive(Subcommand)]
pub enum SiteConfigCommand {
    /// List the entries (secret values redacted).
    List,
    /// Print one entry's value (a secret one only with --reveal).
    Get {
        key: String,
        /// Print a secret value in clear.
        #[arg(long)]
        reveal: bool,
    },
    /// Set an entry, e.g. `set http_fetch.allowlist "wiki.internal:8080"`.
    /// Without VALUE the value is read from stdin, which keeps a secret out
    /// of the process list and the shell history.
    Set {
        key: String,
        #[arg(allow_hyphen_values = true)]
        value: Option<String>,
        /// Mark the value secret: clients never see it in clear. Without it
        /// or --not-secret, an entry set again stays as it was marked.
        #[arg(long, conflicts_with = "not_secret")]
        secret: bool,
        /// Unmark a secret entry: its value becomes readable to clients.
        #[arg(long)]
        not_secret: bool,
    },
    /// Remove an entry.
    Unset { key: String },
}

pub async fn run(ctx: &Ctx, cmd: SiteConfigCommand) -> Result<String> {
    let site = ctx.open().await?;
    let store = &site.store;
    let json = ctx.json;
    let out = match cmd {
        SiteConfigCommand::List => config::list(store).await.map(|list| {
            if json {
                to_json(&list)
            } else {
                table(
                    &["key", "value", "secret", "updated"],
                    list.iter()
                        .map(|e| {
                            vec![
                                e.key.clone(),
                                e.value.clone(),
                                if e.secret { "yes" } else { "" }.to_string(),
                                rfc3339(e.updated_at),
                            ]
                        })
                        .collect(),
                )
            }
        }),
        SiteConfigCommand::Get { key, reveal } => config::get(store, &key, reveal)
            .await
            .map(|e| if json { to_json(&e) } else { e.value }),
        SiteConfigCommand::Set {
            key,
            value,
            secret,
            not_secret,
        } => {
            let secret = match (secret, not_secret) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            };
            let value = match value {
                Some(v) => v,
                None => read_stdin()?,
            };
            config::set(store, CLI_ACTOR, &key, &value, secret)
                .await
                .map(|e| format!("set {}{}", e.key, if e.secret { " (secret)" } else { "" }))
        }
        SiteConfigCommand::Unset { key } => config::unset(store, CLI_ACTOR, &key)
            .await
            .map(|()| format!("removed {key}")),
    };
    // A clean shutdown: signs a checkpoint of the entry just written.
    site.close().await;
    out
}

/// The value from stdin, without the final newline a shell or `echo` adds.
fn read_stdin() -> Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::io::stdin()
        .take(config::MAX_VALUE_BYTES as u64 + 2)
        .read_to_string(&mut text)
        .map_err(|e| {
            gatehouse_core::Error::invalid(
                gatehouse_core::error::codes::INPUT_INVALID,
                format!("cannot read the value from stdin: {e}"),
                "pipe UTF-8 text, or give the value as an argument",
            )
        })?;
    let trimmed = text.strip_suffix('\n').unwrap_or(&text);
    Ok(trimmed.strip_suffix('\r').unwrap_or(trimmed).to_string())
}
