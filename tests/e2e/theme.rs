//! Light and dark follow the system's theme (GTK's setting, which WebKitGTK
//! reports as `prefers-color-scheme`), and focus moved by the keyboard is
//! visible. Each theme gets an app of its own.

use anyhow::{Context, Result, ensure};
use fantoccini::{Client, Locator};
use serde_json::Value;

use super::webdriver::{Driver, config_home, scratch_site, screenshot, wait_for};

/// The WebDriver key code of Tab.
const TAB: &str = "\u{e004}";

#[tokio::test]
#[ignore = "needs tauri-driver, WebKitWebDriver and a display: run under xvfb-run with --include-ignored"]
async fn the_window_follows_the_system_theme_and_shows_keyboard_focus() -> Result<()> {
    let (_tmp, site) = scratch_site("e2e-theme").await?;
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
        let outcome = check(&client, dark).await;
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

async fn check(client: &Client, dark: bool) -> Result<()> {
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
    Ok(())
}
