//! `gatehouse call NAME TOOL --args JSON`: one recorded call. A call that does
//! not complete fails with its error code; its report is the error's detail.

use clap::Args;
use gatehouse_core::Result;
use gatehouse_core::connections::saved;
use gatehouse_core::error::{Error, codes};

use crate::Ctx;
use crate::output;

#[derive(Args)]
pub struct CallArgs {
    /// A stored connection's name.
    name: String,
    /// The tool to call.
    tool: String,
    /// The arguments, a JSON object.
    #[arg(long, default_value = "{}")]
    args: String,
}

pub async fn run(ctx: &Ctx, a: CallArgs) -> Result<String> {
    let arguments: serde_json::Value = serde_json::from_str(&a.args).map_err(|e| {
        Error::invalid(
            codes::CALL_INVALID,
            format!("--args is not JSON: {e}"),
            "pass a JSON object, for example --args '{\"message\":\"hi\"}'",
        )
    })?;
    let site = ctx.open().await?;
    let report =
        crate::interrupt::until_interrupted(saved::call(&site, &a.name, &a.tool, arguments)).await;
    site.close().await;
    let r = report?;
    if let Some(held) = &r.held {
        eprintln!(
            "warning: the call completed, then the server changed its tools; {} ({})",
            held.message,
            held.hint.as_deref().unwrap_or_default()
        );
    }
    if ctx.json {
        return Ok(output::to_json(&r));
    }
    let texts: Vec<&str> = r
        .result
        .as_ref()
        .and_then(|v| v["content"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect();
    Ok(if texts.is_empty() {
        output::to_json(&r.result)
    } else {
        texts.join("\n")
    })
}
