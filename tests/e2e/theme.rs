//! Light and dark follow the system's theme (GTK's setting, which WebKitGTK
//! reports as `prefers-color-scheme`), and focus moved by the keyboard is
//! visible. Each theme gets an app of its own.

use anyhow::{Context, Result, ensure};
use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::{Client, Locator};
use serde_json::Value;

use super::webdriver::{Driver, config_home, eval, open_site, scratch_site, screenshot, wait_for};

/// The WebDriver key code of Tab.
const TAB: &str = "\u{e004}";
const TAB_KEY: char = '\u{e004}';

#[tokio::test]
#[ignore = "needs tauri-driver, WebKitWebDriver and a display: run under xvfb-run with --include-ignored"]
async fn the_window_follows_the_system_theme_and_shows_keyboard_focus() -> Result<()> {
    let (_tmp, site) = scratch_site("e2e-theme").await?;
    // A saved connection, so the keyboard walk meets a row's actions too.
    super::desk::store_floods(&site, &["flood".to_string()], 1, None, 0).await?;
    for dark in [false, true] {
        let home = tempfile::tempdir()?;
        // What a desktop's "dark style" switch writes for GTK 3 programs.
        let gtk = config_home(home.path()).join("gtk-3.0");
        std::fs::create_dir_all(&gtk)?;
        std::fs::write(
            gtk.join("settings.ini"),
            format!(
                "[Settings]\ngtk-application-prefer-dark-theme={}\n",
                u8::from(dark)
            ),
        )?;
        let mut driver = Driver::start(&site, home.path())?;
        let client = driver.connect().await?;
        let outcome = check(&client, dark, &site).await;
        let closed = client.close().await;
        drop(driver);
        outcome.with_context(|| format!("dark: {dark}"))?;
        ensure!(closed.is_ok(), "closing the WebDriver session: {closed:?}");
    }
    Ok(())
}

/// The relative luminance (0 black, 1 white) of a CSS `rgb(…)` colour.
fn luminance(css: &str) -> Result<f64> {
    let inner = css
        .trim()
        .strip_prefix("rgb")
        .and_then(|s| s.trim_start_matches('a').strip_prefix('('))
        .and_then(|s| s.strip_suffix(')'))
        .with_context(|| format!("not an rgb colour: {css}"))?;
    let c: Vec<f64> = inner
        .split(',')
        .take(3)
        .map(|v| v.trim().parse::<f64>().map(|x| x / 255.0))
        .collect::<Result<_, _>>()?;
    ensure!(c.len() == 3, "not an rgb colour: {css}");
    Ok(0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2])
}

async fn check(client: &Client, dark: bool, site: &std::path::Path) -> Result<()> {
    wait_for(client, "nav").await?;
    let seen = client
        .execute(
            "return [matchMedia('(prefers-color-scheme: dark)').matches, \
                     getComputedStyle(document.body).backgroundColor, \
                     getComputedStyle(document.body).color]",
            vec![],
        )
        .await?;
    ensure!(
        seen[0] == Value::Bool(dark),
        "prefers-color-scheme dark: {seen}"
    );
    let bg = luminance(seen[1].as_str().unwrap_or_default())?;
    let fg = luminance(seen[2].as_str().unwrap_or_default())?;
    if dark {
        ensure!(bg < 0.2 && fg > 0.6, "a dark page: {seen}");
    } else {
        ensure!(bg > 0.8 && fg < 0.4, "a light page: {seen}");
    }
    let name = if dark {
        "e2e-theme-dark.png"
    } else {
        "e2e-theme-light.png"
    };
    screenshot(client, name).await?;

    // Tab from the top of the page: focus lands on a control, ringed.
    client
        .find(Locator::Css("body"))
        .await?
        .send_keys(TAB)
        .await?;
    let focus = client
        .execute(
            "const e = document.activeElement; const s = getComputedStyle(e); \
             return [e.tagName, e.id || e.className, s.outlineStyle, s.outlineWidth];",
            vec![],
        )
        .await?;
    let tag = focus[0].as_str().unwrap_or_default();
    ensure!(
        ["A", "BUTTON", "INPUT", "SELECT", "TEXTAREA"].contains(&tag),
        "Tab focused a control: {focus}"
    );
    ensure!(
        focus[2] != "none" && focus[3] != "0px",
        "keyboard focus is visible: {focus}"
    );
    if !dark {
        let path = site.to_str().context("temp path is not UTF-8")?;
        ensure!(open_site(client, path).await? == "OK", "opening the site");
        for screen in SCREENS {
            every_control_is_reached_by_tab(client, screen).await?;
        }
    }
    Ok(())
}

