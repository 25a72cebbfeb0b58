//! The Connections and Actor preview screens against real fixture servers
//! and the real `gatehouse` CLI.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::smoke::tail_lines;
use super::webdriver::{
    Driver, PATIENCE, assert_labelled, click, downloads_in, ensure_in_view, eval, open_site,
    python3, row_action, row_state, scratch_site, screenshot, screenshot_at, select, text_of,
    type_into, wait_for, wait_for_text, wait_gone,
};
use anyhow::{Context, Result, ensure};
use fantoccini::{Client, Locator};

fn fixture() -> Result<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_server.py");
    Ok(path
        .to_str()
        .context("fixture path is not UTF-8")?
        .to_string())
}

/// Stores connections named `names`, each writing `mib` MiB of stderr at
/// start, the way the CLI would.
pub(super) async fn store_floods(
    site: &Path,
    names: &[String],
    mib: u64,
    nice: Option<u8>,
    spin_s: u64,
) -> Result<()> {
    use gatehouse_core::connections::saved::{self, SavedConnection, SavedLimits};
    use gatehouse_core::sandbox::ChildSpec;
    let python = python3()?;
    let opened = gatehouse_core::site::open(&gatehouse_core::site::Settings {
        dir: site.to_path_buf(),
        database_url: None,
    })
    .await?;
    for name in names {
        let conn = SavedConnection {
            name: name.clone(),
            spec: ChildSpec::new(python.to_string_lossy())
                .arg(fixture()?)
                .arg("--flood-mb")
                .arg(mib.to_string())
                .arg("--spin-start")
                .arg(spin_s.to_string()),
            limits: SavedLimits {
                sandbox: gatehouse_core::sandbox::Profile {
                    nice,
                    ..Default::default()
                },
                ..Default::default()
            },
            created_at: gatehouse_core::time::now_ms(),
        };
        saved::add(&opened.store, "e2e", &conn).await?;
    }
    opened.store.close().await;
    Ok(())
}

/// Mints a viewer key outside the window (its secret never reaches the
/// app), the way the CLI would; returns its id.
async fn mint_outside(site: &Path) -> Result<String> {
    use gatehouse_core::access::permissions::Role;
    let opened = gatehouse_core::site::open(&gatehouse_core::site::Settings {
        dir: site.to_path_buf(),
        database_url: None,
    })
    .await?;
    let minted =
        gatehouse_core::access::keys::mint(&opened.store, "e2e", "outside", &[Role::Viewer], None)
            .await?;
    opened.store.close().await;
    Ok(minted.info.id)
}

/// Clicks Connect on `name`'s row, checks the consent dialog shows the exact
/// argv, accepts, and waits until the row says connected.
pub(super) async fn connect_with_consent(
    client: &Client,
    name: &str,
    argv_has: &str,
) -> Result<()> {
    accept_consent(client, name, argv_has).await?;
    row_state(client, name, "connected").await?;
    Ok(())
}

/// Saves the connection form and waits for it to close: the rows are redrawn
/// after the save, and a click on a row before that could act on the old
/// definition.
async fn save_connection(client: &Client) -> Result<()> {
    click(client, "#conn-form-save").await?;
    wait_gone(client, "#conn-form").await
}

/// Clicks Connect on `name`'s row and accepts the consent dialog once it
/// shows the exact argv, whatever follows.
async fn accept_consent(client: &Client, name: &str, argv_has: &str) -> Result<()> {
    row_action(client, name, "open").await?;
    wait_for(
        client,
        &format!("#consent-dialog[data-connection='{name}'][open]"),
    )
    .await?;
    let argv = text_of(client, "#consent-argv").await?;
    ensure!(
        argv.contains(argv_has),
        "consent argv {argv:?} lacks {argv_has}"
    );
    screenshot(client, &format!("e2e-desk-consent-{name}.png")).await?;
    click(client, "#consent-accept").await?;
    Ok(())
}

