//! `gatehouse tail NAME`: connect and follow the server's stderr until it exits
//! or Ctrl-C.

use std::io::Write;

use clap::Args;
use gatehouse_core::Result;
use gatehouse_core::connections::saved;
use gatehouse_core::sandbox::stderr::TailEvent;

use crate::Ctx;

#[derive(Args)]
pub struct TailArgs {
    /// A stored connection's name.
    name: String,
}

pub async fn run(ctx: &Ctx, a: TailArgs) -> Result<String> {
    let site = ctx.open().await?;
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let record = saved::tail(&site, &a.name, stop, |ev| {
        let mut out = std::io::stdout().lock();
        let _ = match ev {
            // A child's terminal escapes (OSC 52, cursor moves) are shown, not obeyed;
            // core has already defanged its look-alikes of Gatehouse's own lines.
            TailEvent::Lines(lines) => lines
                .iter()
                .try_for_each(|l| writeln!(out, "{}", gatehouse_core::text::escape_controls(l))),
            TailEvent::Missed { lines, bytes } => {
                writeln!(
                    out,
                    "[gatehouse: missed {lines} lines ({bytes} bytes): output too fast]"
                )
            }
            TailEvent::End => Ok(()),
        };
        let _ = out.flush();
    })
    .await;
    site.close().await;
    let r = record?;
    Ok(format!(
        "[gatehouse: connection ended ({}); {} bytes of stderr]",
        r.end_reason.map_or("unknown", |e| e.as_str()),
        r.stderr.bytes_seen
    ))
}
