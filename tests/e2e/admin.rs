//! The admin screens (Sites, Keys, Users, Audit), and what the window
//! remembers across a restart.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use super::webdriver::*;
use anyhow::{Context, Result, ensure};
use fantoccini::{Client, Locator};
use gatehouse_core::site::{Settings, Site};

async fn open_core(dir: &Path) -> Result<Site> {
    Ok(gatehouse_core::site::open(&Settings {
        dir: dir.to_path_buf(),
        database_url: None,
    })
    .await?)
}

/// Sites: an empty site made from the window opens at once; the header names
/// it and its SQLite file without the scratch badge, and it holds nothing:
/// `site::init` seeds sample data only into scratch sites, so an empty site
/// has no users, keys, content, media, config or audit entries.
async fn create_empty_site(client: &Client, dir: &Path) -> Result<()> {
    click(client, "#nav-overview").await?;
    let path = dir.to_str().context("temp path is not UTF-8")?;
    type_into(client, "#new-site-path", path).await?;
    type_into(client, "#new-site-name", "empty-site").await?;
    click(client, "#new-site-empty").await?;
    assert_labelled(client, "Sites").await?;
    click(client, "#new-site-create").await?;
    let notice = wait_for(client, "#new-site-result [data-code]").await?;
    let code = notice.attr("data-code").await?.unwrap_or_default();
    ensure!(code == "OK", "create failed: {}", notice.text().await?);

    wait_for(client, "#current-site[data-state='open']").await?;
    let header = text_of(client, "#current-site").await?;
    ensure!(
        header.contains("empty-site") && !header.contains("scratch"),
        "header: {header}"
    );
    let backend = wait_for(client, "#current-backend[data-kind='sqlite']").await?;
    let shown = backend.prop("textContent").await?.unwrap_or_default();
    ensure!(
        shown.ends_with("/empty-here/gatehouse.db"),
        "backend shown: {shown}"
    );
    wait_for(client, &format!("#recent-sites li[data-path='{path}']")).await?;
    screenshot(client, "e2e-sites-empty.png").await?;

    let site = open_core(dir).await?;
    ensure!(!site.is_scratch(), "an empty site was made scratch");
    site.store.close().await;
    let db = sqlx::SqlitePool::connect_with(
        sqlx::sqlite::SqliteConnectOptions::new().filename(dir.join("gatehouse.db")),
    )
    .await?;
    for table in [
        "users",
        "api_keys",
        "content",
        "media",
        "site_config",
        "audit_log",
    ] {
        let (rows,): (i64,) =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
                .fetch_one(&db)
                .await?;
        ensure!(rows == 0, "an empty site has {rows} rows in {table}");
    }
    db.close().await;

    // The window agrees: the Users screen lists nobody.
    click(client, "#nav-users").await?;
    wait_for(client, "#permissions-table tr[data-action='keys_manage']").await?;
    wait_for(client, "#users-rows").await?;
    ensure!(
        client
            .find_all(Locator::Css("#users-rows tr[data-email]"))
            .await?
            .is_empty(),
        "the Users screen lists users of an empty site"
    );
    Ok(())
}

/// Sites: a scratch site made from the window opens at once, the header
/// names it, its SQLite file and that it is scratch, and it is remembered.
async fn create_scratch_site(client: &Client, dir: &Path) -> Result<()> {
    click(client, "#nav-overview").await?;
    let path = dir.to_str().context("temp path is not UTF-8")?;
    type_into(client, "#new-site-path", path).await?;
    type_into(client, "#new-site-name", "window-site").await?;
    // Scratch (with sample data) is the default kind.
    ensure!(
        client
            .find(Locator::Id("new-site-scratch"))
            .await?
            .prop("checked")
            .await?
            .as_deref()
            == Some("true"),
        "scratch is not the default kind"
    );
    click(client, "#new-site-create").await?;
    let notice = wait_for(client, "#new-site-result [data-code]").await?;
    let code = notice.attr("data-code").await?.unwrap_or_default();
    ensure!(code == "OK", "create failed: {}", notice.text().await?);

    let header = wait_for_text(client, "#current-site", |t| t.contains("window-site")).await?;
    assert!(header.contains("scratch"), "header: {header}");
    let backend = wait_for(client, "#current-backend[data-kind='sqlite']").await?;
    let shown = backend.prop("textContent").await?.unwrap_or_default();
    assert!(
        shown.starts_with("SQLite /") && shown.ends_with("/made-here/gatehouse.db"),
        "backend shown: {shown}"
    );
    wait_for(client, &format!("#recent-sites li[data-path='{path}']")).await?;

    // The folder really holds a scratch site with sample data.
    let site = open_core(dir).await?;
    assert!(site.is_scratch());
    let users = gatehouse_core::access::users::list(&site.store).await?;
    assert!(!users.is_empty(), "a scratch site has sample users");
    site.store.close().await;
    screenshot(client, "e2e-sites.png").await?;

    // Creating into the same folder again names the cause next to the form.
    click(client, "#new-site-create").await?;
    wait_for(client, "#new-site-result [data-code='SITE_EXISTS']").await?;
    Ok(())
}