const SCREENS: [&str; 8] = [
    "overview",
    "keys",
    "users",
    "site-config",
    "audit",
    "connections",
    "actor-preview",
    "client-config",
];

/// Tags every control a person could act on in the window (enabled, shown,
/// not taken out of the tab order by a roving group, one per radio group).
const TAG_CONTROLS: &str = r#"
const seen = new Set();
const all = [...document.querySelectorAll('a[href], button, input, select, textarea, summary, [tabindex]')]
  .filter((e) => !e.disabled && e.tabIndex >= 0 && e.getClientRects().length > 0
    && getComputedStyle(e).visibility !== 'hidden')
  .filter((e) => {
    if (e.type !== 'radio') return true;
    if (seen.has(e.name)) return false;
    seen.add(e.name);
    return true;
  });
all.forEach((e, i) => { e.dataset.kb = String(i); });
return all.map((e) => e.id || e.getAttribute('aria-label') || e.textContent.trim().slice(0, 40));
"#;

/// What Tab focused: its tag (or its radio group's first member's), and its outline.
const FOCUSED: &str = r#"
let e = document.activeElement;
if (e && e.type === 'radio') e = document.querySelector(`input[type=radio][name="${e.name}"][data-kb]`) ?? e;
const s = getComputedStyle(document.activeElement);
return [e?.dataset?.kb ?? null, s.outlineStyle, s.outlineWidth, document.activeElement.id];
"#;

/// On `screen`, Tab alone reaches every control, each with a visible ring.
async fn every_control_is_reached_by_tab(client: &Client, screen: &str) -> Result<()> {
    client
        .execute(
            "location.hash = '#/' + arguments[0];",
            vec![Value::from(screen)],
        )
        .await?;
    wait_for(client, &format!("#nav-{screen}[aria-current='page']")).await?;
    // Lists and panels load after the frame: let them settle first.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let names: Vec<String> = eval(client, TAG_CONTROLS, vec![]).await?;
    // The header's and the sidebar's nine, and the screen's own.
    ensure!(names.len() > 10, "{screen}: only {names:?}");
    client
        .execute("document.activeElement?.blur();", vec![])
        .await?;
    let mut reached = vec![false; names.len()];
    // A date-time field takes a Tab stop per part (day, month, year, hour…).
    for _ in 0..names.len() * 2 + 20 {
        // A key action, not "send keys to the element": that refocuses the
        // element first, which puts a date field back on its first part.
        let tab = KeyActions::new("keyboard".into())
            .then(KeyAction::Down { value: TAB_KEY })
            .then(KeyAction::Up { value: TAB_KEY });
        client.perform_actions(tab).await?;
        let f = client.execute(FOCUSED, vec![]).await?;
        let Some(i) = f[0].as_str().and_then(|i| i.parse::<usize>().ok()) else {
            continue;
        };
        ensure!(
            f[1] != "none" && f[2] != "0px",
            "{screen}: {:?} takes focus without a visible ring: {f}",
            names[i]
        );
        reached[i] = true;
        if reached.iter().all(|r| *r) {
            return Ok(());
        }
    }
    let missed: Vec<&String> = names
        .iter()
        .zip(&reached)
        .filter(|(_, r)| !**r)
        .map(|(n, _)| n)
        .collect();
    anyhow::bail!("{screen}: Tab never reached {missed:?}")
}
