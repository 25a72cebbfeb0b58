//! The first run of the window: IPC errors, the site field, keys and the
//! config panel, the Connections screen's tails (numbered lines, a flood),
//! and the Client config screen's install and doctor.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use fantoccini::{Client, Locator};

use gatehouse_core::client_config::REDACTED_KEY;

use super::client_config;
use super::webdriver::{
    Driver, PATIENCE, assert_labelled, cli_binary, click, ensure_in_view, eval, open_site, python3,
    row_action, row_state, scratch_site, screenshot, screenshot_at, select, text_of, wait_for,
    wait_for_text,
};

async fn smoke(client: &Client, real: &Path) -> Result<()> {
    assert_eq!(client.title().await?, "Gatehouse");
    // The site field starts at GATEHOUSE_SITE.
    let wanted = real.to_str().context("temp path is not UTF-8")?;
    let deadline = Instant::now() + PATIENCE;
    loop {
        // The page may still be starting (it restores the last site and
        // screen first): no field yet is "not yet", not a failure.
        let value = match client.find(Locator::Id("site-path")).await {
            Ok(field) => field.prop("value").await?.unwrap_or_default(),
            Err(_) => String::new(),
        };
        if value == wanted {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "site field never showed GATEHOUSE_SITE; last value: {value:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let version = wait_for_text(client, "#core-version", |t| t != "…").await?;
    assert_eq!(
        version,
        gatehouse_core::version(),
        "version from the app_info command"
    );
    assert_eq!(
        client.find(Locator::Id("app-name")).await?.text().await?,
        "Gatehouse"
    );
    // The About view names the commit the app was built from and the CLI that
    // generated configs start (the sibling binary in a cargo build).
    click(client, "#about-button").await?;
    let commit = wait_for_text(client, "#about-commit", |t| t != "…").await?;
    assert_eq!(commit, env!("GATEHOUSE_GIT_COMMIT"));
    let cli = wait_for_text(client, "#about-cli", |t| t != "…").await?;
    assert!(cli.ends_with("/gatehouse"), "About's CLI: {cli}");
    click(client, "#about-close").await?;

    // The window reaches only the app's own commands, under its CSP: through
    // the same door, a granted command answers, a plugin command it was not
    // granted is refused, and an inline script never runs.
    let invoke = async |command: &str| -> Result<String> {
        let reply = client
            .execute_async(
                "const done = arguments[arguments.length - 1];
                 window.__TAURI_INTERNALS__.invoke(arguments[0], {args: {}, options: {directory: true}})
                   .then(() => done('answered'), (e) => done('refused: ' + String(e)));",
                vec![serde_json::json!(command)],
            )
            .await?;
        Ok(reply.as_str().unwrap_or_default().to_string())
    };
    assert_eq!(invoke("app_info").await?, "answered");
    let refused = invoke("plugin:dialog|open").await?;
    ensure!(
        refused.contains("not allowed"),
        "plugin:dialog|open: {refused}"
    );
    let ran = client
        .execute(
            "const s = document.createElement('script');
             s.textContent = 'window.__e2eInline = true';
             document.head.append(s);
             return window.__e2eInline === true;",
            vec![],
        )
        .await?;
    ensure!(
        ran == serde_json::json!(false),
        "an inline script ran despite the CSP"
    );

    // An error crosses IPC as {code, message, hint} and the page shows all three.
    let site = tempfile::tempdir()?;
    let site_path = site.path().to_str().context("temp path is not UTF-8")?;
    assert_eq!(open_site(client, site_path).await?, "SITE_NOT_FOUND");
    let code = client
        .find(Locator::Css("#site-result .error-code"))
        .await?
        .text()
        .await?;
    assert_eq!(code, "SITE_NOT_FOUND");
    let hint = client
        .find(Locator::Css("#site-result .notice-hint"))
        .await?
        .text()
        .await?;
    assert!(hint.contains("gatehouse site init"), "hint shown: {hint:?}");
    screenshot(client, "e2e-error.png").await?;
    assert_eq!(open_site(client, "").await?, "INPUT_INVALID");

    std::fs::write(site.path().join("gatehouse.toml"), "not = [valid")?;
    assert_eq!(open_site(client, site_path).await?, "SITE_CONFIG_INVALID");

    // A real site, made by core, opens.
    let real_path = wanted;
    assert_eq!(open_site(client, real_path).await?, "OK");
    let title = client
        .find(Locator::Css("#site-result .notice-title"))
        .await?
        .text()
        .await?;
    assert_eq!(title, "Opened scratch site “e2e-site”");
    let header = wait_for_text(client, "#current-site", |t| t.contains("e2e-site")).await?;
    assert!(header.contains("scratch"), "header shows: {header:?}");
    assert_labelled(client, "Sites").await?;
    screenshot(client, "e2e-overview.png").await?;

    Ok(())
}

/// Stores connections the Connections screen then starts: `numbered` writes
/// `NUMBERED` known lines to stderr before it becomes the fixture MCP server,
/// `flood` writes 1 MiB of stderr at start and runs unconfined (backend
/// `none`), so its status must say so.
async fn store_connections(site: &Path) -> Result<()> {
    use gatehouse_core::connections::saved::{self, SavedConnection, SavedLimits};
    use gatehouse_core::sandbox::ChildSpec;

    let fixture_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let fixture = fixture_dir.join("mcp_server.py");
    let fixture = fixture.to_str().context("fixture path is not UTF-8")?;
    let python = python3()?;
    let python = python.to_str().context("python3 path is not UTF-8")?;
    let script = format!(
        "i=1; while [ $i -le {NUMBERED} ]; do echo \"stderr line $i\" >&2; i=$((i+1)); done; exec \"$0\" \"$1\""
    );
    let opened = gatehouse_core::site::open(&gatehouse_core::site::Settings {
        dir: site.to_path_buf(),
        database_url: None,
    })
    .await?;
    for (name, spec) in [
        (
            "numbered",
            ChildSpec::new("/bin/sh")
                .arg("-c")
                .arg(script)
                .arg(python)
                .arg(fixture),
        ),
        (
            "flood",
            ChildSpec::new(python)
                .arg(fixture)
                .arg("--flood-mb")
                .arg("1"),
        ),
    ] {
        // `sh -c` hides the fixture from the sandbox's guess of what the command
        // reads, so the profile grants the fixtures folder (as an admin would).
        let mut limits = SavedLimits::default();
        if name == "flood" {
            limits.sandbox.backend = gatehouse_core::sandbox::Backend::None;
        } else {
            limits.sandbox.read_only.push(fixture_dir.clone());
        }
        let conn = SavedConnection {
            name: name.to_string(),
            spec,
            limits,
            created_at: gatehouse_core::time::now_ms(),
        };
        saved::add(&opened.store, "e2e", &conn).await?;
    }
    opened.store.close().await;
    Ok(())
}

const NUMBERED: usize = 300;

/// `n` as the page prints counts (`Intl.NumberFormat("en")`).
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Every entry of the tail list, in one round trip (one per element would
/// take seconds for a full list).
pub(super) async fn tail_lines(client: &Client) -> Result<Vec<String>> {
    eval(
        client,
        "return Array.from(document.querySelectorAll('#tail-lines li'), li => li.textContent)",
        vec![],
    )
    .await
}

async fn connections(client: &Client, site: &Path) -> Result<()> {
    let started = Instant::now();
    let lap = |what: &str| eprintln!("connections: {what} after {:?}", started.elapsed());
    store_connections(site).await?;
    client
        .find(Locator::Id("nav-connections"))
        .await?
        .click()
        .await?;
    row_state(client, "flood", "idle").await?;

    // Connect: the server's stderr so far arrives through the Channel,
    // complete and in order, with its byte count.
    row_action(client, "numbered", "open").await?;
    // First start of a stored definition: the consent dialog (issue 12).
    click(client, "#consent-dialog[open] #consent-accept").await?;
    let row = row_state(client, "numbered", "connected").await?;
    let row_text = text_of(client, &row).await?;
    assert!(row_text.contains("gatehouse-fixture 1.2.3"), "{row_text}");
    let expected: Vec<String> = (1..=NUMBERED).map(|i| format!("stderr line {i}")).collect();
    let bytes: usize = expected.iter().map(|line| line.len() + 1).sum();
    wait_for(
        client,
        &format!("#tail-counters[data-bytes-seen='{bytes}']"),
    )
    .await?;
    let deadline = Instant::now() + PATIENCE;
    while tail_lines(client).await?.len() < NUMBERED && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        tail_lines(client).await?,
        expected,
        "every line once, in order, no marker"
    );
    let counters = text_of(client, "#tail-counters").await?;
    let shown_bytes = thousands(bytes);
    assert_eq!(
        counters,
        format!("{shown_bytes} bytes seen · {shown_bytes} kept")
    );

    // Confined by default, with the Landlock ABI this kernel applied.
    let confined = gatehouse_core::sandbox::probe::describe(&Default::default());
    let want = match confined.landlock_abi {
        0 => confined.backend.to_string(),
        abi => format!("Landlock ABI {abi}"),
    };
    wait_for_text(client, "#conn-facts [data-fact='isolation']", |t| {
        t.starts_with(&want)
    })
    .await?;

    lap("numbered streamed");
    // Disconnect: the stream ends, the state and the exit show.
    row_action(client, "numbered", "close").await?;
    let row = row_state(client, "numbered", "closed").await?;
    let pill = text_of(client, &format!("{row} .conn-state")).await?;
    assert_eq!(pill, "closed: exit 0");
    let status = wait_for_text(client, "#tail-status", |t| t.starts_with("ended")).await?;
    assert!(
        status.starts_with(&format!("ended: {NUMBERED} lines")),
        "{status}"
    );

    lap("numbered closed");
    // A flood: counters reach the full 1 MiB, the page stays bounded, and
    // every gap is marked.
    row_action(client, "flood", "open").await?;
    click(client, "#consent-dialog[open] #consent-accept").await?;
    row_state(client, "flood", "connected").await?;
    // Unconfined, and the live status says so next to the facts (issue 10).
    let unconfined = gatehouse_core::sandbox::Profile {
        backend: gatehouse_core::sandbox::Backend::None,
        ..Default::default()
    };
    let expected = gatehouse_core::sandbox::probe::describe(&unconfined).warnings;
    ensure!(!expected.is_empty(), "backend none must warn");
    wait_for_text(client, "#conn-facts [data-fact='isolation']", |t| {
        t.starts_with("none · network allowed · UNIX sockets allowed")
    })
    .await?;
    let shown: Vec<String> = eval(client, "return Array.from(document.querySelectorAll(\"#conn-facts [data-fact='isolation-warning']\"), d => d.textContent)", vec![]).await?;
    assert_eq!(
        shown, expected,
        "every isolation warning shown, as core words it"
    );
    // Every layer listed, applied or not, with why not.
    let layers: Vec<String> = eval(client, "return Array.from(document.querySelectorAll(\"#conn-facts [data-fact='isolation-layers'] li\"), li => li.textContent)", vec![]).await?;
    ensure!(
        layers.contains(
            &"Landlock fs: not applied: sandbox backend none confines nothing".to_string()
        ),
        "{layers:?}"
    );
    for layer in &gatehouse_core::sandbox::probe::describe(&unconfined).layers {
        let label = format!("{}: ", layer.layer.label());
        ensure!(
            layers.iter().any(|l| l.starts_with(&label)),
            "{label} missing in {layers:?}"
        );
    }
    wait_for(
        client,
        "#tail-counters[data-bytes-seen='1048576'][data-truncated='true']",
    )
    .await?;
    let shown = tail_lines(client).await?;
    let markers = client
        .find_all(Locator::Css("#tail-lines .tail-marker"))
        .await?;
    assert!(
        !markers.is_empty(),
        "a 1 MiB flood shown without any gap marker"
    );
    assert!(
        shown.len() <= 2000 + markers.len(),
        "{} entries",
        shown.len()
    );
    lap("flood counted");
    screenshot(client, "e2e-connections-flood.png").await?;

    // After disconnecting, reopening the tail shows what core kept, behind
    // core's exact truncation marker, pinned on top.
    row_action(client, "flood", "close").await?;
    row_state(client, "flood", "closed").await?;
    lap("flood closed");
    row_action(client, "flood", "watch").await?;
    wait_for_text(client, "#tail-status", |t| t.starts_with("ended")).await?;
    let origin = text_of(client, "#tail-lines .tail-origin").await?;
    assert_eq!(
        origin,
        gatehouse_core::sandbox::stderr::marker(2048, 62 * 1024, 1_048_576)
    );
    let first = text_of(client, "#tail-lines li:first-child").await?;
    assert_eq!(first, origin, "core's marker stays on top");
    let counters = text_of(client, "#tail-counters").await?;
    assert!(
        counters.contains("1,048,576 bytes seen · 65,536 kept · truncated"),
        "{counters}"
    );
    assert_labelled(client, "Connections, a tail").await?;
    // Show the tail with core's marker on top (the README's picture of it):
    // the tail scrolled into the window, its list to its top.
    client
        .execute(
            "document.getElementById('tail-lines').scrollTop = 0",
            vec![],
        )
        .await?;
    screenshot_at(client, "e2e-connections.png", ".tail-tabs").await?;
    ensure_in_view(client, "#tail-lines .tail-origin").await?;
    ensure_in_view(client, "#tail-counters").await?;
    Ok(())
}

/// Waits for the config panel to show `client`'s output for `secret_ref` and
/// parses its main snippet as JSON.
pub(super) async fn config_json(
    client: &Client,
    id: &str,
    secret_ref: bool,
) -> Result<serde_json::Value> {
    let ready = format!(
        "#config-output[data-state='ready'][data-client='{id}'][data-secret-ref='{secret_ref}']"
    );
    client
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css(&ready))
        .await
        .with_context(|| format!("config for {id} (secret ref {secret_ref}) never showed"))?;
    let text = text_of(client, "#config-text").await?;
    serde_json::from_str(&text).with_context(|| format!("config text is not JSON: {text}"))
}

/// Runs the CLI a config names the way the client would, asking who it is.
fn whoami(command: &str, site: &str, key: &str) -> Result<std::process::Output> {
    Ok(Command::new(command)
        .args(["whoami", "--json", "--site", site])
        .env("GATEHOUSE_API_KEY", key)
        .stdin(Stdio::null())
        .output()?)
}

async fn keys_and_config(client: &Client, site: &Path) -> Result<()> {
    let cli = cli_binary()?;
    let site_dir = site.canonicalize()?;
    let site_str = site_dir.to_str().context("temp path is not UTF-8")?;

    // Mint from the UI.
    client.find(Locator::Id("nav-keys")).await?.click().await?;
    let label = client.find(Locator::Id("mint-label")).await?;
    label.send_keys("e2e laptop").await?;
    client
        .find(Locator::Id("mint-role-author"))
        .await?
        .click()
        .await?;
    client
        .find(Locator::Id("mint-expires"))
        .await?
        .send_keys("30d")
        .await?;
    client
        .find(Locator::Id("mint-submit"))
        .await?
        .click()
        .await?;
    let shown = client
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Id("minted-key"))
        .await?;
    let key = shown.text().await?;
    let parsed = gatehouse_core::access::keys::parse(&key)
        .map_err(|why| anyhow::anyhow!("shown key {key:?} is malformed: {why:?}"))?;
    let key_id = parsed.id.to_string();
    let warning = text_of(client, "#minted-warning").await?;
    assert!(warning.contains("shown only this once"), "{warning}");

    // The list row appears, without the secret.
    let row_css = format!("#keys-rows tr[data-key-id='{key_id}']");
    client
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css(&row_css))
        .await?;
    let row = text_of(client, &row_css).await?;
    assert!(
        row.contains("e2e laptop") && row.contains("viewer, author"),
        "{row}"
    );
    assert!(row.contains("active"), "{row}");
    assert!(
        !text_of(client, "#keys-table")
            .await?
            .contains(&key[..key.len() - 10])
    );

    // Claude Desktop config for this key, pre-filled under the key.
    let doc = config_json(client, "claude-desktop", false).await?;
    let entry = &doc["mcpServers"]["gatehouse"];
    assert_eq!(entry["command"], cli.to_str().unwrap(), "{doc}");
    assert_eq!(
        entry["args"],
        serde_json::json!(["mcp", "--site", site_str]),
        "{doc}"
    );
    assert_eq!(entry["env"]["GATEHOUSE_API_KEY"], key.as_str(), "{doc}");
    let html = client.source().await?;
    assert_eq!(
        html.matches(key.as_str()).count(),
        2,
        "the key shows once, plus once inside the config that carries it"
    );
    let location = text_of(client, "#config-output .location-list").await?;
    assert!(
        location.contains("claude_desktop_config.json"),
        "{location}"
    );
    assert_labelled(client, "Keys, a key minted").await?;
    screenshot(client, "e2e-keys-minted.png").await?;

    // The config's command really is the CLI, and the key works with it.
    let out = whoami(entry["command"].as_str().unwrap(), site_str, &key)?;
    ensure!(
        out.status.success(),
        "whoami with the minted key failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let me: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(me["key_id"], key_id.as_str(), "{me}");
    assert_eq!(me["roles"], serde_json::json!(["viewer", "author"]), "{me}");

    // VS Code with a secret reference: an input prompt, no key in the text.
    select(client, "config-client", "vscode").await?;
    client
        .find(Locator::Id("config-secret-ref"))
        .await?
        .click()
        .await?;
    let doc = config_json(client, "vscode", true).await?;
    let input = &doc["inputs"][0];
    assert_eq!(input["type"], "promptString", "{doc}");
    assert_eq!(input["password"], true, "{doc}");
    let env_value = &doc["servers"]["gatehouse"]["env"]["GATEHOUSE_API_KEY"];
    assert_eq!(
        env_value,
        &format!("${{input:{}}}", input["id"].as_str().unwrap())
    );
    assert!(!text_of(client, "#config-text").await?.contains(&key));
    screenshot(client, "e2e-config-vscode.png").await?;

    // Shown once: after leaving the screen the page holds the key nowhere.
    click(client, "#nav-overview").await?;
    click(client, "#nav-keys").await?;
    wait_for(client, &row_css).await?;
    assert!(!client.source().await?.contains(&key[..key.len() - 10]));

    // Nor does any later reply carry it: the Client config screen shows the
    // mask where the key goes, and so does the command asked directly.
    click(client, "#nav-client-config").await?;
    wait_for(client, &format!("#config-key option[value='{key_id}']")).await?;
    select(client, "config-key", &key_id).await?;
    wait_for(
        client,
        "#config-output[data-state='ready'][data-client='claude-desktop'] .key-masked",
    )
    .await?;
    let text = text_of(client, "#config-text").await?;
    ensure!(
        text.contains(REDACTED_KEY) && !text.contains(&key),
        "{text}"
    );
    let reply = client
        .execute_async(
            "const done = arguments[arguments.length - 1];
             window.__TAURI_INTERNALS__
               .invoke('generate_client_config', {args: {client: 'claude-desktop', key_id: arguments[0], secret_ref: false}})
               .then((r) => done(JSON.stringify(r)), (e) => done('refused: ' + JSON.stringify(e)));",
            vec![serde_json::json!(key_id)],
        )
        .await?;
    let reply = reply.as_str().unwrap_or_default();
    ensure!(
        reply.contains("GATEHOUSE_API_KEY") && !reply.contains(&key[..key.len() - 10]),
        "{reply}"
    );
    screenshot(client, "e2e-config-key-masked.png").await?;
    click(client, "#nav-keys").await?;
    wait_for(client, &row_css).await?;

    // Revoke (the first click arms the button).
    let revoke = format!("{row_css} button[data-action='revoke']");
    click(client, &revoke).await?;
    let armed = client.find(Locator::Css(&revoke)).await?;
    assert_eq!(armed.text().await?, "Confirm revoke");
    click(client, &revoke).await?;
    let revoked = format!("#keys-rows tr[data-key-id='{key_id}'][data-status='revoked']");
    client
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css(&revoked))
        .await?;
    assert_eq!(
        text_of(client, &format!("{revoked} .key-status")).await?,
        "revoked"
    );
    screenshot(client, "e2e-keys-revoked.png").await?;

    // Core agrees, and the key no longer gets in.
    let opened = gatehouse_core::site::open(&gatehouse_core::site::Settings {
        dir: site_dir.clone(),
        database_url: None,
    })
    .await?;
    let listed = gatehouse_core::access::keys::list(&opened.store).await?;
    opened.store.close().await;
    let info = listed
        .iter()
        .find(|k| k.id == key_id)
        .context("key not in the store")?;
    assert_eq!(
        info.status,
        gatehouse_core::access::keys::KeyStatus::Revoked
    );
    let out = whoami(cli.to_str().unwrap(), site_str, &key)?;
    assert!(!out.status.success(), "a revoked key still resolves");

    // The Client config screen offers active keys only.
    client
        .find(Locator::Id("nav-client-config"))
        .await?
        .click()
        .await?;
    config_json(client, "claude-desktop", false).await?;
    let options = client.find_all(Locator::Css("#config-key option")).await?;
    for option in &options {
        assert_ne!(
            option.attr("value").await?.as_deref(),
            Some(key_id.as_str())
        );
    }
    assert_labelled(client, "Client config").await?;
    screenshot(client, "e2e-config-screen.png").await?;
    Ok(())
}

#[tokio::test]
#[ignore = "needs tauri-driver, WebKitWebDriver and a display: run under xvfb-run with --include-ignored"]
async fn smoke_window_ipc_errors_and_stream() -> Result<()> {
    let (_tmp, real) = scratch_site("e2e-site").await?;
    let home = tempfile::tempdir()?;
    let mut driver = Driver::start(&real, home.path())?;
    let client = driver.connect().await?;
    let outcome = match smoke(&client, &real).await {
        Ok(()) => match keys_and_config(&client, &real).await {
            Ok(()) => match connections(&client, &real).await {
                Ok(()) => client_config::install_and_doctor(&client, &real, home.path()).await,
                Err(err) => Err(err),
            },
            Err(err) => Err(err),
        },
        Err(err) => Err(err),
    };
    // Close the session (and so the app) whether or not the checks passed.
    let closed = client.close().await;
    drop(driver);
    outcome?;
    ensure!(closed.is_ok(), "closing the WebDriver session: {closed:?}");
    Ok(())
}
