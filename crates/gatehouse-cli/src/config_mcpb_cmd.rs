//! `gatehouse config mcpb`: writes a Claude Desktop extension for this site
//! (`client_config::mcpb`), so Claude Desktop asks for the API key at install
//! and keeps it in the OS keychain. Prints the bundle's path on stdout (or the
//! outcome with `--json`) and what to do with it on stderr.

use std::path::PathBuf;

use clap::Args;
use gatehouse_core::client_config::{self, mcpb};
use gatehouse_core::error::{Error, Result, codes};

use crate::Ctx;
use crate::output;

#[derive(Args)]
pub struct McpbArgs {
    /// Where to write the bundle [default: ./gatehouse-<site>.mcpb].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The extension's name [default: gatehouse].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}

pub fn run(ctx: &Ctx, args: McpbArgs) -> Result<String> {
    let site = gatehouse_core::site::read_site_file(&ctx.settings.dir)?;
    let out = match args.out {
        Some(out) => out,
        None => mcpb::default_out(
            &std::env::current_dir().map_err(|e| {
                Error::new(
                    codes::IO_ERROR,
                    format!("cannot read the current directory: {e}"),
                )
            })?,
            &site.name,
        ),
    };
    let outcome = mcpb::write_bundle(&mcpb::McpbRequest {
        binary: crate::config_cmd::this_binary()?,
        site_dir: client_config::client_path(&ctx.settings.dir)?,
        site_name: site.name,
        name: args.name,
        out,
    })?;
    if ctx.json {
        return Ok(output::to_json(&outcome));
    }
    eprintln!("# Claude Desktop: {}", outcome.instructions);
    Ok(outcome.path.display().to_string())
}
