//! `gatehouse probe NAME`: connect, negotiate, list tools, disconnect.

use clap::Args;
use gatehouse_core::Result;
use gatehouse_core::connections::saved;

use crate::Ctx;
use crate::output;

#[derive(Args)]
pub struct ProbeArgs {
    /// A stored connection's name.
    name: String,
}

pub async fn run(ctx: &Ctx, args: ProbeArgs) -> Result<String> {
    let site = ctx.open().await?;
    let report = crate::interrupt::until_interrupted(saved::probe(&site, &args.name)).await;
    site.close().await;
    let r = report?;
    if ctx.json {
        return Ok(output::to_json(&r));
    }
    let mut text = format!(
        "{} {} (protocol {})\n",
        r.server["name"].as_str().unwrap_or("?"),
        r.server["version"].as_str().unwrap_or("?"),
        r.server["protocol_version"].as_str().unwrap_or("?"),
    );
    let iso = &r.isolation;
    // The read-only view puts scratch in a tmpfs of the quota's size.
    let (view, in_memory) = if iso.read_only_view {
        (", read-only view", " (in memory)")
    } else {
        ("", "")
    };
    text.push_str(&format!(
        "  sandbox: {} (Landlock ABI {}{view}), network {}, scratch quota {} MiB{in_memory}\n",
        iso.backend,
        iso.landlock_abi,
        network_text(iso.network, &iso.connect_ports),
        iso.scratch_quota_bytes >> 20,
    ));
    text.push_str(&layers_text(iso));
    for w in &iso.warnings {
        text.push_str(&format!("  warning: {w}\n"));
    }
    text.push_str(&pin_text(&args.name, &r.pin));
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

/// Every isolation layer of this system, applied or not and why not.
pub fn layers_text(iso: &gatehouse_core::sandbox::Isolation) -> String {
    let mut out = String::from("  isolation layers:\n");
    for line in iso.layer_lines() {
        out.push_str(&format!("    {line}\n"));
    }
    out
}

/// The isolation profile as text lines (for `connections show`).
pub fn profile_text(p: &gatehouse_core::sandbox::Profile) -> String {
    let list = |v: &[std::path::PathBuf]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    format!(
        "  sandbox: {}\n  read-only paths: {}\n  read-write paths: {}\n  network: {}\n  scratch quota: {} MiB\n  max processes: {}\n  max open files: {}\n  nice: {}\n  UNIX sockets: {}\n",
        p.backend.as_str(),
        list(&p.read_only),
        list(&p.read_write),
        network_text(p.network, &p.connect_ports),
        p.scratch_quota() >> 20,
        p.max_processes(),
        p.max_open_files(),
        p.nice(),
        if p.unix_sockets { "allowed" } else { "refused" },
    )
}

/// A tool pin as a text line (and a hold, when one is pending).
pub fn pin_text(name: &str, p: &gatehouse_core::connections::pin::PinStatus) -> String {
    let mut out = format!(
        "  tools pinned: {} tools, sha256 {}\n",
        p.tools,
        &p.tools_sha256[..16.min(p.tools_sha256.len())]
    );
    if let Some(r) = p.pending {
        out.push_str(&format!(
            "  ON HOLD: tool change waiting for approval ({}); `gatehouse connections approve {name}`\n",
            r.as_str()
        ));
    }
    out
}

fn network_text(network: bool, ports: &[u16]) -> String {
    match (network, ports) {
        (true, _) => "allowed".to_string(),
        (false, []) => "blocked".to_string(),
        (false, ports) => format!(
            "blocked but TCP connect to port {}",
            ports
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
