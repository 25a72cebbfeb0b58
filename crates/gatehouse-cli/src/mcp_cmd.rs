//! `gatehouse mcp`: resolve the actor (a refusal exits before stdin is read),
//! then serve MCP on stdio until stdin closes, a signal, or the parent dies.

use clap::Args;
use gatehouse_core::Result;
use gatehouse_core::access::actor;
use gatehouse_core::mcp::server;

use crate::Ctx;
use crate::actor_flags::ActorArgs;

#[derive(Args)]
pub struct McpArgs {
    #[command(flatten)]
    actor: ActorArgs,
}

pub async fn run(ctx: &Ctx, args: McpArgs) -> Result<String> {
    let site = ctx.open().await?;
    let actor = actor::resolve(&site.store, site.is_scratch(), &args.actor.flags()).await?;
    let served = server::run_stdio(site.clone(), actor).await;
    // Signs the shutdown checkpoint whether serving ended cleanly or not:
    // every entry written so far is committed either way.
    site.close().await;
    served.map(|_| String::new())
}
