//! The Serve panel's public URL in the real webview: public URLs serve would
//! refuse (clear text to a public host, a path) and clear text beyond
//! loopback are refused before anything starts, with their code, message
//! and hint on the page; then serve started from the panel with a public URL
//! on loopback serves OAuth's metadata (fetched with curl) naming that URL as
//! the issuer, and the panel and the Keys screen's connect guide both give
//! the `/mcp` URL under it until the server stops.

use std::net::TcpStream;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, ensure};
use fantoccini::Client;

use super::webdriver::{
    Driver, click, open_site, scratch_site, screenshot, text_of, type_into, wait_for, wait_for_text,
};

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// GETs `url` with curl and reads the body as JSON.
fn get_json(url: &str) -> Result<serde_json::Value> {
    let out = Command::new("curl")
        .args(["-s", "--fail"])
        .arg(url)
        .output()
        .context("curl runs")?;
    ensure!(out.status.success(), "GET {url}: {}", out.status);
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// Starts with the form as it is and expects `code` in the result, nothing
/// served; returns the notice's text (message, hint, code).
async fn refused(client: &Client, port: u16, code: &str) -> Result<String> {
    client
        .execute(
            "document.getElementById('serve-result')?.replaceChildren()",
            vec![],
        )
        .await?;
    click(client, "#serve-start").await?;
    let css = format!("#serve-result [data-code='{code}']");
    wait_for(client, &css).await?;
    let hint = text_of(client, &format!("{css} .notice-hint")).await?;
    ensure!(!hint.trim().is_empty(), "{code} without a hint");
    wait_for(client, "#serve-none").await?;
    ensure!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "something listens on {port} after a refused start"
    );
    text_of(client, &css).await
}

async fn scenario(client: &Client, site: &Path) -> Result<()> {
    let code = open_site(client, &site.display().to_string()).await?;
    ensure!(code == "OK", "opening the site: {code}");
    click(client, "#nav-serve").await?;
    wait_for(client, "#serve-none").await?;
    let port = free_port()?;

    // Hostile input first: each is refused by serve's own checks, in Rust.
    type_into(client, "#serve-listen", &format!("127.0.0.1:{port}")).await?;
    type_into(client, "#serve-public-url", "http://mcp.example.org").await?;
    let text = refused(client, port, "INPUT_INVALID").await?;
    ensure!(
        text.contains("public URL") && text.contains("https"),
        "{text}"
    );
    type_into(
        client,
        "#serve-public-url",
        &format!("http://127.0.0.1:{port}/gatehouse"),
    )
    .await?;
    let text = refused(client, port, "INPUT_INVALID").await?;
    ensure!(text.contains("without a path"), "{text}");
    type_into(client, "#serve-public-url", "").await?;
    type_into(client, "#serve-listen", &format!("0.0.0.0:{port}")).await?;
    let text = refused(client, port, "LISTEN_UNSAFE").await?;
    ensure!(text.contains("--behind-proxy"), "{text}");
    screenshot(client, "e2e-serve-oauth-refused.png").await?;

    // A public URL on loopback: OAuth on, with that issuer.
    let base = format!("http://127.0.0.1:{port}");
    let mcp = format!("{base}/mcp");
    type_into(client, "#serve-listen", &format!("127.0.0.1:{port}")).await?;
    type_into(client, "#serve-public-url", &base).await?;
    click(client, "#serve-start").await?;
    wait_for(client, "#serve-status[data-state='running']").await?;
    wait_for(client, "#serve-oauth[data-oauth='on']").await?;
    ensure!(text_of(client, "#serve-oauth-issuer").await? == base);
    ensure!(text_of(client, "#serve-connector-url").await? == mcp);
    ensure!(text_of(client, "#serve-url").await? == mcp);
    let meta = get_json(&format!("{base}/.well-known/oauth-authorization-server"))?;
    ensure!(meta["issuer"] == base.as_str(), "{meta}");
    ensure!(
        meta["authorization_endpoint"]
            .as_str()
            .is_some_and(|e| e.starts_with(&base)),
        "{meta}"
    );
    let resource = get_json(&format!("{base}/.well-known/oauth-protected-resource/mcp"))?;
    ensure!(resource["resource"] == mcp.as_str(), "{resource}");
    // The panel's own guide names it.
    click(client, "#serve-guide #connect-guide summary").await?;
    wait_for_text(client, "#serve-guide #connect-guide-url", |t| t == mcp).await?;
    screenshot(client, "e2e-serve-oauth-running.png").await?;

    // The Keys screen's guide gives the same URL.
    click(client, "#nav-keys").await?;
    wait_for(client, "#connect-guide[data-oauth='on']").await?;
    click(client, "#connect-guide summary").await?;
    wait_for_text(client, "#connect-guide-url", |t| t == mcp).await?;

    // Back on the panel: the form shows what runs.
    click(client, "#nav-serve").await?;
    wait_for(client, "#serve-status[data-state='running']").await?;
    let shown = wait_for(client, "#serve-public-url")
        .await?
        .prop("value")
        .await?;
    ensure!(shown.as_deref() == Some(base.as_str()), "{shown:?}");

    // Stopped: the guide goes back to saying how to get a URL.
    click(client, "#serve-stop").await?;
    wait_for(client, "#serve-status[data-state='stopped']").await?;
    click(client, "#nav-keys").await?;
    wait_for(client, "#connect-guide[data-oauth='off']").await?;
    Ok(())
}

#[tokio::test]
#[ignore = "needs tauri-driver, WebKitWebDriver and a display: run under xvfb-run with --include-ignored"]
async fn serve_panel_public_url_turns_on_oauth_and_bad_urls_are_refused() -> Result<()> {
    let (_tmp, site) = scratch_site("e2e-serve-oauth").await?;
    let home = tempfile::tempdir()?;
    let mut driver = Driver::start(&site, home.path())?;
    let client = driver.connect().await?;
    let outcome = scenario(&client, &site).await;
    let closed = client.close().await;
    drop(driver);
    outcome?;
    ensure!(closed.is_ok(), "closing the WebDriver session: {closed:?}");
    Ok(())
}
