//! WebDriver end-to-end tests of the real desktop binary in a real WebKitGTK
//! webview.
//!
//! Needs `tauri-driver` (on PATH or in ~/.cargo/bin), `WebKitWebDriver` and a
//! display, so the tests are `#[ignore]`d by default. Run them with:
//!
//! ```sh
//! xvfb-run -a cargo test --test e2e -- --include-ignored
//! ```
//!
//! Screenshots of each run land in `<target>/tmp/e2e-*.png`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use fantoccini::{Client, ClientBuilder, Locator};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const DRIVER_PORT: u16 = 4444;
/// How long to wait for something the page should do soon. Not an assertion
/// on speed: only a bound so a broken build fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(30);

/// A running `tauri-driver`, stopped with SIGTERM on drop: SIGKILL would leave
/// its `WebKitWebDriver` child holding the native port for the next run.
struct Driver(Child);

impl Driver {
    /// Starts the driver; the app it launches inherits its environment, so
    /// `GATEHOUSE_SITE` is set to `default_site` and `GATEHOUSE_BIN` removed
    /// (the app must find the CLI next to itself).
    fn start(default_site: &Path) -> Result<Self> {
        let exe = find_tauri_driver()?;
        let child = Command::new(&exe)
            .args(["--port", &DRIVER_PORT.to_string()])
            .env(gatehouse_core::site::ENV_SITE, default_site)
            .env_remove("GATEHOUSE_BIN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", exe.display()))?;
        Ok(Self(child))
    }

    /// Connects a WebDriver session that launches the app, retrying until the
    /// driver listens.
    async fn connect(&mut self) -> Result<Client> {
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), "wry".into());
        caps.insert(
            "tauri:options".into(),
            serde_json::json!({ "application": env!("CARGO_BIN_EXE_gatehouse-desktop") }),
        );
        let url = format!("http://127.0.0.1:{DRIVER_PORT}");
        let deadline = Instant::now() + PATIENCE;
        loop {
            match ClientBuilder::native()
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(client) => return Ok(client),
                Err(err) => {
                    if let Some(status) = self.0.try_wait()? {
                        bail!("tauri-driver exited with {status} before accepting a session");
                    }
                    if Instant::now() > deadline {
                        return Err(err).context("connecting to tauri-driver");
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let pid = Pid::from_raw(self.0.id() as i32);
        if self.0.try_wait().ok().flatten().is_none() && kill(pid, Signal::SIGTERM).is_ok() {
            let _ = self.0.wait();
        }
    }
}

fn find_tauri_driver() -> Result<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default();
    let in_cargo_home = std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo/bin"));
    on_path
        .into_iter()
        .chain(in_cargo_home)
        .map(|dir| dir.join("tauri-driver"))
        .find(|candidate| candidate.is_file())
        .context("tauri-driver not found on PATH or in ~/.cargo/bin; install it with `cargo install tauri-driver --locked --version ^2`")
}