/// Clicks the save button `button`, waits for `note` to name the file it
/// wrote, checks that file is in `downloads`, and returns its path.
async fn saved_file(
    client: &Client,
    button: &str,
    note: &str,
    downloads: &Path,
) -> Result<PathBuf> {
    click(client, button).await?;
    let shown = wait_for(client, &format!("{note}[data-path]")).await?;
    let path = PathBuf::from(shown.attr("data-path").await?.unwrap_or_default());
    ensure!(
        path.parent() == Some(downloads),
        "saved to {} instead of the downloads folder {}",
        path.display(),
        downloads.display()
    );
    let said = text_of(client, note).await?;
    ensure!(
        said == format!("saved to {}", path.display()),
        "the note says {said:?}"
    );
    Ok(path)
}

/// Opens `tool`'s call form, fills `fields` and sends the call (whatever the
/// last call left in the result view is gone first).
pub async fn send_call(client: &Client, tool: &str, fields: &[(&str, &str)]) -> Result<()> {
    click(
        client,
        &format!("#tool-list li[data-tool='{tool}'] button[data-action='call']"),
    )
    .await?;
    for (field, value) in fields {
        type_into(
            client,
            &format!("#call-form[data-tool='{tool}'] [data-field='{field}'] input"),
            value,
        )
        .await?;
    }
    client
        .execute(
            "document.getElementById('call-output')?.replaceChildren()",
            vec![],
        )
        .await?;
    click(client, "#call-send").await
}

