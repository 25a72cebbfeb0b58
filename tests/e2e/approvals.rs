//! The Approvals screen against real held calls: the official Python SDK
//! client (tests/interop/python_held_desktop.py) publishes two drafts through
//! the real `gatehouse mcp`, the site's `[approvals]` policy holds both for
//! the owner, and the queue shows them with their diffs while the client
//! waits. One is approved and one denied from the page: the waiting client
//! gets the publish's result and the refusal's code, and the audit chain
//! names the desktop as the decider. The app runs on a private D-Bus session
//! bus whose monitor records the desktop notification each held call raises.

use std::io::{BufRead, BufReader, Lines};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use super::webdriver::*;
use anyhow::{Context, Result, ensure};
use fantoccini::Client;
use serde_json::{Value, json};

/// The interop environment's Python, which has the official MCP SDK.
fn interop_python() -> Result<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop");
    let python = dir.join(".venv/bin/python");
    ensure!(
        python.exists(),
        "{} is missing: run scripts/interop-setup.sh",
        python.display()
    );
    Ok(python)
}

/// The SDK client, killed if the scenario fails before it ends.
struct HeldClient {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl HeldClient {
    fn start(site: &Path, home: &Path, key: &str) -> Result<Self> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop");
        let mut child = Command::new(interop_python()?)
            .arg("python_held_desktop.py")
            .arg(cli_binary()?)
            .arg(site)
            .current_dir(dir)
            .env("INTEROP_KEY", key)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", config_home(home))
            .env_remove("GATEHOUSE_API_KEY")
            .env_remove("GATEHOUSE_SITE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .context("starting the Python SDK client")?;
        let lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
        Ok(Self { child, lines })
    }

    /// The client's next line (blocking: the client prints as calls end).
    fn line(&mut self) -> Result<String> {
        self.lines
            .next()
            .context("the Python SDK client ended early")?
            .map_err(Into::into)
    }