/// Polls the text of `css` until `done` accepts it; returns that text.
async fn wait_for_text(client: &Client, css: &str, done: impl Fn(&str) -> bool) -> Result<String> {
    let deadline = Instant::now() + PATIENCE;
    let mut last = String::new();
    loop {
        if let Ok(el) = client.find(Locator::Css(css)).await {
            last = el.text().await.unwrap_or_default();
            if done(&last) {
                return Ok(last);
            }
        }
        if Instant::now() > deadline {
            bail!("{css} never showed the expected text; last text: {last:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Types `path` into the site field, submits, and returns the code shown.
async fn open_site(client: &Client, path: &str) -> Result<String> {
    // Drop the previous result so the wait below sees the new one.
    client
        .execute(
            "document.getElementById('site-result').replaceChildren()",
            vec![],
        )
        .await?;
    let input = client.find(Locator::Id("site-path")).await?;
    input.clear().await?;
    if !path.is_empty() {
        input.send_keys(path).await?;
    }
    client
        .find(Locator::Id("site-check"))
        .await?
        .click()
        .await?;
    let notice = client
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css("#site-result [data-code]"))
        .await?;
    Ok(notice.attr("data-code").await?.unwrap_or_default())
}

async fn smoke(client: &Client, real: &Path) -> Result<()> {
    assert_eq!(client.title().await?, "Gatehouse");
    // The site field starts at GATEHOUSE_SITE.
    let wanted = real.to_str().context("temp path is not UTF-8")?;
    let deadline = Instant::now() + PATIENCE;
    loop {
        let value = client
            .find(Locator::Id("site-path"))
            .await?
            .prop("value")
            .await?
            .unwrap_or_default();
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
    screenshot(client, "e2e-overview.png").await?;

    // Lines streamed through a tauri::ipc::Channel arrive complete and in order.
    client
        .find(Locator::Id("nav-connections"))
        .await?
        .click()
        .await?;
    client
        .find(Locator::Id("tail-start"))
        .await?
        .click()
        .await?;
    let status = wait_for_text(client, "#tail-status", |t| t.starts_with("ended")).await?;
    let expected: Vec<String> = (1..=40).map(|i| format!("demo line {i} of 40")).collect();
    let bytes: usize = expected.iter().map(|line| line.len() + 1).sum();
    assert_eq!(status, format!("ended: 40 lines, {bytes} bytes"));
    let mut lines = Vec::new();
    for li in client.find_all(Locator::Css("#tail-lines li")).await? {
        lines.push(li.text().await?);
    }
    assert_eq!(lines, expected, "every line once, in order, no gap marker");

    screenshot(client, "e2e-connections.png").await?;
    Ok(())
}

/// Saves what the window shows, for a person to look at (not compared).
async fn screenshot(client: &Client, name: &str) -> Result<()> {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, client.screenshot().await?)?;
    eprintln!("screenshot: {}", path.display());
    Ok(())
}

/// The `gatehouse` CLI the app must write into configs: built next to the
/// desktop binary by `cargo test --workspace --no-run` (or `cargo build
/// --workspace`). Its absence fails the test rather than skipping it.
fn cli_binary() -> Result<PathBuf> {
    let desktop = Path::new(env!("CARGO_BIN_EXE_gatehouse-desktop"));
    let cli = desktop.with_file_name(format!("gatehouse{}", std::env::consts::EXE_SUFFIX));
    ensure!(
        cli.is_file(),
        "{} is missing: build the workspace first (`cargo test --workspace --no-run`)",
        cli.display()
    );
    Ok(cli.canonicalize()?)
}

async fn text_of(client: &Client, css: &str) -> Result<String> {
    Ok(client.find(Locator::Css(css)).await?.text().await?)
}

/// Waits for the config panel to show `client`'s output for `secret_ref` and
/// parses its main snippet as JSON.
async fn config_json(client: &Client, id: &str, secret_ref: bool) -> Result<serde_json::Value> {
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
    let parsed = gatehouse_core::keys::parse(&key)
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
    client
        .find(Locator::Id("config-client"))
        .await?
        .select_by_value("vscode")
        .await?;
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
    client
        .find(Locator::Id("nav-overview"))
        .await?
        .click()
        .await?;
    client.find(Locator::Id("nav-keys")).await?.click().await?;
    client
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css(&row_css))
        .await?;
    assert!(!client.source().await?.contains(&key[..key.len() - 10]));

    // Revoke (the first click arms the button).
    let revoke = format!("{row_css} button[data-action='revoke']");
    client.find(Locator::Css(&revoke)).await?.click().await?;
    let armed = client.find(Locator::Css(&revoke)).await?;
    assert_eq!(armed.text().await?, "Confirm revoke");
    armed.click().await?;
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
    let listed = gatehouse_core::keys::list(&opened.store).await?;
    opened.store.close().await;
    let info = listed
        .iter()
        .find(|k| k.id == key_id)
        .context("key not in the store")?;
    assert_eq!(info.status, "revoked");
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
    screenshot(client, "e2e-config-screen.png").await?;
    Ok(())
}

#[tokio::test]
#[ignore = "needs tauri-driver, WebKitWebDriver and a display: run under xvfb-run with --include-ignored"]
async fn smoke_window_ipc_errors_and_stream() -> Result<()> {
    let real = tempfile::tempdir()?;
    gatehouse_core::site::init(real.path(), Some("e2e-site"), true, None).await?;
    let mut driver = Driver::start(real.path())?;
    let client = driver.connect().await?;
    let outcome = match smoke(&client, real.path()).await {
        Ok(()) => keys_and_config(&client, real.path()).await,
        Err(err) => Err(err),
    };
    // Close the session (and so the app) whether or not the checks passed.
    let closed = client.close().await;
    drop(driver);
    outcome?;
    ensure!(closed.is_ok(), "closing the WebDriver session: {closed:?}");
    Ok(())
}