/// A definition with every kind of variable and both limits, through the
/// form: a bad limit is refused next to its field; the saved definition holds
/// what was typed; the consent dialog names each variable's source with its
/// value masked and shows the limits; Duplicate opens the copy's form with the
/// same fields; Remove takes two clicks and the copy is gone from the site.
async fn env_limits_duplicate_remove(client: &Client, site: &Path) -> Result<()> {
    use gatehouse_core::sandbox::EnvValue;
    const PLAIN: &str = "plain-value-not-for-the-dialog";
    let python = python3()?;
    let python = python.to_str().context("python3 path is not UTF-8")?;
    let fixture = fixture()?;
    click(client, "#conn-add").await?;
    type_into(client, "#conn-form-name", "envcheck").await?;
    type_into(client, "#conn-form-command", python).await?;
    type_into(client, "#conn-form-args", &fixture).await?;
    for (i, (name, kind, value)) in [
        ("E2E_PLAIN", "plain", PLAIN),
        ("E2E_LANG", "host", "LANG"),
        ("E2E_TOKEN", "secret", "E2E_TOKEN_SOURCE"),
    ]
    .into_iter()
    .enumerate()
    {
        click(client, "#conn-form-env-add").await?;
        type_into(client, &format!("#conn-form-env-name-{i}"), name).await?;
        select(client, &format!("conn-form-env-kind-{i}"), kind).await?;
        type_into(client, &format!("#conn-form-env-value-{i}"), value).await?;
    }
    type_into(client, "#conn-form-rss", "lots").await?;
    type_into(client, "#conn-form-cpu", "30s").await?;
    click(client, "#conn-form-save").await?;
    wait_for(client, "[data-error-for='max_rss'] [data-code]").await?;
    type_into(client, "#conn-form-rss", "256MiB").await?;
    save_connection(client).await?;
    row_state(client, "envcheck", "idle").await?;

    let opened = gatehouse_core::site::open(&gatehouse_core::site::Settings {
        dir: site.to_path_buf(),
        database_url: None,
    })
    .await?;
    let stored = gatehouse_core::connections::saved::list(&opened.store).await;
    opened.store.close().await;
    let stored = stored?;
    let conn = stored
        .iter()
        .find(|c| c.name == "envcheck")
        .context("envcheck not saved")?;
    assert_eq!(conn.limits.max_rss_bytes, Some(256 << 20));
    assert_eq!(conn.limits.max_cpu_ms, Some(30_000));
    let env = &conn.spec.env;
    ensure!(
        matches!(&env["E2E_PLAIN"], EnvValue::Plain { value } if value == PLAIN)
            && matches!(&env["E2E_LANG"], EnvValue::FromHost { name } if name == "LANG")
            && matches!(&env["E2E_TOKEN"], EnvValue::SecretFromHost { name } if name == "E2E_TOKEN_SOURCE"),
        "saved env: {:?}",
        env.keys().collect::<Vec<_>>()
    );

    row_action(client, "envcheck", "open").await?;
    wait_for(client, "#consent-dialog[data-connection='envcheck'][open]").await?;
    let shown = text_of(client, "#consent-env").await?;
    ensure!(
        !shown.contains(PLAIN),
        "the consent dialog shows a value: {shown}"
    );
    for (name, source) in [
        ("E2E_PLAIN", "stored value"),
        ("E2E_LANG", "from host $LANG"),
        ("E2E_TOKEN", "secret from host $E2E_TOKEN_SOURCE"),
    ] {
        let line = text_of(client, &format!("#consent-env li[data-env='{name}']")).await?;
        ensure!(
            line.contains("••••") && line.contains(source),
            "{name}: {line}"
        );
    }
    let facts = text_of(client, "#consent-facts").await?;
    ensure!(
        facts.contains("256 MiB") && facts.contains("30 s"),
        "{facts}"
    );
    screenshot(client, "e2e-desk-consent-env.png").await?;
    click(client, "#consent-cancel").await?;
    wait_gone(client, "#consent-dialog").await?;

    row_action(client, "envcheck", "duplicate").await?;
    wait_for(
        client,
        "#conn-form[aria-label='Edit connection envcheck-copy']",
    )
    .await?;
    for (css, want) in [
        ("#conn-form-env-name-0", "E2E_LANG"),
        ("#conn-form-env-name-1", "E2E_PLAIN"),
        ("#conn-form-env-name-2", "E2E_TOKEN"),
        ("#conn-form-rss", "256MiB"),
        ("#conn-form-cpu", "30s"),
    ] {
        let got = client
            .find(Locator::Css(css))
            .await?
            .prop("value")
            .await?
            .unwrap_or_default();
        ensure!(
            got == want,
            "{css} in the copy's form: {got:?}, want {want:?}"
        );
    }
    click(client, "#conn-form-cancel").await?;
    row_state(client, "envcheck-copy", "idle").await?;
    row_action(client, "envcheck-copy", "remove").await?;
    wait_for_text(
        client,
        "#conn-rows tr[data-connection='envcheck-copy'] button[data-action='remove']",
        |t| t == "Confirm remove",
    )
    .await?;
    row_action(client, "envcheck-copy", "remove").await?;
    let gone = Instant::now() + PATIENCE;
    while client
        .find(Locator::Css(
            "#conn-rows tr[data-connection='envcheck-copy']",
        ))
        .await
        .is_ok()
    {
        ensure!(Instant::now() < gone, "the removed copy's row stayed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// The connection's facts (`#conn-facts`) once it has ended in `state`:
/// the exit shown and the reason shown.
async fn end_facts(client: &Client, state: &str) -> Result<(String, String)> {
    wait_for(client, &format!("#conn-facts[data-state='{state}']")).await?;
    let exit = text_of(client, "#conn-facts [data-fact='exit']").await?;
    let reason = text_of(client, "#conn-facts [data-fact='reason']").await?;
    Ok((exit, reason))
}

async fn connections(client: &Client, downloads: &Path) -> Result<()> {
    let python = python3()?;
    let python = python.to_str().context("python3 path is not UTF-8")?;
    let fixture = fixture()?;
    click(client, "#nav-connections").await?;

    // Add a connection through the form: a bad name is refused next to its field.
    click(client, "#conn-add").await?;
    type_into(client, "#conn-form-name", "Echo Server").await?;
    type_into(client, "#conn-form-command", python).await?;
    type_into(client, "#conn-form-args", &fixture).await?;
    type_into(client, "#conn-form-timeout", "20s").await?;
    assert_labelled(client, "Connections, adding a connection").await?;
    click(client, "#conn-form-save").await?;
    wait_for(
        client,
        "[data-error-for='name'] [data-code='CONNECTION_NAME_INVALID']",
    )
    .await?;
    type_into(client, "#conn-form-name", "echo").await?;
    save_connection(client).await?;
    row_state(client, "echo", "idle").await?;
    ensure!(
        client.find(Locator::Id("conn-form")).await.is_err(),
        "the form closes once saved"
    );

    // First start: consent, then the server's facts and tools.
    connect_with_consent(client, "echo", &fixture).await?;
    let facts = wait_for_text(client, "#conn-facts", |t| t.contains("gatehouse-fixture")).await?;
    ensure!(facts.contains("Calls in flight"), "{facts}");
    wait_for(client, "#conn-facts [data-fact='rss']").await?;
    let tool = "#tool-list li[data-tool='echo']";
    wait_for(client, tool).await?;
    let tool_text = text_of(client, tool).await?;
    ensure!(
        tool_text.contains("readOnlyHint: true"),
        "annotations shown: {tool_text}"
    );

    // The generated form: the required field is checked before anything is sent.
    click(
        client,
        "#tool-list li[data-tool='echo'] button[data-action='call']",
    )
    .await?;
    wait_for(
        client,
        "#call-form[data-tool='echo'] [data-field='message'] input",
    )
    .await?;
    click(client, "#call-send").await?;
    wait_for_text(
        client,
        "#call-form [data-field='message'] .field-error",
        |t| t.contains("required"),
    )
    .await?;
    ensure!(
        client
            .find_all(Locator::Css("#call-records tr"))
            .await?
            .is_empty(),
        "an invalid form sent a call"
    );
    type_into(
        client,
        "#call-form [data-field='message'] input",
        "hello from the desk",
    )
    .await?;
    click(client, "#call-send").await?;
    wait_for(client, "#call-state[data-state='completed']").await?;
    let result = text_of(client, "#call-result .result-text").await?;
    assert_eq!(result, "hello from the desk");
    assert_labelled(client, "Connections, a connection's details and a call").await?;
    let record = "#call-records tr[data-tool='echo'][data-state='completed']";
    wait_for(client, record).await?;
    let record_text = text_of(client, record).await?;
    ensure!(
        record_text.contains("read_only"),
        "effect class in the record: {record_text}"
    );
    screenshot(client, "e2e-desk-connections-tools.png").await?;

    // The full result, saved to the downloads folder: the whole answer the
    // server sent (its `_meta` too, which the view leaves out), as JSON.
    let call_id = client
        .find(Locator::Css(record))
        .await?
        .attr("data-call")
        .await?
        .context("the record has no call id")?;
    let saved = saved_file(
        client,
        "#result-save",
        "#call-result [role='status']",
        downloads,
    )
    .await?;
    ensure!(
        saved.file_name() == Some(format!("gatehouse-{call_id}.json").as_ref()),
        "{}",
        saved.display()
    );
    let full: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&saved)?)?;
    ensure!(
        full == serde_json::json!({
            "content": [{"type": "text", "text": "hello from the desk"}],
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/serverInfo":
                {"name": "gatehouse-fixture", "version": "1.2.3"}},
        }),
        "the saved result is not the server's answer: {full}"
    );

    // A slow call cancelled from the window while the server works on it:
    // core sends notifications/cancelled and ends it `cancelled_after_dispatch`
    // (the result view and the records say so); the connection goes on.
    send_call(client, "slow", &[("seconds", "30")]).await?;
    wait_for(client, "#call-running").await?;
    // Cancel once it is on the wire: the facts count it in flight.
    wait_for_text(client, "#conn-facts [data-fact='in-flight']", |t| t == "1").await?;
    click(client, "#call-cancel").await?;
    wait_for(client, "#call-state[data-state='cancelled_after_dispatch']").await?;
    wait_for(client, "#call-output [data-code='CALL_CANCELLED']").await?;
    let cancelled = "#call-records tr[data-tool='slow'][data-state='cancelled_after_dispatch']";
    wait_for(client, cancelled).await?;
    let cancelled_text = text_of(client, cancelled).await?;
    ensure!(
        cancelled_text.contains("CALL_CANCELLED"),
        "the record's error: {cancelled_text}"
    );
    screenshot(client, "e2e-desk-call-cancelled.png").await?;
    wait_for_text(client, "#conn-facts [data-fact='in-flight']", |t| t == "0").await?;
    row_state(client, "echo", "connected").await?;
    send_call(client, "echo", &[("message", "still here")]).await?;
    wait_for(client, "#call-state[data-state='completed']").await?;
    assert_eq!(
        text_of(client, "#call-result .result-text").await?,
        "still here"
    );

    // Disconnect: the detail shows the exit and why it ended, a cancel by
    // the admin (core stores the word `closed`).
    row_action(client, "echo", "close").await?;
    row_state(client, "echo", "closed").await?;
    let (exit, reason) = end_facts(client, "closed").await?;
    // The fixture leaves when its stdin closes.
    ensure!(exit == "exit code 0", "exit after a disconnect: {exit}");
    ensure!(
        reason.starts_with("cancelled: disconnected in this window"),
        "reason after a disconnect: {reason}"
    );

    // Editing asks for consent again.
    row_action(client, "echo", "edit").await?;
    type_into(client, "#conn-form-timeout", "25s").await?;
    save_connection(client).await?;
    wait_for(
        client,
        "#conn-rows tr[data-connection='echo'] button[data-action='open']",
    )
    .await?;
    row_action(client, "echo", "open").await?;
    wait_for(client, "#consent-dialog[open]").await?;
    click(client, "#consent-cancel").await?;
    wait_gone(client, "#consent-dialog").await?;
    ensure!(
        client
            .find(Locator::Css(
                "#conn-rows tr[data-connection='echo'][data-state='connected']"
            ))
            .await
            .is_err(),
        "declined consent started the server"
    );

    // A changed command line: after consent, its tools need approving again
    // (the pin was made from the old definition), in the window.
    row_action(client, "echo", "edit").await?;
    // The same interpreter by its resolved path: another command line.
    let resolved = std::fs::canonicalize(python)?;
    let resolved = resolved.to_str().context("python3 path is not UTF-8")?;
    ensure!(
        resolved != python,
        "{python} is no symlink; pick another change"
    );
    type_into(client, "#conn-form-command", resolved).await?;
    save_connection(client).await?;
    accept_consent(client, "echo", resolved).await?;
    wait_for(client, "#tools-dialog[data-connection='echo'][open]").await?;
    assert_labelled(client, "Connections, the changed-tools dialog").await?;
    let why = text_of(client, "#tools-message").await?;
    ensure!(
        why.contains("echo"),
        "the refusal names the connection: {why}"
    );
    screenshot(client, "e2e-desk-tools-changed.png").await?;
    click(client, "#tools-approve").await?;
    row_state(client, "echo", "connected").await?;

    // A server that dies: the detail says it crashed, with its exit code.
    send_call(client, "exit", &[]).await?;
    row_state(client, "echo", "exited").await?;
    let (exit, reason) = end_facts(client, "exited").await?;
    ensure!(exit == "exit code 1", "exit after a crash: {exit}");
    ensure!(
        reason.starts_with("crashed: "),
        "reason after a crash: {reason}"
    );
    ensure!(
        reason.contains("exit code 1"),
        "reason after a crash: {reason}"
    );

    // A flood: its tail shows Gatehouse's gap markers, in its own tab.
    connect_with_consent(client, "flood", "--flood-mb").await?;
    wait_for(
        client,
        "#tail-counters[data-bytes-seen='1048576'][data-truncated='true']",
    )
    .await?;
    let markers = client
        .find_all(Locator::Css("#tail-lines .tail-marker"))
        .await?;
    ensure!(
        !markers.is_empty(),
        "a 1 MiB flood shown without any gap marker"
    );
    wait_for(
        client,
        "#tail-tabs .tab[data-tail='flood'][aria-selected='true']",
    )
    .await?;
    // Pause freezes the view; resume brings it back.
    click(client, "#tail-pause").await?;
    wait_for(client, ".tail-panel[data-paused='true']").await?;
    click(client, "#tail-pause").await?;
    wait_for(client, ".tail-panel[data-paused='false']").await?;
    screenshot(client, "e2e-desk-connections-flood.png").await?;

    // Save: the file holds what core kept, the child's lines around
    // Gatehouse's marker of what was cut.
    let saved = saved_file(client, "#tail-save", "#tail-note", downloads).await?;
    let name = saved
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    ensure!(name.starts_with("gatehouse-stderr-flood-"), "{name}");
    let kept = std::fs::read_to_string(&saved)?;
    let markers: Vec<&str> = kept
        .lines()
        .filter(|l| l.starts_with("[stderr truncated: kept first "))
        .collect();
    ensure!(
        markers.len() == 1 && markers[0].ends_with(" of 1048576 bytes]"),
        "the saved tail's marker lines: {markers:?}"
    );
    let (head, tail) = kept
        .split_once(markers[0])
        .context("the marker splits the text")?;
    for (part, lines) in [("head", head), ("tail", tail)] {
        let lines: Vec<&str> = lines.lines().filter(|l| !l.is_empty()).collect();
        ensure!(
            !lines.is_empty() && lines.iter().all(|l| *l == "y"),
            "the saved tail's {part} is not the child's lines: {:?}",
            &lines[..lines.len().min(5)]
        );
    }

    // Copy: the clipboard gets the entries shown, the child's lines and
    // the markers as the list shows them. The page cannot read the clipboard
    // back (WebKit refuses), so the test pastes it with Ctrl+V into a
    // textarea it adds, as a person would paste into an editor.
    let copy = ".tail-panel:has(#tail-lines) button[id^='tail-copy-']";
    click(client, copy).await?;
    wait_for(client, &format!("{copy}[data-state='copied']")).await?;
    client
        .execute(
            "const a = document.createElement('textarea'); a.id = 'e2e-paste'; document.body.prepend(a);",
            vec![],
        )
        .await?;
    let area = wait_for(client, "#e2e-paste").await?;
    area.click().await?;
    let ctrl = char::from(fantoccini::key::Key::Control);
    let release = char::from(fantoccini::key::Key::Null);
    area.send_keys(&format!("{ctrl}v{release}")).await?;
    let shown = tail_lines(client).await?;
    let pasted = area.prop("value").await?.unwrap_or_default();
    client
        .execute("document.getElementById('e2e-paste')?.remove()", vec![])
        .await?;
    ensure!(
        pasted.lines().collect::<Vec<_>>() == shown,
        "the copied tail ({} lines) is not the {} entries shown; it starts {:?}",
        pasted.lines().count(),
        shown.len(),
        &pasted[..pasted.len().min(200)]
    );
    // Among them, a marker of what is not shown: core's, when the snapshot
    // the page took as it subscribed was already cut, else the page's own
    // (lines it dropped or missed). Which one depends on how far the flood
    // had got when the page subscribed (a loaded machine subscribes sooner);
    // the saved file above pins core's marker.
    let markers: Vec<&String> = shown
        .iter()
        .filter(|l| {
            l.starts_with("[stderr truncated: kept first ") || l.starts_with("[gatehouse: ")
        })
        .collect();
    ensure!(
        !markers.is_empty() && pasted.contains("\ny\n"),
        "the copied tail lacks a marker ({markers:?}) or the child's lines"
    );
    filter_and_side_by_side(client, &shown).await?;
    tools_and_tail_shot(client).await
}