/// One real MCP call through `gatehouse mcp`, the way a client configured with
/// `config` runs it; returns the tools/call response.
fn mcp_call(command: &str, args: &[String], key: &str) -> Result<serde_json::Value> {
    let mut child = Command::new(command)
        .args(args)
        .env("GATEHOUSE_API_KEY", key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let lines = [
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "content_list", "arguments": {}}}),
    ];
    for line in lines {
        writeln!(stdin, "{line}")?;
    }
    stdin.flush()?;
    let stdout = BufReader::new(child.stdout.take().context("stdout")?);
    let mut answer = None;
    for line in stdout.lines() {
        let msg: serde_json::Value = serde_json::from_str(&line?)?;
        if msg["id"] == 1 {
            answer = Some(msg);
            break;
        }
    }
    drop(stdin);
    child.wait()?;
    answer.context("gatehouse mcp never answered the tools/call")
}

/// Keys: mint, read the Claude Desktop config, prove with the CLI that the
/// key works (a real call, which the list then counts), the expiry warning,
/// the status filter, and a failed revoke that leaves a usable button.
async fn keys(client: &Client, dir: &Path) -> Result<()> {
    let cli = cli_binary()?;
    click(client, "#nav-keys").await?;
    type_into(client, "#mint-label", "e2e admin").await?;
    type_into(client, "#mint-expires", "3d").await?;
    click(client, "#mint-submit").await?;
    let key = wait_for(client, "#minted-key").await?.text().await?;
    let key_id = gatehouse_core::access::keys::parse(&key)
        .map_err(|why| anyhow::anyhow!("shown key is malformed: {why:?}"))?
        .id
        .to_string();

    let ready =
        "#config-output[data-state='ready'][data-client='claude-desktop'][data-secret-ref='false']";
    wait_for(client, ready).await?;
    let doc: serde_json::Value = serde_json::from_str(&text_of(client, "#config-text").await?)?;
    let entry = &doc["mcpServers"]["gatehouse"];
    assert_eq!(entry["command"], cli.to_str().unwrap(), "{doc}");
    assert_eq!(entry["env"]["GATEHOUSE_API_KEY"], key.as_str(), "{doc}");
    let args: Vec<String> = serde_json::from_value(entry["args"].clone())?;
    let site_str = dir.canonicalize()?.to_str().unwrap().to_string();
    assert_eq!(args, ["mcp", "--site", site_str.as_str()], "{doc}");

    // The config's command and arguments, run as the client would, with the key.
    let answer = mcp_call(entry["command"].as_str().unwrap(), &args, &key)?;
    assert!(answer["result"].is_object(), "the call failed: {answer}");
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    let me = Command::new(&cli)
        .args(["whoami", "--json", "--site", &site_str])
        .env("GATEHOUSE_API_KEY", &key)
        .output()?;
    ensure!(
        me.status.success(),
        "whoami: {}",
        String::from_utf8_lossy(&me.stderr)
    );
    let me: serde_json::Value = serde_json::from_slice(&me.stdout)?;
    assert_eq!(me["key_id"], key_id.as_str());

    // The list counts that call and warns that the key expires within 7 days.
    let row = format!("#keys-rows tr[data-key-id='{key_id}']");
    let filter = client.find(Locator::Id("keys-filter")).await?;
    filter.select_by_value("active").await?;
    wait_for(client, "#keys-rows[data-filter='active']").await?;
    wait_for(client, &format!("{row} .key-uses[data-uses='1']")).await?;
    let warning = text_of(client, &format!("{row} .key-warning")).await?;
    assert_eq!(warning, "expires soon");
    filter.select_by_value("expires_soon").await?;
    wait_for(client, "#keys-rows[data-filter='expires_soon']").await?;
    assert_eq!(
        client.find_all(Locator::Css("#keys-rows tr")).await?.len(),
        1
    );
    filter.select_by_value("revoked").await?;
    wait_for(client, "#keys-rows[data-filter='revoked']").await?;
    assert!(
        client
            .find_all(Locator::Css("#keys-rows tr"))
            .await?
            .is_empty()
    );
    filter.select_by_value("all").await?;
    wait_for(
        client,
        &format!("#keys-rows[data-filter='all'] tr[data-key-id='{key_id}']"),
    )
    .await?;
    assert_labelled(client, "Keys").await?;
    screenshot_at(client, "e2e-keys.png", "#keys-table").await?;

    // Revoked elsewhere meanwhile: the window's revoke fails, says why next
    // to the row, and the button works again (it used to stay disabled,
    // reading "Confirm revoke").
    let out = Command::new(&cli)
        .args(["keys", "revoke", &key_id, "--site", &site_str])
        .output()?;
    ensure!(
        out.status.success(),
        "CLI revoke: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let revoke = format!("{row} button[data-action='revoke']");
    click(client, &revoke).await?;
    wait_for_text(client, &revoke, |t| t == "Confirm revoke").await?;
    click(client, &revoke).await?;
    wait_for(
        client,
        &format!("{row} .row-error [data-code='KEY_ALREADY_REVOKED']"),
    )
    .await?;
    let button = client.find(Locator::Css(&revoke)).await?;
    assert_eq!(button.text().await?, "Revoke");
    assert!(
        button.is_enabled().await?,
        "the revoke button stayed disabled"
    );
    screenshot_at(client, "e2e-keys-revoke-failed.png", "#keys-table").await?;
    Ok(())
}

/// Site config: a plain value and a secret set from the window. The secret
/// never comes back to the page (its row says redacted), the CLI reads it
/// with --reveal, a bad key is refused next to the form, and removing an
/// entry takes two clicks.
async fn site_config(client: &Client, dir: &Path) -> Result<()> {
    const SECRET: &str = "whsec_e2e_not_for_the_page";
    click(client, "#nav-site-config").await?;
    wait_for(client, "#config-form").await?;
    let set = async |key: &str, value: &str, secret: bool| -> Result<()> {
        type_into(client, "#config-key", key).await?;
        type_into(client, "#config-value", value).await?;
        if secret {
            click(client, "#config-secret").await?;
        }
        click(client, "#config-set").await
    };
    set("http_fetch.allowlist", "example.com", false).await?;
    let plain = "#config-rows tr[data-key='http_fetch.allowlist']";
    wait_for(client, &format!("{plain}[data-redacted='false']")).await?;
    set("stripe.webhook", SECRET, true).await?;
    wait_for(
        client,
        "#config-rows tr[data-key='stripe.webhook'][data-redacted='true']",
    )
    .await?;
    ensure!(
        !client.source().await?.contains(SECRET),
        "a secret value reached the page"
    );
    set("Bad Key", "x", false).await?;
    wait_for(
        client,
        "#config-result [data-code='SITE_CONFIG_KEY_INVALID']",
    )
    .await?;

    let site_str = dir.to_str().context("temp path is not UTF-8")?;
    let out = Command::new(cli_binary()?)
        .args([
            "site",
            "config",
            "get",
            "stripe.webhook",
            "--reveal",
            "--site",
            site_str,
        ])
        .output()?;
    ensure!(
        String::from_utf8_lossy(&out.stdout).trim() == SECRET,
        "the CLI did not read the secret set in the window: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let remove = format!("{plain} button[data-action='remove']");
    click(client, &remove).await?;
    wait_for(client, &format!("{remove}[data-armed='true']")).await?;
    click(client, &remove).await?;
    let deadline = std::time::Instant::now() + PATIENCE;
    while client.find(Locator::Css(plain)).await.is_ok() {
        ensure!(
            std::time::Instant::now() < deadline,
            "the entry was not removed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_labelled(client, "Site config").await?;
    screenshot_at(client, "e2e-site-config.png", "#config-table").await?;
    Ok(())
}

/// Users: create one (and see the error of a duplicate next to the form),
/// change its roles (the CLI lists the new ones and the audit log has the
/// change), disable it, and see the CLI refuse it as an actor.
async fn users(client: &Client, dir: &Path, home: &Path) -> Result<()> {
    let cli = Cli::new(dir, home)?;
    click(client, "#nav-users").await?;
    wait_for(client, "#permissions-table tr[data-action='keys_manage']").await?;
    type_into(client, "#user-email", "grace@example.com").await?;
    click(client, "#user-role-editor").await?;
    click(client, "#user-create").await?;
    let row = "#users-rows tr[data-email='grace@example.com']";
    wait_for(client, &format!("{row}[data-state='enabled']")).await?;
    let editor = client
        .find(Locator::Css(&format!("{row} input[value='editor']")))
        .await?;
    assert_eq!(editor.prop("checked").await?.as_deref(), Some("true"));

    type_into(client, "#user-email", "grace@example.com").await?;
    click(client, "#user-create").await?;
    wait_for(client, "#user-result [data-code='USER_EXISTS']").await?;

    // From the roles she was made with to author and viewer, saved from the row.
    for role in ["viewer", "author", "editor", "admin"] {
        let check = format!("{row} input[value='{role}']");
        let checked = client
            .find(Locator::Css(&check))
            .await?
            .prop("checked")
            .await?;
        let wanted = matches!(role, "author" | "viewer");
        if (checked.as_deref() == Some("true")) != wanted {
            click(client, &check).await?;
        }
    }
    click(client, &format!("{row} button[data-action='save-roles']")).await?;
    wait_for(
        client,
        &format!("{row} button[data-action='save-roles']:not([disabled])"),
    )
    .await?;
    // Grace's roles as the CLI lists them, sorted.
    let roles_of_grace = || -> Result<Vec<String>> {
        let list = cli.json(&["users", "list", "--json"])?;
        let grace = list
            .as_array()
            .and_then(|users| users.iter().find(|u| u["email"] == "grace@example.com"))
            .with_context(|| format!("grace is not listed: {list}"))?;
        let mut roles: Vec<String> = serde_json::from_value(grace["roles"].clone())?;
        roles.sort();
        Ok(roles)
    };
    let deadline = std::time::Instant::now() + PATIENCE;
    let mut roles = roles_of_grace()?;
    while roles != ["author", "viewer"] && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        roles = roles_of_grace()?;
    }
    ensure!(
        roles == ["author", "viewer"],
        "the CLI lists grace's roles as {roles:?}"
    );
    let audit = cli.json(&["audit", "list", "--limit", "1000", "--json"])?;
    let changes: Vec<&serde_json::Value> = audit
        .as_array()
        .context("audit list is not an array")?
        .iter()
        .filter(|e| e["action"] == "user.set_roles" && e["subject"] == "grace@example.com")
        .collect();
    ensure!(
        changes.len() == 1,
        "the audit log's role changes of grace: {changes:?}"
    );
    let detail: serde_json::Value = match &changes[0]["detail"] {
        serde_json::Value::String(text) => serde_json::from_str(text)?,
        other => other.clone(),
    };
    ensure!(
        detail["roles"]
            .as_str()
            .is_some_and(|r| r.contains("author") && r.contains("viewer") && !r.contains("editor")),
        "the audited change: {}",
        changes[0]
    );
    ensure!(
        changes[0]["actor"].as_str().is_some_and(|a| !a.is_empty()),
        "the audited change has no actor: {}",
        changes[0]
    );

    click(client, &format!("{row} button[data-action='disable']")).await?;
    wait_for(client, &format!("{row}[data-state='disabled']")).await?;
    let out = cli.run(&["whoami", "--email", "grace@example.com"])?;
    assert!(!out.status.success(), "a disabled user still resolves");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("USER_DISABLED"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_labelled(client, "Users").await?;
    screenshot_at(client, "e2e-users.png", "#users-table").await?;
    Ok(())
}

/// Audit: newest first; the chain verifies; after the test edits one entry
/// in the database, verification names exactly that entry; export writes a file.
async fn audit(client: &Client, dir: &Path, out_dir: &Path) -> Result<()> {
    click(client, "#nav-audit").await?;
    wait_for(client, "#audit-rows tr:first-child").await?;
    let text = text_of(client, "#audit-rows tr:first-child").await?;
    assert!(text.contains("user.disable"), "newest first: {text}");
    let label = wait_for_text(client, "#audit-page-label", |t| t.contains(" of ")).await?;
    assert!(label.starts_with("1–"), "{label}");
    let label_total = label.rsplit(' ').next().unwrap_or_default().to_string();

    // Filter by actor: the key's call only.
    type_into(client, "#audit-actor", "key:").await?;
    click(client, "#audit-apply").await?;
    wait_for_text(client, "#audit-page-label", |t| t == "1–1 of 1").await?;
    assert!(
        text_of(client, "#audit-rows")
            .await?
            .contains("mcp.tool_call")
    );
    client
        .find(Locator::Id("audit-actor"))
        .await?
        .clear()
        .await?;

    // By action: every row shown is a user change, and there are some.
    type_into(client, "#audit-action", "user.").await?;
    click(client, "#audit-apply").await?;
    let label = wait_for_text(client, "#audit-page-label", |t| t.contains(" of ")).await?;
    let actions: Vec<String> = eval(client, "return [...document.querySelectorAll('#audit-rows tr td:nth-child(4)')].map((td) => td.textContent);", vec![]).await?;
    ensure!(
        !actions.is_empty() && actions.iter().all(|a| a.starts_with("user.")),
        "{label}: {actions:?}"
    );
    client
        .find(Locator::Id("audit-action"))
        .await?
        .clear()
        .await?;

    // By time (the page's local time): nothing from tomorrow on; everything
    // from yesterday to tomorrow.
    let set_times = async |since_days: i64, until_days: Option<i64>| -> Result<()> {
        client
            .execute(
                "const at = (days) => days === null ? '' : new Date(Date.now()
                   - new Date().getTimezoneOffset() * 60000 + days * 86400000).toISOString().slice(0, 16);
                 document.getElementById('audit-since').value = at(arguments[0]);
                 document.getElementById('audit-until').value = at(arguments[1]);",
                vec![serde_json::json!(since_days), serde_json::json!(until_days)],
            )
            .await?;
        click(client, "#audit-apply").await
    };
    set_times(1, None).await?;
    wait_for_text(client, "#audit-page-label", |t| t == "No entries").await?;
    set_times(-1, Some(1)).await?;
    let all = wait_for_text(client, "#audit-page-label", |t| t.contains(" of ")).await?;
    ensure!(all.ends_with(&label_total), "{all} against {label_total}");
    client
        .execute(
            "document.getElementById('audit-since').value = '';
             document.getElementById('audit-until').value = '';",
            vec![],
        )
        .await?;
    click(client, "#audit-apply").await?;

    click(client, "#audit-verify").await?;
    let ok = wait_for(client, "#audit-verify-result [data-code='OK']").await?;
    assert!(
        ok.text().await?.starts_with("Chain intact"),
        "{}",
        ok.text().await?
    );
    assert_labelled(client, "Audit").await?;
    screenshot(client, "e2e-audit.png").await?;

    // Tamper: rewrite who was created in one entry.
    let site = open_core(dir).await?;
    let rows = gatehouse_core::access::audit::list(&site.store, 1000).await?;
    site.store.close().await;
    let target = rows
        .iter()
        .find(|r| r.action == "user.create" && r.subject == "grace@example.com")
        .context("no user.create entry for grace")?
        .seq;
    let db = sqlx::SqlitePool::connect_with(
        sqlx::sqlite::SqliteConnectOptions::new().filename(dir.join("gatehouse.db")),
    )
    .await?;
    let changed = sqlx::query("UPDATE audit_log SET subject = 'mallory@example.com' WHERE seq = ?")
        .bind(target)
        .execute(&db)
        .await?;
    assert_eq!(changed.rows_affected(), 1);
    db.close().await;

    click(client, "#audit-verify").await?;
    let broken = wait_for(
        client,
        "#audit-verify-result [data-code='AUDIT_CHAIN_BROKEN']",
    )
    .await?;
    assert_eq!(
        broken.attr("data-first-bad").await?.as_deref(),
        Some(target.to_string().as_str())
    );
    let said = broken.text().await?;
    assert!(
        said.contains(&format!("Chain broken at entry {target}")),
        "{said}"
    );
    assert!(said.contains("altered"), "{said}");
    screenshot(client, "e2e-audit-broken.png").await?;

    // Export (the typed folder stands in for the native picker).
    type_into(client, "#audit-export-dir", out_dir.to_str().unwrap()).await?;
    click(client, "#audit-export").await?;
    let done = wait_for(client, "#audit-export-result [data-code='OK']").await?;
    let files: Vec<_> = std::fs::read_dir(out_dir)?.collect::<Result<_, _>>()?;
    assert_eq!(files.len(), 1, "{}", done.text().await?);
    let exported: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(files[0].path())?)?;
    assert_eq!(exported["format"], "gatehouse-audit-export");
    assert_eq!(
        exported["entries"].as_array().map(Vec::len),
        Some(rows.len())
    );
    Ok(())
}

/// Where the test puts the window before the restart: not the default
/// rect (1100×720 at 0,0), above the window's minimum size.
const MOVED: (u32, u32, u32, u32) = (40, 50, 900, 600);

/// Moves and resizes the window, then waits until the app has written that
/// rect to the window-state file (it does once the window settles, so the
/// rect survives the driver ending the app without a clean exit).
async fn move_window(client: &Client, home: &Path) -> Result<()> {
    let (x, y, width, height) = MOVED;
    client.set_window_rect(x, y, width, height).await?;
    let (gx, gy, gw, gh) = client.get_window_rect().await?;
    let want = |v: u32| u64::from(v);
    ensure!(
        (gx, gy, gw, gh) == (want(x), want(y), want(width), want(height)),
        "WebDriver could not move the window: {:?}",
        (gx, gy, gw, gh)
    );
    let file = config_home(home)
        .join("org.gatehouse.desktop")
        .join(".window-state.json");
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let saved: Option<serde_json::Value> = std::fs::read_to_string(&file)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok());
        let main = saved.as_ref().map(|s| &s["main"]);
        if main.is_some_and(|m| m["width"] == width && m["height"] == height && m["x"] == x) {
            return Ok(());
        }
        ensure!(
            std::time::Instant::now() < deadline,
            "the app never saved the moved window; {} holds {saved:?}",
            file.display()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The whole admin round, then a restart: the app comes back on the last
/// screen with the last site open, its window where it was left.
#[tokio::test]
#[ignore = "needs tauri-driver, WebKitWebDriver and a display: run under xvfb-run with --include-ignored"]
async fn admin_screens_create_mint_users_audit() -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let home = tmp.path().join("home");
    let site_dir = tmp.path().join("made-here");
    let empty_dir = tmp.path().join("empty-here");
    let out_dir = tmp.path().join("exports");
    std::fs::create_dir_all(&out_dir)?;

    let mut driver = Driver::start(tmp.path(), &home)?;
    let client = driver.connect().await?;
    let outcome = async {
        create_empty_site(&client, &empty_dir).await?;
        create_scratch_site(&client, &site_dir).await?;
        keys(&client, &site_dir).await?;
        site_config(&client, &site_dir).await?;
        users(&client, &site_dir, &home).await?;
        audit(&client, &site_dir, &out_dir).await?;
        move_window(&client, &home).await
    }
    .await;
    let closed = client.close().await;
    drop(driver);
    outcome?;
    ensure!(closed.is_ok(), "closing the WebDriver session: {closed:?}");

    // Restart with the same config folder.
    let mut driver = Driver::start(tmp.path(), &home)?;
    let client = driver.connect().await?;
    let outcome = async {
        wait_for(&client, "#screen[data-screen='audit']").await?;
        wait_for_text(&client, "#current-site", |t| t.contains("window-site")).await?;
        wait_for(&client, "#nav-audit[aria-current='page']").await?;
        // The remembered site is open: the screen's data loads.
        wait_for(&client, "#audit-rows tr").await?;
        // The window is back where it was left (a few pixels of slack for
        // a window manager's frame).
        let (x, y, width, height) = client.get_window_rect().await?;
        let (wx, wy, ww, wh) = MOVED;
        ensure!(
            [(x, wx), (y, wy), (width, ww), (height, wh)]
                .iter()
                .all(|&(got, want)| got.abs_diff(u64::from(want)) <= 4),
            "window rect after the restart: {:?}, left at {MOVED:?}",
            (x, y, width, height)
        );
        anyhow::Ok(())
    }
    .await;
    let closed = client.close().await;
    drop(driver);
    outcome?;
    ensure!(closed.is_ok(), "closing the WebDriver session: {closed:?}");
    let remembered = std::fs::read_to_string(
        config_home(&home)
            .join("org.gatehouse.desktop")
            .join(gatehouse_core::site::remembered::FILE),
    )?;
    assert!(remembered.contains("made-here"), "{remembered}");
    Ok(())
}
