//! `gatehouse whoami`: the actor the flags resolve to, for scripts and tests.

use clap::Args;
use gatehouse_core::Result;
use gatehouse_core::access::actor;
use gatehouse_core::access::permissions::format_roles;

use crate::Ctx;
use crate::actor_flags::ActorArgs;

#[derive(Args)]
pub struct WhoamiArgs {
    #[command(flatten)]
    actor: ActorArgs,
    #[arg(long)]
    json: bool,
}

pub async fn run(ctx: &Ctx, args: WhoamiArgs) -> Result<String> {
    let site = ctx.open().await?;
    let resolved = actor::resolve(&site.store, site.is_scratch(), &args.actor.flags()).await;
    site.close().await;
    let a = resolved?;
    Ok(if args.json {
        serde_json::to_string(&a).expect("actor serialises")
    } else {
        format!("{} (roles {})", a.label(), format_roles(a.roles()))
    })
}
