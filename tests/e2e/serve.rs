//! The Serve panel in the real webview: `gatehouse serve` started from the
//! panel for the open site, called over real HTTP at the URL the panel
//! shows (curl, the key sent from a header file, never in argv), the rate,
//! errors and rate-limited keys seen to move, each client's remote config
//! for a key, then stopped from the panel with the port closed and no
//! process left; started again and left running, the app's exit stops it.

use std::net::TcpStream;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, ensure};
use fantoccini::Client;

use super::webdriver::{
    Cli, Driver, alive, click, eval, eventually, open_site, scratch_site, screenshot, select,
    stat_of, text_of, type_into, wait_for, wait_for_text,
};

/// A JSON-RPC POST to `url` with curl; returns the HTTP status.
fn post(url: &str, key: Option<&str>, dir: &Path, body: &serde_json::Value) -> Result<u16> {
    let headers = dir.join("headers");
    let mut lines = String::from(
        "Content-Type: application/json\nAccept: application/json, text/event-stream\nMCP-Protocol-Version: 2025-06-18\n",
    );
    if let Some(k) = key {
        lines.push_str(&format!("Authorization: Bearer {k}\n"));
    }
    std::fs::write(&headers, lines)?;
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST"])
        .arg("-H")
        .arg(format!("@{}", headers.display()))
        .arg("--data-binary")
        .arg(body.to_string())
        .arg(url)
        .output()
        .context("curl runs")?;
    std::fs::remove_file(&headers)?;
    Ok(String::from_utf8(out.stdout)?.trim().parse()?)
}

fn call(name: &str, id: u64) -> serde_json::Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": {"slug": "welcome"}}})
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The pid in "running (pid N)".
async fn shown_pid(client: &Client) -> Result<i32> {
    let state = text_of(client, "#serve-state").await?;
    state
        .trim()
        .strip_prefix("running (pid ")
        .and_then(|s| s.strip_suffix(')'))
        .context(format!("no pid in {state:?}"))?
        .parse()
        .context("pid")
}

async fn start(client: &Client, port: u16) -> Result<(String, i32)> {
    type_into(client, "#serve-listen", &format!("127.0.0.1:{port}")).await?;
    type_into(client, "#serve-hosts", "gatehouse.test").await?;
    type_into(client, "#serve-origins", "https://app.example.org").await?;
    click(client, "#serve-start").await?;
    wait_for(client, "#serve-status[data-state='running']").await?;
    let url = text_of(client, "#serve-url").await?;
    ensure!(url == format!("http://127.0.0.1:{port}/mcp"), "{url}");
    Ok((url, shown_pid(client).await?))
}

