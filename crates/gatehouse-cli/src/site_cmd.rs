//! `gatehouse site init|export|import|config`.

use std::path::PathBuf;

use clap::Subcommand;
use gatehouse_core::Result;
use gatehouse_core::site;
use gatehouse_core::site::portable::{self, Summary};

use crate::Ctx;

#[derive(Subcommand)]
pub enum SiteCommand {
    /// Create a site in DIR.
    Init {
        dir: PathBuf,
        /// Seed sample users, entries, media and config, and allow --role actors.
        #[arg(long)]
        scratch: bool,
        /// The site's name (default: the folder's name).
        #[arg(long)]
        name: Option<String>,
    },
    /// Write the whole site as portable JSON (key hashes only, never raw keys).
    Export {
        /// Write to FILE (readable by you only) instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Load an export into this site, which must be empty (a fresh `site init`).
    /// It must be signed by this machine's audit key or one given with
    /// --trust-key (exports are signed by the machine that wrote them).
    Import {
        file: PathBuf,
        /// Also accept an export signed by this key (hex; another admin's
        /// machine prints its own with `gatehouse audit key`). Repeatable.
        #[arg(long = "trust-key", value_name = "KEY")]
        trust_key: Vec<String>,
        /// Accept an export that carries no signature (one you wrote yourself).
        #[arg(long)]
        unsigned: bool,
    },
    /// Read and change the site's config (audited).
    #[command(subcommand)]
    Config(crate::site_config_cmd::SiteConfigCommand),
}

fn counts(s: &Summary) -> String {
    format!(
        "{} users, {} keys, {} entries, {} redirects, {} media, {} config values, {} MCP connections, {} audit entries",
        s.users, s.keys, s.content, s.redirects, s.media, s.config, s.connections, s.audit_entries
    )
}

pub async fn run(ctx: &Ctx, cmd: SiteCommand) -> Result<String> {
    match cmd {
        SiteCommand::Init { dir, scratch, name } => {
            let site = site::init(
                &dir,
                name.as_deref(),
                scratch,
                ctx.settings.database_url.as_deref(),
            )
            .await?;
            site.close().await;
            if ctx
                .settings
                .database_url
                .as_deref()
                .is_some_and(|u| site::without_password(u).1)
            {
                eprintln!(
                    "note: the database password was not written to gatehouse.toml; \
                     give it through PGPASSWORD or ~/.pgpass (or --database-url / GATEHOUSE_DATABASE_URL)"
                );
            }
            Ok(format!(
                "created {}site {:?} in {}",
                if scratch { "scratch " } else { "" },
                site.file.name,
                site.dir.display()
            ))
        }
        SiteCommand::Export { out } => {
            let site = ctx.open().await?;
            let dump = portable::export(&site).await;
            site.close().await;
            let dump = dump?;
            match out {
                None => Ok(dump.to_json()),
                Some(path) => {
                    portable::write_file(&dump, &path)?;
                    Ok(format!(
                        "exported {} to {}",
                        counts(&dump.summary()),
                        path.display()
                    ))
                }
            }
        }
        SiteCommand::Config(c) => crate::site_config_cmd::run(ctx, c).await,
        SiteCommand::Import {
            file,
            trust_key,
            unsigned,
        } => {
            let site = ctx.open().await?;
            let trust = portable::Trust {
                keys: trust_key,
                unsigned,
            };
            let summary = portable::import_file(&site.store, &file, &trust).await;
            site.close().await;
            Ok(format!("imported {}", counts(&summary?)))
        }
    }
}
