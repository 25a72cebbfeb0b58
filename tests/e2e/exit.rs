//! The app's end when the session asks for it: a SIGTERM (logout, shutdown)
//! ends the app as closing its window does, so its exit steps run and the
//! audit checkpoint of what the window wrote is signed.

use anyhow::{Result, ensure};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::webdriver::{
    Cli, Driver, alive, click, eventually, open_site, scratch_site, tick, type_into, wait_for,
};

#[tokio::test]
#[ignore = "needs tauri-driver, WebKitWebDriver and a display: run under xvfb-run with --include-ignored"]
async fn sigterm_ends_the_app_with_its_audit_checkpoint_signed() -> Result<()> {
    let (_tmp, site) = scratch_site("e2e-exit").await?;
    let home = tempfile::tempdir()?;
    let mut driver = Driver::start(&site, home.path())?;
    let client = driver.connect().await?;
    // The window writes to the audit log: a key minted from the form.
    let minted = async {
        let code = open_site(&client, &site.display().to_string()).await?;
        ensure!(code == "OK", "opening the site: {code}");
        click(&client, "#nav-keys").await?;
        type_into(&client, "#mint-label", "e2e exit").await?;
        tick(&client, "#mint-role-viewer", true).await?;
        click(&client, "#mint-submit").await?;
        wait_for(&client, "#minted-key").await?;
        driver.app_pid()
    }
    .await;
    let signalled = minted.and_then(|app| {
        kill(Pid::from_raw(app), Signal::SIGTERM)?;
        Ok(app)
    });
    let exited = match &signalled {
        Ok(app) => eventually(|| !alive(*app)).await,
        Err(_) => false,
    };
    // The session's end may fail now its browser is gone; the app's end is what counts.
    let _ = client.close().await;
    drop(driver);
    let app = signalled?;
    ensure!(exited, "the app ({app}) still ran after SIGTERM");
    // Checked by the CLI with the app's home (its signing key and anchor):
    // the checkpoint vouches for every entry, the window's last one included.
    let report = Cli::new(&site, home.path())?.json(&["audit", "verify", "--json"])?;
    ensure!(report["ok"] == true, "{report}");
    ensure!(
        report["anchored_at"] == report["entries"],
        "no checkpoint of the head at exit: {report}"
    );
    Ok(())
}
