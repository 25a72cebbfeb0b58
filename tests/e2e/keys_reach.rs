//! The Keys screen's restrictions and usage against the real core: a key
//! minted restricted from the form and its restriction edited (a bad field
//! first), each checked with the real CLI; then real calls made with the key
//! through `gatehouse mcp`, which the narrowed key answers or refuses, and
//! which the key's row then counts and charts.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use super::webdriver::*;
use anyhow::{Context, Result, ensure};
use fantoccini::{Client, Locator};
use serde_json::{Value, json};

/// Calls `calls` (tool, arguments) with `key` through one `gatehouse mcp`
/// session on `site`; returns each tools/call response in order.
fn mcp_calls(site: &Path, key: &str, calls: &[(&str, Value)]) -> Result<Vec<Value>> {
    let mut child = Command::new(cli_binary()?)
        .args(["mcp", "--site"])
        .arg(site)
        .env("GATEHOUSE_API_KEY", key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut lines = vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "e2e-keys", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    for (i, (tool, args)) in calls.iter().enumerate() {
        lines.push(
            json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}),
        );
    }
    for line in lines {
        writeln!(stdin, "{line}")?;
    }
    stdin.flush()?;
    let mut answers = vec![Value::Null; calls.len()];
    let mut left = calls.len();
    for line in BufReader::new(child.stdout.take().context("stdout")?).lines() {
        let msg: Value = serde_json::from_str(&line?)?;
        if let Some(i) = msg["id"].as_u64().filter(|&i| i >= 1) {
            answers[i as usize - 1] = msg;
            left -= 1;
            if left == 0 {
                break;
            }
        }
    }
    drop(stdin);
    child.wait()?;
    ensure!(left == 0, "gatehouse mcp left {left} calls unanswered");
    Ok(answers)
}

/// The key's entry in `keys list --usage --json`.
fn listed(cli: &Cli, id: &str) -> Result<Value> {
    let list = cli.json(&["keys", "list", "--usage", "--json"])?;
    list.as_array()
        .and_then(|l| l.iter().find(|k| k["id"] == id))
        .cloned()
        .with_context(|| format!("key {id} not in {list}"))
}

/// The reach lines the page shows for key `id`.
async fn page_reach(client: &Client, id: &str) -> Result<Vec<String>> {
    eval(
        client,
        "return Array.from(document.querySelectorAll(`#keys-rows tr[data-key-id='${arguments[0]}'] .key-reach li`), li => li.textContent)",
        vec![json!(id)],
    )
    .await
}

/// Mint from the form with a tool allowlist, a content scope and a rate;
/// the CLI reads the same restrictions and the same reach in words.
async fn mint_restricted(client: &Client, cli: &Cli) -> Result<(String, String)> {
    click(client, "#nav-keys").await?;
    type_into(client, "#mint-label", "e2e narrow").await?;
    tick(client, "#mint-role-editor", true).await?;
    tick(client, "#mint-limit-tools", true).await?;
    // The picker offers what the roles allow: an editor may publish.
    wait_for(client, "#mint-tools input[data-tool='content_publish']").await?;
    tick(client, "#mint-tools input[data-tool='content_read']", true).await?;
    tick(client, "#mint-tools input[data-tool='content_list']", true).await?;
    type_into(client, "#mint-content", "welcome, roadmap-*").await?;
    type_into(client, "#mint-rate", "100/min").await?;
    assert_labelled(client, "Keys (mint form with restrictions)").await?;
    click(client, "#mint-submit").await?;
    let key = wait_for(client, "#minted-key").await?.text().await?;
    let id = gatehouse_core::access::keys::parse(&key)
        .map_err(|why| anyhow::anyhow!("shown key is malformed: {why:?}"))?
        .id
        .to_string();

    let k = listed(cli, &id)?;
    let r = &k["restrictions"];
    assert_eq!(r["tools"], json!(["content_list", "content_read"]), "{k}");
    assert_eq!(
        r["content"]["slugs"],
        json!(["welcome", "roadmap-*"]),
        "{k}"
    );
    assert_eq!(r["content"]["status"], "any", "{k}");
    assert_eq!(r["rate"], "100/min", "{k}");
    assert!(r.get("read_only").is_none(), "{k}");
    let words: Vec<String> = serde_json::from_value(k["reach"]["words"].clone())?;
    wait_for(
        client,
        &format!("#keys-rows tr[data-key-id='{id}'] .key-reach[data-restricted='true']"),
    )
    .await?;
    assert_eq!(page_reach(client, &id).await?, words);
    ensure!(
        words
            .iter()
            .any(|w| w == "only the tools content_list, content_read"),
        "{words:?}"
    );
    Ok((key, id))
}

