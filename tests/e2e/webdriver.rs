//! The WebDriver harness of every scenario: `tauri-driver` started and
//! stopped cleanly (one session at a time: the app's remembered state and
//! the display are shared), a session that launches the real app, and small
//! waits on the page.
//!
//! The app runs with `HOME` and `XDG_CONFIG_HOME` pointed at folders the test
//! owns, so what it remembers (recent sites, last screen, window state) and
//! the client files it installs into are never the developer's own.
//! Screenshots go to `target/e2e-screenshots/`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use fantoccini::elements::Element;
use fantoccini::error::CmdError;
use fantoccini::{Client, ClientBuilder, Locator};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// How long to wait for something the page should do soon. Not an assertion
/// on speed: only a bound so a broken build fails instead of hanging.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// A running `tauri-driver`, stopped with SIGTERM on drop: SIGKILL would leave
/// its `WebKitWebDriver` child running. It holds the one turn until then.
pub struct Driver {
    child: Child,
    /// Where the driver listens: a port free when it started, as is its
    /// `WebKitWebDriver`'s. The defaults (4444, 4445) were fixed, and a
    /// `WebKitWebDriver` of the previous scenario still closing could hold
    /// 4445 when the next one started (CI saw "Unable to listen").
    port: u16,
    /// What the driver has been seen to launch: stopped with it, even once
    /// the driver itself has gone (an orphan is not found through it).
    seen: Vec<Proc>,
    /// What the driver was started with, to start it again (see `connect`).
    default_site: PathBuf,
    home: PathBuf,
    env: Vec<(String, String)>,
    _turn: MutexGuard<'static, ()>,
}

/// Scenarios run one after another: one display, one app at a time.
static TURN: Mutex<()> = Mutex::new(());

/// How long one session request may take: the app starts in about a second;
/// an app that died while starting leaves the request unanswered for good.
const SESSION_PATIENCE: Duration = Duration::from_secs(45);

impl Driver {
    /// Starts the driver; the app it launches inherits its environment:
    /// `GATEHOUSE_SITE` is `default_site`, `HOME` is `home` and
    /// `XDG_CONFIG_HOME` its `.config` (with the variables clients' paths
    /// honour removed), and `GATEHOUSE_BIN` is removed (the app must find
    /// the CLI next to itself).
    pub fn start(default_site: &Path, home: &Path) -> Result<Self> {
        Self::start_with(default_site, home, &[])
    }

    /// As [`Driver::start`], with `env` added to the app's environment (a
    /// host variable a connection passes through to its server, say).
    pub fn start_with(default_site: &Path, home: &Path, env: &[(&str, &str)]) -> Result<Self> {
        // A scenario that failed still hands the turn on.
        let turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let (child, port) = spawn_driver(default_site, home, &env)?;
        Ok(Self {
            child,
            port,
            seen: Vec::new(),
            default_site: default_site.to_path_buf(),
            home: home.to_path_buf(),
            env,
            _turn: turn,
        })
    }

