//! `gatehouse permissions`: the permission table, as the docs render it.

use clap::Args;
use gatehouse_core::Result;
use gatehouse_core::access::permissions;

#[derive(Args)]
pub struct PermissionsArgs {
    /// Print Markdown (docs/permissions.md is this output).
    #[arg(long)]
    markdown: bool,
}

pub fn run(args: PermissionsArgs) -> Result<String> {
    let md = permissions::markdown() + &gatehouse_core::mcp::server::reach::markdown();
    Ok(if args.markdown {
        md
    } else {
        md.lines().skip(4).collect::<Vec<_>>().join("\n")
    })
}
