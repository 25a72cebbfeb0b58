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
    fn start() -> Result<Self> {
        let exe = find_tauri_driver()?;
        let child = Command::new(&exe)
            .args(["--port", &DRIVER_PORT.to_string()])
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

async fn smoke(client: &Client) -> Result<()> {
    assert_eq!(client.title().await?, "Gatehouse");
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
    let real = tempfile::tempdir()?;
    gatehouse_core::site::init(real.path(), Some("e2e-site"), true, None).await?;
    let real_path = real.path().to_str().context("temp path is not UTF-8")?;
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

#[tokio::test]
#[ignore = "needs tauri-driver, WebKitWebDriver and a display: run under xvfb-run with --include-ignored"]
async fn smoke_window_ipc_errors_and_stream() -> Result<()> {
    let mut driver = Driver::start()?;
    let client = driver.connect().await?;
    let outcome = smoke(&client).await;
    // Close the session (and so the app) whether or not the checks passed.
    let closed = client.close().await;
    drop(driver);
    outcome?;
    ensure!(closed.is_ok(), "closing the WebDriver session: {closed:?}");
    Ok(())
}
