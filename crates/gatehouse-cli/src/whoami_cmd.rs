//! `gatehouse whoami`: the actor the flags resolve to, for scripts and tests.

use clap::Args;
use gatehouse_core::Result;
use gatehouse_core::access::actor;
use gatehouse_core::access::permissions::format_roles;
use gatehouse_core::mcp::server::reach;

use crate::Ctx;
use crate::actor_flags::ActorArgs;

#[derive(Args)]
pub struct WhoamiArgs {
    #[command(flatten)]
    actor: ActorArgs,
}

pub async fn run(ctx: &Ctx, args: WhoamiArgs) -> Result<String> {
    let site = ctx.open().await?;
    let resolved = actor::resolve(&site.store, site.is_scratch(), &args.actor.flags()).await;
    site.close().await;
    let a = resolved?;
    let reach = reach::describe(&a);
    Ok(if ctx.json {
        let mut v = serde_json::to_value(&a).expect("actor serialises");
        // A restricted key carries its reach; everything else keeps the flat shape.
        if reach.restricted {
            v["reach"] = serde_json::to_value(&reach).expect("reach serialises");
        }
        v.to_string()
    } else {
        let words: Vec<String> = reach.words.iter().map(|w| format!("  {w}")).collect();
        format!(
            "{} (roles {})\n{}",
            a.label(),
            format_roles(a.roles()),
            words.join("\n")
        )
    })
}
