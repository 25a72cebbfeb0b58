//! `gatehouse probe NAME`: connect, negotiate, list tools, disconnect.

use clap::Args;
use gatehouse_core::Result;
use gatehouse_core::mcp::client::saved;

use crate::Ctx;
use crate::output;

#[derive(Args)]
pub struct ProbeArgs {
    /// A stored connection's name.
    name: String,
    #[arg(long)]
    json: bool,
}

pub async fn run(ctx: &Ctx, args: ProbeArgs) -> Result<String> {
    let site = ctx.open().await?;
    let report = saved::probe(&site, &args.name).await;
    site.close().await;
    let r = report?;
    if args.json {
        return Ok(output::to_json(&r));
    }
    let mut text = format!(
        "{} {} (protocol {})\n",
        r.server["name"].as_str().unwrap_or("?"),
        r.server["version"].as_str().unwrap_or("?"),
        r.server["protocol_version"].as_str().unwrap_or("?"),
    );
    for t in &r.tools {
        let ro = t["annotations"]["readOnlyHint"] == serde_json::json!(true);
        text.push_str(&format!(
            "  {}{}\n",
            t["name"].as_str().unwrap_or("?"),
            if ro { "  (read-only)" } else { "" }
        ));
    }
    Ok(text)
}