/// A bad rate is refused with core's code, message and hint, and changes
/// nothing; then the edit narrows the key (one tool, read-only, published
/// entries of two patterns), as the CLI confirms.
async fn edit_restriction(client: &Client, cli: &Cli, id: &str) -> Result<()> {
    let before = listed(cli, id)?["restrictions"].clone();
    click(
        client,
        &format!("#keys-rows tr[data-key-id='{id}'] button[data-action='edit']"),
    )
    .await?;
    wait_for(client, &format!("#edit-form[data-key-id='{id}']")).await?;
    // The editor starts from the key's restrictions.
    wait_for(client, "#edit-tools[data-state='ready']").await?;
    let content = wait_for(client, "#edit-content")
        .await?
        .prop("value")
        .await?;
    assert_eq!(content.as_deref(), Some("welcome, roadmap-*"));
    type_into(client, "#edit-rate", "5/week").await?;
    click(client, "#edit-save").await?;
    wait_for(client, "#edit-result [data-code='KEY_RESTRICTION_INVALID']").await?;
    let message = text_of(client, "#edit-result .notice-title").await?;
    let hint = text_of(client, "#edit-result .notice-hint").await?;
    ensure!(message.contains("5/week"), "message: {message}");
    ensure!(hint.contains("60/min"), "hint: {hint}");
    screenshot_at(client, "e2e-keys-restrict-refused.png", "#restrict-slot").await?;
    assert_eq!(
        listed(cli, id)?["restrictions"],
        before,
        "a refused edit changed the key"
    );

    type_into(client, "#edit-rate", "").await?;
    tick(client, "#edit-tools input[data-tool='content_list']", false).await?;
    tick(client, "#edit-read-only", true).await?;
    type_into(client, "#edit-content", "welcome, getting-*").await?;
    select(client, "edit-content-status", "published").await?;
    assert_labelled(client, "Keys (restriction editor)").await?;
    click(client, "#edit-save").await?;
    // Saved: the editor closes and the row shows the new reach.
    let row = format!("#keys-rows tr[data-key-id='{id}']");
    wait_for_text(client, &format!("{row} .key-reach"), |t| {
        t.contains("read-only")
    })
    .await?;
    ensure!(
        client
            .find_all(Locator::Css("#edit-form"))
            .await?
            .is_empty(),
        "the editor stayed open after saving"
    );
    let k = listed(cli, id)?;
    let r = &k["restrictions"];
    assert_eq!(r["tools"], json!(["content_read"]), "{k}");
    assert_eq!(r["read_only"], true, "{k}");
    assert_eq!(
        r["content"]["slugs"],
        json!(["welcome", "getting-*"]),
        "{k}"
    );
    assert_eq!(r["content"]["status"], "published", "{k}");
    assert!(r.get("rate").is_none(), "{k}");
    let words: Vec<String> = serde_json::from_value(k["reach"]["words"].clone())?;
    assert_eq!(page_reach(client, id).await?, words);
    ensure!(
        words.iter().any(
            |w| w == "content: only published entries with slugs matching welcome or getting-*"
        ),
        "{words:?}"
    );
    screenshot_at(client, "e2e-keys-restricted.png", "#keys-table").await?;
    Ok(())
}

