//! `gatehouse site init`.

use std::path::PathBuf;

use clap::Subcommand;
use gatehouse_core::Result;
use gatehouse_core::site;

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
            site.store.close().await;
            Ok(format!(
                "created {}site {:?} in {}",
                if scratch { "scratch " } else { "" },
                site.file.name,
                site.dir.display()
            ))
        }
    }
}