/// The tail's filter keeps the lines that match (and Gatehouse's markers);
/// "Side by side" shows every open tail at once, next to each other.
async fn filter_and_side_by_side(client: &Client, shown: &[String]) -> Result<()> {
    let is_marker = |l: &String| l.starts_with("[stderr truncated") || l.starts_with("[gatehouse");
    type_into(client, "#tail-filter", "no-such-line").await?;
    let deadline = Instant::now() + PATIENCE;
    loop {
        let lines = tail_lines(client).await?;
        if !lines.is_empty() && lines.iter().all(is_marker) {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "filtered tail still shows {:?}",
            &lines[..lines.len().min(5)]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The flood's lines are all "y": filtering for it shows every one again.
    type_into(client, "#tail-filter", "y").await?;
    let deadline = Instant::now() + PATIENCE;
    let mut lines = tail_lines(client).await?;
    while lines != shown {
        ensure!(
            Instant::now() < deadline,
            "filtering for y shows {} lines, not the {} shown before",
            lines.len(),
            shown.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        lines = tail_lines(client).await?;
    }

    let tabs = client
        .find_all(Locator::Css("#tail-tabs .tab"))
        .await?
        .len();
    ensure!(tabs >= 2, "{tabs} tail tab(s) open: side by side needs two");
    let panel_lefts = async || -> Result<Vec<f64>> {
        eval(client, "return Array.from(document.querySelectorAll('.tail-body .tail-panel'), p => p.getBoundingClientRect().left)", vec![]).await
    };
    ensure!(
        panel_lefts().await?.len() == 1,
        "tabs show one tail at a time"
    );
    click(client, "#tail-side-by-side").await?;
    wait_for(client, ".tail-body.side-by-side").await?;
    let lefts = panel_lefts().await?;
    ensure!(
        lefts.len() == tabs && lefts.windows(2).all(|w| w[0] < w[1]),
        "side by side: {tabs} tabs, panels at x = {lefts:?}"
    );
    screenshot(client, "e2e-desk-tails-side-by-side.png").await?;
    click(client, "#tail-side-by-side").await?;
    ensure!(panel_lefts().await?.len() == 1, "back to tabs");
    Ok(())
}

/// The README's pictures of one connection, the flood: its tools (its
/// details, shown since it connected) and its live tail at the first gap
/// marker Gatehouse wrote. Each shot fails unless what it is for really is
/// in the window.
async fn tools_and_tail_shot(client: &Client) -> Result<()> {
    let first_tool = "#conn-detail-slot #tool-list li[data-tool='echo']";
    wait_for(client, first_tool).await?;
    screenshot_at(client, "e2e-desk-connection-tools.png", "#conn-detail-slot").await?;
    ensure_in_view(client, first_tool).await?;

    client
        .execute(
            "const list = document.getElementById('tail-lines'); \
             const marker = list.querySelector('.tail-marker'); \
             list.scrollTop += marker.getBoundingClientRect().top - list.getBoundingClientRect().top - 40;",
            vec![],
        )
        .await?;
    screenshot_at(client, "e2e-desk-connection-tail.png", ".tail-tabs").await?;
    ensure_in_view(client, "#tail-lines .tail-marker").await?;
    ensure_in_view(client, "#tail-counters").await?;
    Ok(())
}

async fn actor_preview(client: &Client, key_id: &str) -> Result<()> {
    click(client, "#nav-actor-preview").await?;
    wait_for(client, "#preview-left-kind").await?;
    select(client, "preview-right-kind", "roles").await?;
    click(client, "#preview-right-role-editor").await?;
    click(client, "#preview-run").await?;
    wait_for(
        client,
        "#preview-result #preview-right[data-actor='roles:editor']",
    )
    .await?;
    let left = text_of(client, "#preview-left").await?;
    ensure!(left.starts_with("public"), "{left}");
    let only_editor = client
        .find_all(Locator::Css("#preview-right-tools li[data-only='true']"))
        .await?;
    ensure!(!only_editor.is_empty(), "editor has no tool public lacks");
    let only_public = client
        .find_all(Locator::Css("#preview-left-tools li[data-only='true']"))
        .await?;
    ensure!(only_public.is_empty(), "public has a tool editor lacks");
    assert_labelled(client, "Actor preview").await?;
    screenshot(client, "e2e-desk-actor-preview.png").await?;

    // A key minted outside the window, previewed by its id: the viewer's
    // manifest (the same as the viewer role's), beside the editor's.
    select(client, "preview-left-kind", "key").await?;
    select(client, "preview-left-key", key_id).await?;
    click(client, "#preview-run").await?;
    let by_key = format!("#preview-result #preview-left[data-actor='key:{key_id}']");
    wait_for(client, &by_key).await?;
    let key_tools = side_tools(client, "left").await?;
    ensure!(
        key_tools.iter().any(|t| t == "content_read"),
        "{key_tools:?}"
    );
    ensure!(
        !key_tools.iter().any(|t| t == "content_write_draft"),
        "a viewer key is served a write tool: {key_tools:?}"
    );
    by_user(client, &side_tools(client, "right").await?).await
}

/// A seeded user of the scratch site (`author@example.com`, role author, see
/// `site::seed`), previewed by email beside the author role: the same tools,
/// not public's; and the page shows what that `gatehouse mcp` wrote to stderr.
async fn by_user(client: &Client, editor_tools: &[String]) -> Result<()> {
    const EMAIL: &str = "author@example.com";
    select(client, "preview-left-kind", "public").await?;
    click(client, "#preview-run").await?;
    wait_for(client, "#preview-result #preview-left[data-actor='public']").await?;
    let public_tools = side_tools(client, "left").await?;

    select(client, "preview-left-kind", "user").await?;
    select(client, "preview-left-user", EMAIL).await?;
    select(client, "preview-right-kind", "roles").await?;
    for role in ["editor", "author"] {
        let check = client
            .find(Locator::Id(&format!("preview-right-role-{role}")))
            .await?;
        let checked = check.prop("checked").await?.as_deref() == Some("true");
        if checked != (role == "author") {
            click(client, &format!("#preview-right-role-{role}")).await?;
        }
    }
    click(client, "#preview-run").await?;
    wait_for(
        client,
        &format!("#preview-result #preview-left[data-actor='user:{EMAIL}']"),
    )
    .await?;
    wait_for(client, "#preview-right[data-actor='roles:author']").await?;
    let user_tools = side_tools(client, "left").await?;
    let author_tools = side_tools(client, "right").await?;
    ensure!(
        user_tools == author_tools,
        "{EMAIL} is served {user_tools:?}, the author role {author_tools:?}"
    );
    ensure!(
        user_tools != public_tools && user_tools != editor_tools,
        "{EMAIL} is served public's or the editor's tools: {user_tools:?}"
    );
    ensure!(
        user_tools.iter().any(|t| t == "content_write_draft"),
        "an author is not served the draft tool: {user_tools:?}"
    );

    // That server's stderr, in the tail panel a connection's uses: its
    // lines, its counters, and the stream ended.
    let stderr = wait_for_text(client, "#preview-left-stderr .tail-lines", |t| {
        t.contains("MCP server ready")
    })
    .await?;
    ensure!(
        stderr.contains(&format!("user:{EMAIL}")),
        "the preview's stderr does not name its actor: {stderr:?}"
    );
    let status = text_of(client, "#preview-left-stderr .tail-status").await?;
    ensure!(status.starts_with("ended: "), "{status}");
    let counters = text_of(client, "#preview-left-stderr .tail-counters").await?;
    ensure!(counters.contains("bytes seen"), "{counters}");
    // Both sides stay in the window with their tails shown (long stderr
    // lines once widened the left column and pushed the right one out of view).
    let fits = client
        .execute(
            "return document.getElementById('preview-right').getBoundingClientRect().right <= document.documentElement.clientWidth",
            vec![],
        )
        .await?;
    ensure!(
        fits == serde_json::json!(true),
        "the stderr excerpt pushed the right side out of the window"
    );
    assert_labelled(client, "Actor preview, a user").await?;
    screenshot(client, "e2e-desk-actor-preview-user.png").await?;
    Ok(())
}

/// The tools listed on one side of the preview, in order.
async fn side_tools(client: &Client, side: &str) -> Result<Vec<String>> {
    eval(client, "return Array.from(document.querySelectorAll(`#preview-${arguments[0]}-tools li`), li => li.dataset.tool)", vec![serde_json::json!(side)]).await
}

#[tokio::test]
#[ignore = "needs tauri-driver, WebKitWebDriver and a display: run under xvfb-run with --include-ignored"]
async fn connections_tools_calls_and_actor_preview() -> Result<()> {
    let (_tmp, site) = scratch_site("e2e-desk").await?;
    store_floods(&site, &["flood".to_string()], 1, None, 0).await?;
    let key_id = mint_outside(&site).await?;
    let home = tempfile::tempdir()?;
    let downloads = downloads_in(home.path())?;
    let mut driver = Driver::start(&site, home.path())?;
    let client = driver.connect().await?;
    let started = Instant::now();
    let outcome = async {
        let path = site.to_str().context("temp path is not UTF-8")?;
        let code = open_site(&client, path).await?;
        ensure!(code == "OK", "opening the site: {code}");
        connections(&client, &downloads).await?;
        env_limits_duplicate_remove(&client, &site).await?;
        eprintln!("connections done after {:?}", started.elapsed());
        actor_preview(&client, &key_id).await?;
        Ok::<(), anyhow::Error>(())
    }
    .await;
    if outcome.is_err() {
        let _ = screenshot(&client, "e2e-desk-failure.png").await;
    }
    let closed = client.close().await;
    drop(driver);
    outcome?;
    ensure!(closed.is_ok(), "closing the WebDriver session: {closed:?}");
    Ok(())
}