/// Real calls with the key: the narrowed key answers in scope and refuses
/// outside it; the row then counts and charts them as the CLI does.
async fn usage(client: &Client, cli: &Cli, site: &Path, key: &str, id: &str) -> Result<()> {
    let answers = mcp_calls(
        site,
        key,
        &[
            ("content_read", json!({"slug": "welcome"})),
            ("content_read", json!({"slug": "getting-started"})),
            ("content_read", json!({"slug": "roadmap-draft"})),
            ("content_list", json!({})),
        ],
    )?;
    let refused: Vec<bool> = answers
        .iter()
        .map(|a| a["result"]["isError"] == true || a.get("error").is_some())
        .collect();
    assert_eq!(refused, [false, false, true, true], "{answers:?}");

    // The list reloads when the filter changes.
    select(client, "keys-filter", "active").await?;
    wait_for(client, "#keys-rows[data-filter='active']").await?;
    let chart = format!("svg.usage-chart[data-key-id='{id}']");
    wait_for(
        client,
        &format!("{chart}[data-calls='4'][data-refused='2']"),
    )
    .await?;
    // All four are in the last day's bar: answered and refused parts drawn.
    let today = format!("{chart} g.usage-day[data-day='6'][data-calls='4'][data-refused='2']");
    wait_for(client, &format!("{today} rect.usage-ok")).await?;
    wait_for(client, &format!("{today} rect.usage-refused")).await?;
    let heights: Vec<f64> = eval(
        client,
        "return Array.from(document.querySelectorAll(arguments[0] + ' rect.usage-ok, ' + arguments[0] + ' rect.usage-refused'), r => Number(r.getAttribute('height')))",
        vec![json!(today)],
    )
    .await?;
    ensure!(
        heights.len() == 2 && heights.iter().all(|&h| h > 0.0),
        "bar heights {heights:?}"
    );
    let empty: usize = eval(
        client,
        "return document.querySelectorAll(arguments[0] + ' g.usage-day[data-calls=\"0\"]').length",
        vec![json!(chart)],
    )
    .await?;
    assert_eq!(empty, 6, "the other six days are empty");
    let row = format!("#keys-rows tr[data-key-id='{id}']");
    let counts = text_of(client, &format!("{row} .usage-counts")).await?;
    assert_eq!(counts, "24h: 4 calls, 2 refused · 7d: 4 calls, 2 refused");
    let last = text_of(client, &format!("{row} .usage-last")).await?;
    ensure!(last.contains("e2e-keys"), "last call from: {last}");
    click(client, &format!("{row} .usage-tools summary")).await?;
    let by_tool: Vec<(String, i64, i64)> = eval(
        client,
        "return Array.from(document.querySelectorAll(arguments[0] + ' .usage-by-tool li'), li => [li.dataset.tool, Number(li.dataset.week), Number(li.dataset.refusedWeek)])",
        vec![json!(row)],
    )
    .await?;
    let u = &listed(cli, id)?["usage"];
    let cli_tools: Vec<(String, i64, i64)> = u["by_tool"]
        .as_array()
        .context("by_tool")?
        .iter()
        .map(|t| {
            (
                t["tool"].as_str().unwrap_or_default().to_string(),
                t["week"].as_i64().unwrap_or(-1),
                t["refused_week"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    assert_eq!(by_tool, cli_tools);
    assert_eq!(
        by_tool,
        [
            ("content_read".to_string(), 3, 1),
            ("content_list".to_string(), 1, 1)
        ]
    );
    screenshot_at(client, "e2e-keys-usage.png", "#keys-table").await?;
    Ok(())
}

#[tokio::test]
#[ignore = "needs tauri-driver, WebKitWebDriver and a display: run under xvfb-run with --include-ignored"]
async fn keys_screen_restricts_a_key_and_charts_its_calls() -> Result<()> {
    let (tmp, site) = scratch_site("e2e-keys-reach").await?;
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home)?;
    let cli = Cli::new(&site, &home)?;
    let mut driver = Driver::start(&site, &home)?;
    let client = driver.connect().await?;
    let outcome = async {
        let path = site.to_str().context("temp path is not UTF-8")?;
        let code = open_site(&client, path).await?;
        ensure!(code == "OK", "opening the site: {code}");
        let (key, id) = mint_restricted(&client, &cli).await?;
        edit_restriction(&client, &cli, &id).await?;
        usage(&client, &cli, &site, &key, &id).await
    }
    .await;
    if outcome.is_err() {
        let _ = screenshot(&client, "e2e-keys-reach-failure.png").await;
    }
    let closed = client.close().await;
    drop(driver);
    outcome?;
    ensure!(closed.is_ok(), "closing the WebDriver session: {closed:?}");
    Ok(())
}