async fn panel(client: &Client, site: &Path, home: &Path) -> Result<()> {
    let cli = Cli::new(site, home)?;
    let minted = cli.json(&[
        "keys", "mint", "--label", "remote", "--roles", "viewer", "--json",
    ])?;
    let key = minted["key"].as_str().context("raw key")?.to_string();
    let key_id = minted["info"]["id"]
        .as_str()
        .or_else(|| minted["id"].as_str())
        .context("key id")?
        .to_string();
    let code = open_site(client, &site.display().to_string()).await?;
    ensure!(code == "OK", "opening the site: {code}");
    click(client, "#nav-serve").await?;
    wait_for(client, "#serve-none").await?;

    let port = free_port()?;
    let (url, pid) = start(client, port).await?;
    let hosts = text_of(client, "#serve-hosts-list").await?;
    ensure!(
        hosts.contains("gatehouse.test") && hosts.contains("127.0.0.1"),
        "{hosts}"
    );
    let origins = text_of(client, "#serve-origins-list").await?;
    ensure!(origins.contains("https://app.example.org"), "{origins}");
    ensure!(
        !wait_for(client, "#serve-listen")
            .await?
            .is_enabled()
            .await?,
        "the allowlist stays editable while serving"
    );

    // Real MCP calls at the URL shown: public reads (within the address's
    // own burst), a wrong key, a burst over the key's rate (1/s, burst 2,
    // from gatehouse.toml).
    let scratch = tempfile::tempdir()?;
    for id in 0..2 {
        ensure!(post(&url, None, scratch.path(), &call("content_read", id))? == 200);
    }
    // The last character changed: to `x`, unless it is one (1 key in 64 ends so,
    // and "wrong" was then the key itself).
    let (head, last) = key.split_at(key.len() - 1);
    let wrong = format!("{head}{}", if last == "x" { "y" } else { "x" });
    ensure!(post(&url, Some(&wrong), scratch.path(), &call("content_read", 9))? == 401);
    let mut limited = 0;
    for id in 10..15 {
        if post(&url, Some(&key), scratch.path(), &call("content_read", id))? == 429 {
            limited += 1;
        }
    }
    ensure!(limited >= 2, "only {limited} requests were rate limited");

    // The panel reads serve's counters: the rate moved, the errors and the
    // limited key show.
    wait_for_text(client, "#serve-rate", |t| t != "0/s").await?;
    let total: u64 = wait_for_text(client, "#serve-requests", |t| {
        t.parse::<u64>().is_ok_and(|n| n >= 8)
    })
    .await?
    .parse()?;
    ensure!(total >= 8);
    wait_for_text(client, "#serve-auth-failures", |t| t == "1").await?;
    wait_for_text(client, "#serve-rate-limited", |t| t == limited.to_string()).await?;
    wait_for_text(client, "#serve-errors", |t| {
        t.parse::<u64>().is_ok_and(|n| n > limited)
    })
    .await?;
    let row = format!("#serve-limited-keys tr[data-key='{key_id}']");
    wait_for_text(client, &format!("{row} td:last-child"), |t| {
        t == limited.to_string()
    })
    .await?;
    let stderr = text_of(client, "#serve-stderr").await?;
    ensure!(stderr.contains("listening on"), "{stderr}");
    ensure!(!stderr.contains(&key), "a key reached the page");

    // Remote configs for the key: by reference (the raw key was minted by
    // the CLI, so this window never held it), naming the URL shown.
    select(client, "serve-key", &key_id).await?;
    let claude = "#serve-configs details[data-client='claude-code'][data-available='true']";
    wait_for(client, claude).await?;
    click(client, &format!("{claude} summary")).await?;
    let text = wait_for_text(client, &format!("{claude} pre"), |t| t.contains(&url)).await?;
    ensure!(
        text.contains("GATEHOUSE_API_KEY") && !text.contains(&key),
        "{text}"
    );
    screenshot(client, "e2e-serve-panel.png").await?;

    // Stop: the port closes and the process is gone.
    click(client, "#serve-stop").await?;
    wait_for(client, "#serve-status[data-state='stopped']").await?;
    let state = text_of(client, "#serve-state").await?;
    ensure!(state.contains("exit status: 0"), "{state}");
    ensure!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "port {port} still open"
    );
    ensure!(!alive(pid), "serve {pid} is still running");
    ensure!(
        wait_for(client, "#serve-listen")
            .await?
            .is_enabled()
            .await?,
        "the allowlist is editable again"
    );

    // What was started is kept in [serve] of gatehouse.toml, beside what the
    // admin wrote there, and the panel opens on it again.
    let kept = std::fs::read_to_string(site.join("gatehouse.toml"))?;
    ensure!(
        kept.contains("rate_per_key = 1")
            && kept.contains(&format!("listen = \"127.0.0.1:{port}\""))
            && kept.contains("allow_hosts = [\"gatehouse.test\"]"),
        "{kept}"
    );
    click(client, "#nav-keys").await?;
    click(client, "#nav-serve").await?;
    wait_for(client, "#serve-none").await?;
    let shown: String = eval(
        client,
        "return document.getElementById('serve-listen').value",
        vec![],
    )
    .await?;
    ensure!(shown == format!("127.0.0.1:{port}"), "{shown}");
    let hosts: String = eval(
        client,
        "return document.getElementById('serve-hosts').value",
        vec![],
    )
    .await?;
    ensure!(hosts == "gatehouse.test", "{hosts}");
    Ok(())
}

#[tokio::test]
#[ignore = "needs tauri-driver, WebKitWebDriver and a display: run under xvfb-run with --include-ignored"]
async fn serve_panel_serves_counts_configs_and_stops_with_the_app() -> Result<()> {
    let (_tmp, site) = scratch_site("e2e-serve").await?;
    let toml = site.join("gatehouse.toml");
    let text = std::fs::read_to_string(&toml)?;
    std::fs::write(&toml, format!("{text}\n[serve]\nrate_per_key = 1\n"))?;
    let home = tempfile::tempdir()?;
    let mut driver = Driver::start(&site, home.path())?;
    let client = driver.connect().await?;
    let outcome = panel(&client, &site, home.path()).await;
    // Started again and left running: closing the app stops it.
    let left = match outcome {
        Ok(()) => {
            let port = free_port()?;
            start(&client, port).await.map(|(_, pid)| (port, pid))
        }
        Err(e) => Err(e),
    };
    // The app is serve's parent, read while both run.
    let app = left
        .as_ref()
        .ok()
        .and_then(|&(_, pid)| stat_of(pid))
        .map(|p| p.parent);
    // Ending the session ends the app: WebKitWebDriver kills the process it
    // launched, so no exit handler runs and serve must stop by its lifeline
    // (its stdin) alone, the harder case.
    let closed = client.close().await;
    // The driver stays until the app has exited: stopping it right after the
    // session's end could leave the app running (seen under load), and
    // serve with it, a failure of the test rather than of the app.
    let app_exited = match app {
        Some(app) => eventually(|| !alive(app)).await,
        None => true,
    };
    drop(driver);
    let (port, pid) = left?;
    ensure!(closed.is_ok(), "closing the WebDriver session: {closed:?}");
    ensure!(
        app_exited,
        "the app ({app:?}) was still running after its WebDriver session closed"
    );
    let open = || TcpStream::connect(("127.0.0.1", port)).is_ok();
    ensure!(
        eventually(|| !alive(pid) && !open()).await,
        "serve {pid} outlived the app ({:?}; port {port} open: {})",
        stat_of(pid),
        open()
    );
    Ok(())
}