    /// Connects a WebDriver session that launches the app, retrying until the
    /// driver listens. A session request left unanswered (the app died while
    /// starting: CI once saw GTK fail to open the display), or a driver or
    /// `WebKitWebDriver` that ended first (a port taken since it was
    /// chosen), restarts the driver on new ports and asks once more, instead
    /// of waiting forever.
    pub async fn connect(&mut self) -> Result<Client> {
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), "wry".into());
        caps.insert(
            "tauri:options".into(),
            serde_json::json!({ "application": app() }),
        );
        let mut restarted = false;
        let mut deadline = Instant::now() + PATIENCE;
        loop {
            let mut builder = ClientBuilder::native();
            builder.capabilities(caps.clone());
            let url = format!("http://127.0.0.1:{}", self.port);
            match tokio::time::timeout(SESSION_PATIENCE, builder.connect(&url)).await {
                Ok(Ok(client)) => return Ok(client),
                Ok(Err(err)) => {
                    let ended = match self.child.try_wait()? {
                        Some(status) => Some(format!("tauri-driver exited with {status}")),
                        None => self
                            .native_ended()
                            .then(|| "WebKitWebDriver ended".to_string()),
                    };
                    if let Some(ended) = ended {
                        ensure!(!restarted, "{ended} before accepting a session, twice");
                        eprintln!("{ended} before accepting a session; restarting the driver");
                        self.restart()?;
                        restarted = true;
                        deadline = Instant::now() + PATIENCE;
                        continue;
                    }
                    if Instant::now() > deadline {
                        return Err(err).context("connecting to tauri-driver");
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(_) if !restarted => {
                    eprintln!("the app did not answer a session request; restarting the driver");
                    self.restart()?;
                    restarted = true;
                    deadline = Instant::now() + PATIENCE;
                }
                Err(_) => bail!("the app did not start twice (see its output above)"),
            }
        }
    }

    /// Stops the driver and starts it again on new ports.
    fn restart(&mut self) -> Result<()> {
        self.stop();
        (self.child, self.port) = spawn_driver(&self.default_site, &self.home, &self.env)?;
        Ok(())
    }

    /// Whether the `WebKitWebDriver` this driver started has ended (only
    /// once one was seen: the driver starts it first thing).
    fn native_ended(&mut self) -> bool {
        let driver = self.child.id() as i32;
        let now = launched_by(driver);
        for p in &now {
            if !self.seen.iter().any(|s| s.same(p)) {
                self.seen.push(*p);
            }
        }
        let had = self.seen.iter().any(|p| p.parent == driver);
        had && !now.iter().any(|p| p.parent == driver && p.state != 'Z')
    }

    /// The app this driver launched, while it runs.
    pub fn app_pid(&self) -> Result<i32> {
        let exe = app().canonicalize()?;
        launched_by(self.child.id() as i32)
            .into_iter()
            .find(|p| {
                p.state != 'Z'
                    && std::fs::read_link(format!("/proc/{}/exe", p.pid)).is_ok_and(|e| e == exe)
            })
            .map(|p| p.pid)
            .context("the app the driver launched is not running")
    }

    /// Stops the driver, and with it the app it launched: an app still
    /// running once the driver has gone (stopped before it ended its
    /// browser) is killed, so no scenario leaves one behind for the next.
    /// The app's own children are left to it: how they end is tested.
    /// Returns once what the driver launched has ended (within
    /// [`PATIENCE`]), so the next scenario starts on a quiet display.
    fn stop(&mut self) {
        let pid = Pid::from_raw(self.child.id() as i32);
        // A driver already reaped may have lent its pid to another process.
        let running = self.child.try_wait().ok().flatten().is_none();
        let mut launched = if running {
            launched_by(self.child.id() as i32)
        } else {
            Vec::new()
        };
        for p in self.seen.drain(..) {
            if !launched.iter().any(|l| l.same(&p)) {
                launched.push(p);
            }
        }
        if running && kill(pid, Signal::SIGTERM).is_ok() {
            let _ = self.child.wait();
        }
        for p in &launched {
            // Still the same process (a pid is reused once its process ends).
            if stat_of(p.pid).is_some_and(|s| s.same(p)) {
                let _ = kill(Pid::from_raw(p.pid), Signal::SIGKILL);
            }
        }
        let deadline = Instant::now() + PATIENCE;
        let left = || -> Vec<i32> {
            launched
                .iter()
                .filter(|p| stat_of(p.pid).is_some_and(|s| s.same(p) && s.state != 'Z'))
                .map(|p| p.pid)
                .collect()
        };
        while !left().is_empty() {
            if Instant::now() > deadline {
                eprintln!(
                    "still running {PATIENCE:?} after SIGKILL: {:?}; the next scenario starts beside them",
                    left()
                );
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Whether `pid` still runs: a zombie has ended (its reaping is its parent's
/// business, and an orphan's new parent may take its time).
pub fn alive(pid: i32) -> bool {
    kill(Pid::from_raw(pid), None).is_ok() && stat_of(pid).is_none_or(|p| p.state != 'Z')
}

/// Whether `done` holds within [`PATIENCE`], asked every 100 ms.
pub async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    true
}

/// A process as `/proc/PID/stat` tells it.
#[derive(Debug, Clone, Copy)]
pub struct Proc {
    pub pid: i32,
    /// `R`, `S`, … `Z` for a zombie (ended, not yet reaped).
    pub state: char,
    pub parent: i32,
    /// Clock ticks after boot: tells a process from a later one with its pid.
    pub started: u64,
}

impl Proc {
    /// The same process (a pid is reused once its process ends).
    fn same(&self, other: &Proc) -> bool {
        self.pid == other.pid && self.started == other.started
    }
}

/// `pid` now; `None` once it is gone.
pub fn stat_of(pid: i32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's closing parenthesis: state, parent, … start time (the 20th).
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split(' ').collect();
    Some(Proc {
        pid,
        state: fields.first()?.chars().next()?,
        parent: fields.get(1)?.parse().ok()?,
        started: fields.get(19)?.parse().ok()?,
    })
}

/// The processes `driver` started and theirs (WebKitWebDriver, then the app
/// and WebKit's helpers); not the app's children.
fn launched_by(driver: i32) -> Vec<Proc> {
    let all: Vec<Proc> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| stat_of(e.file_name().to_str()?.parse().ok()?))
        .collect();
    let children = |of: &[i32]| -> Vec<Proc> {
        all.iter()
            .filter(|p| of.contains(&p.parent))
            .copied()
            .collect()
    };
    let webdriver = children(&[driver]);
    let pids: Vec<i32> = webdriver.iter().map(|p| p.pid).collect();
    let mut launched = children(&pids);
    launched.extend(webdriver);
    launched
}

/// Starts `tauri-driver` on two ports free now; returns it and its port.
fn spawn_driver(
    default_site: &Path,
    home: &Path,
    env: &[(String, String)],
) -> Result<(Child, u16)> {
    let exe = find_tauri_driver()?;
    // Both held while choosing, so they differ.
    let driver = std::net::TcpListener::bind("127.0.0.1:0")?;
    let native = std::net::TcpListener::bind("127.0.0.1:0")?;
    let (port, native_port) = (driver.local_addr()?.port(), native.local_addr()?.port());
    drop((driver, native));
    let child = Command::new(&exe)
        // GL compositing (llvmpipe here): WebKitWebDriver's screenshot never
        // answers for a page painted without it until the page changes.
        // The load scenario passes the product's own choice.
        .env(gatehouse_desktop::painting::OVERRIDE, "1")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .args(["--port", &port.to_string()])
        .args(["--native-port", &native_port.to_string()])
        .env(gatehouse_core::site::ENV_SITE, default_site)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", config_home(home))
        .env_remove("CODEX_HOME")
        .env_remove("COPILOT_HOME")
        .env_remove("CLINE_DIR")
        .env_remove("CLINE_DATA_DIR")
        .env_remove("CLINE_MCP_SETTINGS_PATH")
        .env_remove("GATEHOUSE_BIN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    Ok((child, port))
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The app under test: `GATEHOUSE_E2E_APP` (the release build, for
/// `scripts/bench-desk.sh`), else the debug build of this package.
pub fn app() -> PathBuf {
    std::env::var_os("GATEHOUSE_E2E_APP")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_gatehouse-desktop")))
}

/// Where the app keeps what it remembers, under the test's `home`.
pub fn config_home(home: &Path) -> PathBuf {
    home.join(".config")
}

/// Names `home/Downloads` the user's downloads folder (in the XDG user dirs
/// file under [`config_home`], which Tauri's `download_dir` reads; there is no
/// environment variable for it), so what the app saves there lands in a
/// folder the test owns; returns that folder. Without the file the app falls
/// back to `home` itself.
pub fn downloads_in(home: &Path) -> Result<PathBuf> {
    let config = config_home(home);
    std::fs::create_dir_all(&config)?;
    std::fs::write(
        config.join("user-dirs.dirs"),
        "XDG_DOWNLOAD_DIR=\"$HOME/Downloads\"\n",
    )?;
    Ok(home.join("Downloads"))
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

/// Waits for `css` to appear.
pub async fn wait_for(client: &Client, css: &str) -> Result<fantoccini::elements::Element> {
    client
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css(css))
        .await
        .with_context(|| format!("{css} never appeared"))
}

/// Waits for `css` to be gone (a closing dialog, say: while a modal dialog
/// is open the rest of the page is inert, and a click there does nothing).
pub async fn wait_gone(client: &Client, css: &str) -> Result<()> {
    let deadline = Instant::now() + PATIENCE;
    while !client.find_all(Locator::Css(css)).await?.is_empty() {
        ensure!(Instant::now() < deadline, "{css} never went away");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Runs `attempt` on the element `css` until it succeeds, within
/// [`PATIENCE`]: the element may not be there yet, or the page may re-render
/// it between the lookup and the use (then it is found again).
async fn with_element<T>(
    client: &Client,
    css: &str,
    what: &str,
    mut attempt: impl AsyncFnMut(Element) -> Result<T, CmdError>,
) -> Result<T> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let tried = match client.find(Locator::Css(css)).await {
            Ok(element) => attempt(element).await,
            Err(e) => Err(e),
        };
        match tried {
            Ok(value) => return Ok(value),
            Err(e) if Instant::now() > deadline => {
                return Err(e).with_context(|| format!("{what} {css}"));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Clicks `css` once it is there, scrolled into view first as a person would
/// (the window is small under Xvfb and WebKitWebDriver refuses an off-screen
/// click).
pub async fn click(client: &Client, css: &str) -> Result<()> {
    with_element(client, css, "clicking", async |element| {
        let arg = serde_json::to_value(&element).expect("an element serialises");
        client
            .execute(
                "arguments[0].scrollIntoView({block: 'center', inline: 'center'});",
                vec![arg],
            )
            .await?;
        element.click().await
    })
    .await
}

/// Picks option `value` of the select whose id is `id`.
pub async fn select(client: &Client, id: &str, value: &str) -> Result<()> {
    client
        .find(Locator::Id(id))
        .await?
        .select_by_value(value)
        .await
        .with_context(|| format!("choosing {value:?} in #{id}"))?;
    Ok(())
}

/// Clears the input `css` and types `text` into it.
pub async fn type_into(client: &Client, css: &str, text: &str) -> Result<()> {
    with_element(client, css, "typing into", async |input| {
        input.clear().await?;
        if !text.is_empty() {
            input.send_keys(text).await?;
        }
        Ok(())
    })
    .await
}

/// The text of `css` once it is there.
pub async fn text_of(client: &Client, css: &str) -> Result<String> {
    with_element(client, css, "reading", async |element| element.text().await).await
}

/// Clicks `action` (open, close, edit, watch…) on connection `name`'s row.
pub async fn row_action(client: &Client, name: &str, action: &str) -> Result<()> {
    click(
        client,
        &format!("#conn-rows tr[data-connection='{name}'] button[data-action='{action}']"),
    )
    .await
}

/// A fresh scratch site (sample data) named `name`, in a temporary folder
/// that lives as long as the returned guard.
pub async fn scratch_site(name: &str) -> Result<(tempfile::TempDir, PathBuf)> {
    let tmp = tempfile::tempdir()?;
    let site = tmp.path().join("site");
    gatehouse_core::site::init(&site, Some(name), true, None)
        .await?
        .store
        .close()
        .await;
    Ok((tmp, site))
}

/// Waits until connection `name`'s row is in `state`; returns the row's
/// selector, for reads that retry when the row is re-rendered (a held
/// element goes stale with every live update).
pub async fn row_state(client: &Client, name: &str, state: &str) -> Result<String> {
    let row = format!("#conn-rows tr[data-connection='{name}'][data-state='{state}']");
    wait_for(client, &row).await?;
    Ok(row)
}

/// Polls the text of `css` until `done` accepts it; returns that text.
pub async fn wait_for_text(
    client: &Client,
    css: &str,
    done: impl Fn(&str) -> bool,
) -> Result<String> {
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

/// Where screenshots go: `target/e2e-screenshots/`.
pub fn screenshot_dir() -> PathBuf {
    // CARGO_TARGET_TMPDIR is <target>/tmp.
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(|target| target.join("e2e-screenshots"))
        .unwrap_or_else(|| PathBuf::from("e2e-screenshots"))
}

/// Saves what the window shows, for a person to look at (not compared),
/// after scrolling `css` into view and letting two frames paint (WebKitGTK
/// under Xvfb otherwise may hand back the last frame it painted).
pub async fn screenshot_at(client: &Client, name: &str, css: &str) -> Result<()> {
    client
        .execute(
            "document.querySelector(arguments[0])?.scrollIntoView({block: 'start'})",
            vec![serde_json::json!(css)],
        )
        .await?;
    screenshot(client, name).await
}

/// Saves what the window shows, for a person to look at (not compared).
pub async fn screenshot(client: &Client, name: &str) -> Result<()> {
    client
        .execute_async(
            "const done = arguments[arguments.length - 1]; requestAnimationFrame(() => requestAnimationFrame(() => done(null)))",
            vec![],
        )
        .await?;
    let dir = screenshot_dir();
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(name);
    std::fs::write(&path, client.screenshot().await?)?;
    eprintln!("screenshot: {}", path.display());
    Ok(())
}

/// The `gatehouse` CLI built next to the desktop binary by `cargo test
/// --workspace --no-run`. Its absence fails the test rather than skipping it.
pub fn cli_binary() -> Result<PathBuf> {
    let desktop = app();
    let cli = desktop.with_file_name(format!("gatehouse{}", std::env::consts::EXE_SUFFIX));
    ensure!(
        cli.is_file(),
        "{} is missing: build the workspace first (`cargo test --workspace --no-run`)",
        cli.display()
    );
    Ok(cli.canonicalize()?)
}

/// The real `gatehouse` CLI on a scenario's site, with the app's home (so
/// both sign and check the audit chain with the same key).
pub struct Cli {
    exe: PathBuf,
    site: PathBuf,
    home: PathBuf,
}

impl Cli {
    pub fn new(site: &Path, home: &Path) -> Result<Self> {
        Ok(Self {
            exe: cli_binary()?,
            site: site.to_path_buf(),
            home: home.to_path_buf(),
        })
    }

    pub fn run(&self, args: &[&str]) -> Result<Output> {
        Ok(Command::new(&self.exe)
            .arg("--site")
            .arg(&self.site)
            .args(args)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", config_home(&self.home))
            .env_remove("PIN_VARIANT")
            .stdin(Stdio::null())
            .output()?)
    }

    pub fn ok(&self, args: &[&str]) -> Result<String> {
        let out = self.run(args)?;
        ensure!(
            out.status.success(),
            "gatehouse {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8(out.stdout)?)
    }

    pub fn json(&self, args: &[&str]) -> Result<serde_json::Value> {
        Ok(serde_json::from_str(&self.ok(args)?)?)
    }
}

/// The system python3 (the pyenv shim cannot start inside the sandbox).
pub fn python3() -> Result<PathBuf> {
    let system = PathBuf::from("/usr/bin/python3");
    if system.is_file() {
        return Ok(system);
    }
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|dir| dir.join("python3"))
        .find(|candidate| candidate.is_file())
        .context("python3 not found on PATH (the MCP fixture server needs it)")
}

/// Sets the checkbox `css` to `on`, clicking it only when it differs.
pub async fn tick(client: &Client, css: &str, on: bool) -> Result<()> {
    let checked = wait_for(client, css).await?.prop("checked").await?;
    if (checked.as_deref() == Some("true")) != on {
        click(client, css).await?;
    }
    Ok(())
}

/// Opens the site in `path` from the Overview screen; returns the code shown.
pub async fn open_site(client: &Client, path: &str) -> Result<String> {
    click(client, "#nav-overview").await?;
    type_into(client, "#site-path", path).await?;
    client
        .execute(
            "document.getElementById('site-result')?.replaceChildren()",
            vec![],
        )
        .await?;
    click(client, "#site-check").await?;
    let notice = wait_for(client, "#site-result [data-code]").await?;
    Ok(notice.attr("data-code").await?.unwrap_or_default())
}

/// Runs `script` in the page and reads what it returns as a `T`.
pub async fn eval<T: serde::de::DeserializeOwned>(
    client: &Client,
    script: &str,
    args: Vec<serde_json::Value>,
) -> Result<T> {
    Ok(serde_json::from_value(client.execute(script, args).await?)?)
}

/// Fails naming every input, select, textarea and button on the page that
/// has no accessible name: none of `aria-labelledby` (pointing at text),
/// `aria-label`, a `<label>` (by `for` or wrapping it) with text, or, for a
/// button, its own text (or an input button's value). Hidden controls count
/// too: they are named before they are shown. `screen` names the page state
/// in the failure.
pub async fn assert_labelled(client: &Client, screen: &str) -> Result<()> {
    let offenders: Vec<String> = eval(
        client,
        r#"
const text = (el) => (el?.textContent ?? "").trim();
const named = (el) => {
  const by = (el.getAttribute("aria-labelledby") ?? "").split(/\s+/).filter(Boolean);
  if (by.some((id) => text(document.getElementById(id)) !== "")) return true;
  if ((el.getAttribute("aria-label") ?? "").trim() !== "") return true;
  if (Array.from(el.labels ?? [], text).some((t) => t !== "")) return true;
  if (el.tagName === "BUTTON") return text(el) !== "";
  if (el.tagName === "INPUT" && ["button", "submit", "reset"].includes(el.type)) return (el.value ?? "").trim() !== "";
  return false;
};
return Array.from(document.querySelectorAll("input, select, textarea, button"))
  .filter((el) => !(el.tagName === "INPUT" && el.type === "hidden"))
  .filter((el) => !named(el))
  .map((el) => {
    const id = el.id ? `#${el.id}` : "";
    const cls = el.classList.length ? `.${Array.from(el.classList).join(".")}` : "";
    const where = el.closest("[id]")?.id;
    return `${el.tagName.toLowerCase()}${id}${cls}${el.type ? `[type=${el.type}]` : ""}${where && !id ? ` in #${where}` : ""}`;
  });
"#, vec![]).await?;
    ensure!(
        offenders.is_empty(),
        "controls without an accessible name on {screen}: {offenders:?}"
    );
    Ok(())
}

/// Fails unless `css` is laid out whole inside the window (and inside the
/// scrolled box around it): what a screenshot taken now shows of it.
pub async fn ensure_in_view(client: &Client, css: &str) -> Result<()> {
    let seen = client
        .execute(
            r#"
const el = document.querySelector(arguments[0]);
if (!el) return false;
const r = el.getBoundingClientRect();
if (r.height === 0 || r.top < 0 || r.bottom > window.innerHeight) return false;
for (let box = el.parentElement; box; box = box.parentElement) {
  if (box.scrollHeight > box.clientHeight && getComputedStyle(box).overflowY !== "visible") {
    const b = box.getBoundingClientRect();
    if (r.top < b.top || r.bottom > b.bottom) return false;
  }
}
return true;
"#,
            vec![serde_json::json!(css)],
        )
        .await?;
    ensure!(seen == serde_json::json!(true), "{css} is not in view");
    Ok(())
}
