//! OAuth grants on the Keys screen against a real `gatehouse serve
//! --public-url`: an application (curl speaking the authorization code flow
//! with PKCE) asks for a pairing code on the real consent page; the code is
//! approved in the window as a key the page picks; the flow finishes and
//! the token calls a tool; the grant is listed with its client, actor,
//! scopes and use, then revoked in the window, after which the CLI shows it
//! revoked and the same token gets a 401; a second application is approved
//! as a user and acts as that user. Every secret travels to curl in a file,
//! never in argv.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use fantoccini::Client;
use serde_json::{Value, json};

use super::webdriver::*;

const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
/// S256 of [`VERIFIER`] (RFC 7636, appendix B).
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
const REDIRECT: &str = "http://127.0.0.1:9/callback";
/// The user the second application acts as.
const USER: &str = "ed@example.com";

/// `gatehouse serve` with OAuth on, stopped with SIGTERM on drop.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.0.wait();
    }
}

fn serve(site: &Path, home: &Path, addr: &str) -> Result<Serve> {
    let child = Command::new(cli_binary()?)
        .arg("--site")
        .arg(site)
        .args(["serve", "--listen", addr, "--public-url"])
        .arg(format!("http://{addr}"))
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", config_home(home))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()?;
    let mut s = Serve(child);
    let deadline = Instant::now() + PATIENCE;
    while TcpStream::connect(addr).is_err() {
        if let Some(status) = s.0.try_wait()? {
            bail!("serve exited with {status} before listening");
        }
        ensure!(Instant::now() < deadline, "serve never listened on {addr}");
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(s)
}

/// One HTTP exchange with curl: request headers and body from files in
/// `dir`; answers the status, the response headers and the body.
fn curl(
    dir: &Path,
    method: &str,
    url: &str,
    headers: &[String],
    body: Option<&str>,
) -> Result<(u16, String, String)> {
    let (hfile, bfile) = (dir.join("req-headers"), dir.join("req-body"));
    let (rh, rb) = (dir.join("resp-headers"), dir.join("resp-body"));
    std::fs::write(&hfile, headers.join("\n") + "\n")?;
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-X", method, "-w", "%{http_code}", "-D"])
        .arg(&rh)
        .arg("-o")
        .arg(&rb)
        .arg("-H")
        .arg(format!("@{}", hfile.display()));
    if let Some(b) = body {
        std::fs::write(&bfile, b)?;
        cmd.arg("--data-binary")
            .arg(format!("@{}", bfile.display()));
    }
    let out = cmd.arg(url).output().context("curl runs")?;
    let status = String::from_utf8(out.stdout)?.trim().parse()?;
    Ok((
        status,
        std::fs::read_to_string(&rh)?,
        std::fs::read_to_string(&rb)?,
    ))
}

fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", urlencode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn urlencode(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The value of hidden field `name` on a consent page.
fn field(html: &str, name: &str) -> Result<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html
        .find(&marker)
        .with_context(|| format!("no field {name} in {html}"))?
        + marker.len();
    Ok(html[start..]
        .split('"')
        .next()
        .unwrap_or_default()
        .to_string())
}

/// Header `name` of a response (case-insensitive).
fn header(headers: &str, name: &str) -> Option<String> {
    headers.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_string())
    })
}

/// A query parameter of a URL.
fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|p| {
        let (k, v) = p.split_once('=')?;
        (k == name).then(|| v.to_string())
    })
}

/// A tools/call with `token`; answers the HTTP status and the body.
fn call_tool(dir: &Path, base: &str, token: &str) -> Result<(u16, String)> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "content_read", "arguments": {"slug": "welcome"}}});
    let (status, _, text) = curl(
        dir,
        "POST",
        &format!("{base}/mcp"),
        &[
            "Content-Type: application/json".into(),
            "Accept: application/json, text/event-stream".into(),
            "MCP-Protocol-Version: 2025-06-18".into(),
            format!("Authorization: Bearer {token}"),
        ],
        Some(&body.to_string()),
    )?;
    Ok((status, text))
}

/// The application's side up to the pairing code: registered, the consent
/// page fetched, "Ask an admin to approve" pressed. Answers the client id,
/// the page's cookie and fields, and the code the page shows.
struct Pending {
    client_id: String,
    cookie: String,
    request: String,
    csrf: String,
    code: String,
}

