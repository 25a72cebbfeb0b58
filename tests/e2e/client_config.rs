//! The Client config screen's install and doctor in the real webview: the diff
//! is shown before anything is written, writing puts exactly that entry into
//! the client's file under the app's `HOME` (a fixture: the app never sees the
//! real one), the other entries and a backup stay, and the doctor view reports
//! the entry as working.

use std::path::Path;

use anyhow::{Context, Result, ensure};
use fantoccini::{Client, Locator};

use super::smoke::config_json;
use super::webdriver::{cli_binary, click, screenshot, select, text_of, wait_for};

pub async fn install_and_doctor(client: &Client, site: &Path, home: &Path) -> Result<()> {
    let file = home.join(".cursor/mcp.json");
    std::fs::create_dir_all(file.parent().context("no parent")?)?;
    let old =
        "{\n  \"mcpServers\": {\n    \"other\": { \"command\": \"/usr/bin/other\" }\n  }\n}\n";
    std::fs::write(&file, old)?;

    client
        .find(Locator::Id("nav-client-config"))
        .await?
        .click()
        .await?;
    wait_for(client, "#install-panel").await?;
    config_json(client, "claude-desktop", false).await?;
    select(client, "config-client", "cursor").await?;
    config_json(client, "cursor", false).await?;

    // The preview shows the diff and writes nothing.
    click(client, "#install-preview").await?;
    wait_for(client, "#install-output[data-state='preview']").await?;
    let diff = text_of(client, "#install-diff").await?;
    ensure!(
        diff.lines()
            .any(|l| l.starts_with('+') && l.contains("\"gatehouse\"")),
        "the preview shows no added entry: {diff}"
    );
    ensure!(
        std::fs::read_to_string(&file)? == old,
        "the preview wrote the file"
    );
    screenshot(client, "e2e-config-install-preview.png").await?;

    // Writing puts that entry in, beside the other one, and keeps a backup.
    click(client, "#install-write:not([hidden])").await?;
    wait_for(client, "#install-output[data-state='written']").await?;
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file)?)?;
    assert_eq!(
        doc["mcpServers"]["other"]["command"], "/usr/bin/other",
        "{doc}"
    );
    let entry = &doc["mcpServers"]["gatehouse"];
    assert_eq!(
        entry["command"],
        cli_binary()?.to_str().context("CLI path is not UTF-8")?,
        "{doc}"
    );
    assert_eq!(
        entry["args"][2],
        site.canonicalize()?
            .to_str()
            .context("site path is not UTF-8")?,
        "{doc}"
    );
    let backup = file.with_file_name("mcp.json.gatehouse.bak");
    assert_eq!(std::fs::read_to_string(backup)?, old);

    // The doctor finds it and reports it as working.
    click(client, "#doctor-run").await?;
    wait_for(client, "#doctor-output[data-state='ok']").await?;
    wait_for(
        client,
        "#doctor-output tr[data-client='cursor'][data-entry='gatehouse'][data-ok='true']",
    )
    .await?;
    screenshot(client, "e2e-config-doctor.png").await?;
    Ok(())
}