    fn outcome(&mut self) -> Result<Value> {
        Ok(serde_json::from_str(&self.line()?)?)
    }
}

impl Drop for HeldClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A private D-Bus session bus and a monitor of the notification calls on
/// it (no notification server answers: the call itself is what is checked).
struct SessionBus {
    daemon: Child,
    monitor: Child,
    address: String,
    log: PathBuf,
}

impl SessionBus {
    fn start(dir: &Path) -> Result<Self> {
        let mut daemon = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .arg(format!("--address=unix:path={}", dir.join("bus").display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting dbus-daemon (package dbus)")?;
        let mut address = String::new();
        BufReader::new(daemon.stdout.take().context("stdout")?).read_line(&mut address)?;
        let address = address.trim().to_string();
        ensure!(
            address.starts_with("unix:"),
            "dbus-daemon printed {address:?}"
        );
        let log = dir.join("notifications.log");
        let monitor = Command::new("dbus-monitor")
            .arg("--address")
            .arg(&address)
            .arg("type='method_call',interface='org.freedesktop.Notifications',member='Notify'")
            .stdout(std::fs::File::create(&log)?)
            .stderr(Stdio::null())
            .spawn()
            .context("starting dbus-monitor")?;
        Ok(Self {
            daemon,
            monitor,
            address,
            log,
        })
    }

    /// What the monitor recorded so far.
    fn seen(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the recorded calls hold every one of `needles`.
    async fn wait_for(&self, needles: &[&str]) -> Result<String> {
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            let seen = self.seen();
            if needles.iter().all(|n| seen.contains(n)) {
                return Ok(seen);
            }
            ensure!(
                std::time::Instant::now() < deadline,
                "the notifications never named {needles:?}; the bus saw:\n{seen}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
}

impl Drop for SessionBus {
    fn drop(&mut self) {
        for child in [&mut self.monitor, &mut self.daemon] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The id of the waiting hold whose arguments name `slug`, from the CLI.
fn hold_of(cli: &Cli, slug: &str) -> Result<String> {
    let list = cli.json(&["approvals", "list", "--json"])?;
    list.as_array()
        .and_then(|l| l.iter().find(|h| h["arguments"]["slug"] == slug))
        .and_then(|h| h["id"].as_str())
        .map(str::to_string)
        .with_context(|| format!("no waiting hold for {slug} in {list}"))
}

/// The diff lines the page shows for hold `id`, with their kinds.
async fn page_diff(client: &Client, id: &str) -> Result<Vec<(String, String)>> {
    eval(
        client,
        "return Array.from(document.querySelectorAll(`.held-call[data-id='${arguments[0]}'] .held-diff .diff-line`), l => [l.className.replace('diff-line diff-', ''), l.textContent.replace(/\\n$/, '')])",
        vec![json!(id)],
    )
    .await
}

/// The text content of `css` (as written, before the style changes its case).
async fn content_of(client: &Client, css: &str) -> Result<String> {
    eval(
        client,
        "return document.querySelector(arguments[0])?.textContent ?? null",
        vec![json!(css)],
    )
    .await
}

/// Approval audit entries of hold `id`: (action, actor).
fn decisions(cli: &Cli, id: &str) -> Result<Vec<(String, String)>> {
    let log = cli.json(&["audit", "list", "--limit", "1000", "--json"])?;
    Ok(log
        .as_array()
        .context("audit list")?
        .iter()
        .filter(|e| e["action"].as_str().unwrap_or("").starts_with("approval."))
        .filter(|e| {
            let d: Value = match &e["detail"] {
                Value::String(s) => serde_json::from_str(s).unwrap_or(Value::Null),
                other => other.clone(),
            };
            d["hold"] == id
        })
        .map(|e| {
            (
                e["action"].as_str().unwrap_or_default().to_string(),
                e["actor"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect())
}

async fn scenario(
    client: &Client,
    cli: &Cli,
    site: &Path,
    home: &Path,
    bus: &SessionBus,
) -> Result<()> {
    let path = site.to_str().context("temp path is not UTF-8")?;
    let code = open_site(client, path).await?;
    ensure!(code == "OK", "opening the site: {code}");
    click(client, "#nav-approvals").await?;
    wait_for(client, "#approvals-empty").await?;

    let minted = cli.json(&[
        "keys", "mint", "--label", "e2e-held", "--roles", "editor", "--json",
    ])?;
    let key = minted["key"].as_str().context("minted key")?;
    let key_id = minted["id"].as_str().context("minted id")?;
    let mut sdk = HeldClient::start(site, home, key)?;
    ensure!(sdk.line()? == "held", "the client did not send its calls");

    // The queue shows both at once (the page polls), with their diffs.
    let approve = ".held-call[data-status='waiting'][data-tool='content_publish']";
    wait_for_text(client, "#nav-approvals-count", |t| t == "2").await?;
    let a = hold_of(cli, "held-approve")?;
    let d = hold_of(cli, "held-deny")?;
    for (id, title) in [(&a, "Approve me"), (&d, "Deny me")] {
        let card = format!("{approve}[data-id='{id}']");
        wait_for(client, &card).await?;
        assert_eq!(
            content_of(client, &format!("{card} .held-summary")).await?,
            format!("Publish '{title}' to the live site?")
        );
        assert_eq!(
            content_of(client, &format!("{card} .held-actor")).await?,
            format!("key:{key_id}")
        );
        let mut diff = page_diff(client, id).await?;
        // The page splits on newlines: the recorded diff's last one leaves an empty line.
        while diff.last().is_some_and(|(_, t)| t.is_empty()) {
            diff.pop();
        }
        let shown = cli.json(&["approvals", "show", id, "--json"])?;
        let recorded: Vec<&str> = shown["diff"]
            .as_str()
            .context("recorded diff")?
            .lines()
            .collect();
        assert_eq!(
            diff.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>(),
            recorded,
            "the page shows the recorded diff"
        );
        ensure!(
            diff.iter()
                .any(|(k, t)| k == "add" && t == &format!("+{title}: new body")),
            "the new body is an added line: {diff:?}"
        );
    }
    // Each hold raised a desktop notification (one or two, as the page's
    // poll found them), worded from the stored holds; none is raised twice.
    let seen = bus
        .wait_for(&[
            "Publish 'Approve me' to the live site?",
            "Publish 'Deny me' to the live site?",
        ])
        .await?;
    let raised = seen.matches("member=Notify").count();
    ensure!(
        (1..=2).contains(&raised) && seen.contains("wait") && seen.contains("for your yes"),
        "notifications: {seen}"
    );
    let named: String = wait_for(client, "#nav-approvals-count[data-notified]")
        .await?
        .attr("data-notified")
        .await?
        .unwrap_or_default();
    let mut named: Vec<&str> = named.split(' ').collect();
    named.sort_unstable();
    let mut both = [a.as_str(), d.as_str()];
    both.sort_unstable();
    assert_eq!(named, both);
    assert_labelled(client, "Approvals (two held calls)").await?;
    screenshot_at(client, "e2e-approvals-queue.png", "#held-calls").await?;

    // Approve one from the page: the waiting client gets the publish's result.
    click(
        client,
        &format!(".held-call[data-id='{a}'] button[data-action='approve']"),
    )
    .await?;
    wait_for_text(client, "#approvals-result", |t| t.contains("approved")).await?;
    let first = sdk.outcome()?;
    assert_eq!(
        first,
        json!({"slug": "held-approve", "is_error": false, "code": null, "status": "published"})
    );
    wait_for_text(client, "#nav-approvals-count", |t| t == "1").await?;

    // Deny the other: the client gets the refusal's code.
    click(
        client,
        &format!(".held-call[data-id='{d}'] button[data-action='deny']"),
    )
    .await?;
    wait_for_text(client, "#approvals-result", |t| t.contains("denied")).await?;
    let second = sdk.outcome()?;
    assert_eq!(
        second,
        json!({"slug": "held-deny", "is_error": true, "code": "APPROVAL_DENIED", "status": null})
    );
    wait_for(client, "#approvals-empty").await?;
    let status = sdk.child.wait()?;
    ensure!(status.success(), "the Python SDK client failed: {status}");
    ensure!(
        bus.seen().matches("member=Notify").count() == raised,
        "deciding raised another notification: {}",
        bus.seen()
    );

    // Decided calls stay visible with who decided.
    click(client, "#approvals-all").await?;
    let decided = format!(".held-call[data-id='{a}'][data-status='approved'] .held-decided");
    wait_for_text(client, &decided, |t| t.starts_with("desktop at ")).await?;
    screenshot_at(client, "e2e-approvals-decided.png", "#held-calls").await?;

    // The chain names the desktop as the decider of each, and holds.
    let caller = format!("key:{key_id}");
    assert_eq!(
        decisions(cli, &a)?,
        [
            ("approval.approved".to_string(), "desktop".to_string()),
            ("approval.asked".to_string(), caller.clone())
        ]
    );
    assert_eq!(
        decisions(cli, &d)?,
        [
            ("approval.asked".to_string(), caller),
            ("approval.denied".to_string(), "desktop".to_string())
        ]
    );
    let verified = cli.json(&["audit", "verify", "--json"])?;
    assert_eq!(verified["ok"], true, "{verified}");
    // What ran: the approved entry is live, the denied one still a draft.
    let listed = cli.json(&["approvals", "list", "--all", "--json"])?;
    let ends: Vec<(String, String)> = listed
        .as_array()
        .context("approvals list")?
        .iter()
        .map(|h| {
            (
                h["id"].as_str().unwrap_or_default().to_string(),
                h["decided_by"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    ensure!(
        ends.contains(&(a.clone(), "desktop".into()))
            && ends.contains(&(d.clone(), "desktop".into())),
        "{listed}"
    );
    Ok(())
}

#[tokio::test]
#[ignore = "needs tauri-driver, WebKitWebDriver and a display: run under xvfb-run with --include-ignored"]
async fn approvals_screen_decides_calls_a_real_client_waits_on() -> Result<()> {
    let (tmp, site) = scratch_site("e2e-approvals").await?;
    let toml = site.join("gatehouse.toml");
    let text = std::fs::read_to_string(&toml)?;
    std::fs::write(
        &toml,
        format!(
            "{text}\n[approvals]\neffects = [\"publish\"]\ndecide = \"owner\"\ntimeout_seconds = 120\n"
        ),
    )?;
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home)?;
    let cli = Cli::new(&site, &home)?;
    let bus = SessionBus::start(tmp.path())?;
    let mut driver = Driver::start_with(
        &site,
        &home,
        &[("DBUS_SESSION_BUS_ADDRESS", bus.address.as_str())],
    )?;
    let client = driver.connect().await?;
    let outcome = scenario(&client, &cli, &site, &home, &bus).await;
    if outcome.is_err() {
        let _ = screenshot(&client, "e2e-approvals-failure.png").await;
    }
    let closed = client.close().await;
    drop(driver);
    outcome?;
    ensure!(closed.is_ok(), "closing the WebDriver session: {closed:?}");
    Ok(())
}