fn ask_for_pairing(dir: &Path, base: &str) -> Result<Pending> {
    let reg = json!({"client_name": "E2E connector", "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none"});
    let (status, _, text) = curl(
        dir,
        "POST",
        &format!("{base}/register"),
        &["Content-Type: application/json".into()],
        Some(&reg.to_string()),
    )?;
    ensure!(status == 201, "register: {status} {text}");
    let client_id = serde_json::from_str::<Value>(&text)?["client_id"]
        .as_str()
        .context("client_id")?
        .to_string();
    let query = form(&[
        ("response_type", "code"),
        ("client_id", &client_id),
        ("redirect_uri", REDIRECT),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
        ("state", "e2e"),
        ("scope", "content:read"),
        ("resource", &format!("{base}/mcp")),
    ]);
    let (status, headers, page) =
        curl(dir, "GET", &format!("{base}/authorize?{query}"), &[], None)?;
    ensure!(status == 200, "consent page: {status} {page}");
    let cookie = header(&headers, "set-cookie")
        .context("the consent page sets its CSRF cookie")?
        .split(';')
        .next()
        .unwrap_or_default()
        .to_string();
    let (request, csrf) = (field(&page, "request")?, field(&page, "csrf")?);
    let (status, _, page) = curl(
        dir,
        "POST",
        &format!("{base}/authorize"),
        &[
            "Content-Type: application/x-www-form-urlencoded".into(),
            format!("Cookie: {cookie}"),
            format!("Origin: {base}"),
        ],
        Some(&form(&[
            ("request", &request),
            ("csrf", &csrf),
            ("decision", "pair"),
        ])),
    )?;
    ensure!(status == 200, "pairing page: {status} {page}");
    ensure!(
        page.contains("desktop app"),
        "the page names the desktop app: {page}"
    );
    let code = field(&page, "pair")?;
    Ok(Pending {
        client_id,
        cookie,
        request,
        csrf,
        code,
    })
}

/// The page's "Continue" and the token exchange: the access token.
fn finish(dir: &Path, base: &str, p: &Pending) -> Result<String> {
    let (status, headers, page) = curl(
        dir,
        "POST",
        &format!("{base}/authorize"),
        &[
            "Content-Type: application/x-www-form-urlencoded".into(),
            format!("Cookie: {}", p.cookie),
            format!("Origin: {base}"),
        ],
        Some(&form(&[
            ("request", &p.request),
            ("csrf", &p.csrf),
            ("decision", "paired"),
            ("pair", &p.code),
        ])),
    )?;
    ensure!(status == 303, "continue after approval: {status} {page}");
    let location = header(&headers, "location").context("redirect")?;
    ensure!(location.starts_with(REDIRECT), "{location}");
    let code = query_param(&location, "code").context("code in the redirect")?;
    let (status, _, text) = curl(
        dir,
        "POST",
        &format!("{base}/token"),
        &["Content-Type: application/x-www-form-urlencoded".into()],
        Some(&form(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("client_id", &p.client_id),
            ("resource", &format!("{base}/mcp")),
        ])),
    )?;
    ensure!(status == 200, "token: {status} {text}");
    Ok(serde_json::from_str::<Value>(&text)?["access_token"]
        .as_str()
        .context("access_token")?
        .to_string())
}

async fn scenario(client: &Client, site: &Path, home: &Path) -> Result<()> {
    let cli = Cli::new(site, home)?;
    let minted = cli.json(&[
        "keys",
        "mint",
        "--label",
        "connector",
        "--roles",
        "viewer",
        "--json",
    ])?;
    let key_id = minted["info"]["id"]
        .as_str()
        .or_else(|| minted["id"].as_str())
        .context("key id")?
        .to_string();
    cli.ok(&["users", "create", "--email", USER, "--roles", "viewer"])?;
    let addr = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .to_string();
    let base = format!("http://{addr}");
    let _serve = serve(site, home, &addr)?;
    let dir = tempfile::tempdir()?;
    let pending = ask_for_pairing(dir.path(), &base)?;

    let code = open_site(client, &site.display().to_string()).await?;
    ensure!(code == "OK", "opening the site: {code}");
    click(client, "#nav-keys").await?;
    wait_for(client, "#grants-table").await?;
    wait_for_text(client, "#grants-status", |t| t.contains("No application")).await?;
    let actor = format!("key:{key_id}");
    wait_for(client, &format!("#pair-actor option[value='{actor}']")).await?;
    select(client, "pair-actor", &actor).await?;

    // A code no page shows is refused with its error, and nothing is approved.
    type_into(client, "#pair-code", "ZZZZ-ZZZZ").await?;
    click(client, "#pair-lookup").await?;
    wait_for(client, "#pair-result [data-code='OAUTH_CONSENT_INVALID']").await?;

    // The code typed as a person would (lower case), approved as the key.
    // Looked up first: the window says whose application it is, and the
    // lookup approves nothing.
    type_into(client, "#pair-code", &pending.code.to_lowercase()).await?;
    click(client, "#pair-lookup").await?;
    let asked = text_of(client, "#pair-pending").await?;
    ensure!(
        asked.contains("E2E connector")
            && asked.contains("http://127.0.0.1")
            && asked.contains(&key_id),
        "{asked}"
    );
    let (status, _, page) = curl(
        dir.path(),
        "POST",
        &format!("{base}/authorize"),
        &[
            "Content-Type: application/x-www-form-urlencoded".into(),
            format!("Cookie: {}", pending.cookie),
            format!("Origin: {base}"),
        ],
        Some(&form(&[
            ("request", &pending.request),
            ("csrf", &pending.csrf),
            ("decision", "paired"),
            ("pair", &pending.code),
        ])),
    )?;
    ensure!(
        status == 200 && page.contains("Not approved yet"),
        "{status} {page}"
    );

    click(client, "#pair-confirm").await?;
    let said = text_of(client, "#pair-approved").await?;
    ensure!(
        said.contains("E2E connector") && said.contains(&key_id) && said.contains("content:read"),
        "{said}"
    );
    screenshot(client, "e2e-grants-approved.png").await?;

    let token = finish(dir.path(), &base, &pending)?;
    let (status, text) = call_tool(dir.path(), &base, &token)?;
    ensure!(status == 200, "a call with the token: {status} {text}");
    ensure!(
        text.contains("\"result\"") && !text.contains("\"isError\":true"),
        "{text}"
    );

    // The grant, as the window lists it.
    click(client, "#grants-refresh").await?;
    let row = "#grants-rows tr[data-status='active']";
    wait_for(client, row).await?;
    let grants = cli.json(&["oauth", "grants", "--json"])?;
    let grant = &grants[0];
    let id = grant["id"].as_str().context("grant id")?.to_string();
    ensure!(
        grant["acts_as"] == json!({"kind": "key", "id": key_id}),
        "{grant}"
    );
    let row = format!("#grants-rows tr[data-grant-id='{id}']");
    let shown = text_of(client, &row).await?;
    for part in [
        "E2E connector",
        "127.0.0.1",
        &format!("key {key_id}"),
        "content:read",
    ] {
        ensure!(shown.contains(part), "{part:?} not in the row: {shown}");
    }
    ensure!(!shown.contains(&token), "a token reached the page");
    let last_used = text_of(client, &format!("{row} .grant-last-used")).await?;
    ensure!(
        last_used != "never",
        "the token's use is not shown: {last_used}"
    );
    screenshot_at(client, "e2e-grants-list.png", "#grants-table").await?;

    // Revoked in the window: two clicks, then the CLI and the server agree.
    let revoke = format!("{row} button[data-action='revoke-grant']");
    click(client, &revoke).await?;
    click(client, &revoke).await?;
    wait_for(client, &format!("{row}[data-status='revoked']")).await?;
    let grants = cli.json(&["oauth", "grants", "--json"])?;
    ensure!(!grants[0]["revoked_at"].is_null(), "{grants}");
    let (status, text) = call_tool(dir.path(), &base, &token)?;
    ensure!(status == 401, "a revoked grant's token: {status} {text}");

    // A second application, approved as a user picked from the same list.
    let second = ask_for_pairing(dir.path(), &base)?;
    select(client, "pair-actor", &format!("user:{USER}")).await?;
    type_into(client, "#pair-code", &second.code).await?;
    click(client, "#pair-lookup").await?;
    click(client, "#pair-confirm").await?;
    wait_for_text(client, "#pair-approved", |t| {
        t.contains(&format!("user {USER}"))
    })
    .await?;
    let token = finish(dir.path(), &base, &second)?;
    let (status, text) = call_tool(dir.path(), &base, &token)?;
    ensure!(status == 200, "a call as the user: {status} {text}");
    let grants = cli.json(&["oauth", "grants", "--json"])?;
    let live: Vec<&Value> = grants
        .as_array()
        .into_iter()
        .flatten()
        .filter(|g| g["revoked_at"].is_null())
        .collect();
    ensure!(
        live.len() == 1 && live[0]["acts_as"] == json!({"kind": "user", "id": USER}),
        "{grants}"
    );

    // The guide says which URL to paste and what the page shows.
    click(client, "#connect-guide summary").await?;
    let guide = text_of(client, "#connect-guide").await?;
    ensure!(
        guide.contains("https://mcp.example.org/mcp") && guide.contains("Ask an admin to approve"),
        "{guide}"
    );

    // Both decisions are the desktop's in the audit log.
    let audit = cli.json(&["audit", "list", "--limit", "1000", "--json"])?;
    let by_desktop = |action: &str| {
        audit
            .as_array()
            .into_iter()
            .flatten()
            .any(|e| e["action"] == action && e["actor"] == "desktop")
    };
    ensure!(
        by_desktop("oauth.pair_approve") && by_desktop("oauth.revoke"),
        "{audit}"
    );
    Ok(())
}

#[tokio::test]
#[ignore = "needs tauri-driver, WebKitWebDriver and a display: run under xvfb-run with --include-ignored"]
async fn keys_screen_approves_pairing_codes_as_a_key_or_a_user_lists_the_grants_and_revokes_one()
-> Result<()> {
    let (_tmp, site) = scratch_site("e2e-grants").await?;
    let home = tempfile::tempdir()?;
    let mut driver = Driver::start(&site, home.path())?;
    let client = driver.connect().await?;
    let outcome = scenario(&client, &site, home.path()).await;
    let closed = client.close().await;
    drop(driver);
    outcome?;
    ensure!(closed.is_ok(), "closing the WebDriver session: {closed:?}");
    Ok(())
}
