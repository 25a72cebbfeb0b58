//! `[serve]` in gatehouse.toml: the defaults of `gatehouse serve`, each
//! overridden by its flag for one run, checked by the flags' own rules.

use serde_json::json;

use crate::serve_util::{LEGACY, Reply, Serve};
use crate::util::{TestSite, closed_port};

/// `tools/list` sent with `Host: host`, as `key` when given.
fn list_at(s: &Serve, host: &str, key: Option<&str>) -> Reply {
    let auth = key.map(|k| format!("Bearer {k}"));
    let mut headers = vec![("MCP-Protocol-Version", LEGACY), ("Host", host)];
    if let Some(a) = &auth {
        headers.push(("Authorization", a.as_str()));
    }
    s.post(
        &headers,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
    )
}

/// Appends `table` to the site's gatehouse.toml.
fn with_table(site: &TestSite, table: &str) {
    site.append_to_site_file(&format!("[serve]\n{table}"));
}

#[test]
fn serve_listens_where_its_table_says_and_a_flag_overrides_it() {
    let site = TestSite::new("serve-table-listen");
    let port = closed_port();
    with_table(
        &site,
        &format!(
            "listen = \"127.0.0.1:{port}\"\nrequire_key = true\nallow_hosts = [\"mcp.example.org\"]"
        ),
    );
    let (key, _) = site.mint("viewer");
    let s = Serve::start_from_table(&site, &[]);
    assert_eq!(s.addr, format!("127.0.0.1:{port}"));
    // The table's require_key: a keyless request is refused, not `public`.
    let keyless = s.legacy(None, "tools/list", json!({}));
    assert_eq!(keyless.status, 401, "{}", keyless.text());
    // The table's allowlist: its Host is answered.
    let named = list_at(&s, "mcp.example.org", Some(&key));
    assert_eq!(named.status, 200, "{}", named.text());
    drop(s);

    // Flags win for this run: another port, keyless requests served, and an
    // empty --allow-host= clears the table's list.
    let s = Serve::start_from_table(
        &site,
        &[
            "--listen",
            "127.0.0.1:0",
            "--require-key=false",
            "--allow-host=",
        ],
    );
    assert_ne!(s.addr, format!("127.0.0.1:{port}"));
    assert_eq!(s.legacy(None, "tools/list", json!({})).status, 200);
    let named = list_at(&s, "mcp.example.org", Some(&key));
    assert_eq!(named.status, 403, "{}", named.text());
    drop(s);

    // --no-serve-table: none of the table applies.
    let s = Serve::start_from_table(&site, &["--no-serve-table", "--listen", "127.0.0.1:0"]);
    assert_eq!(s.legacy(None, "tools/list", json!({})).status, 200);
    assert_eq!(list_at(&s, "mcp.example.org", Some(&key)).status, 403);
    drop(s);

    let help = site.ok(&["serve", "--help"]);
    assert!(
        help.contains("[serve] listen") && help.contains("Precedence: flag > [serve] > default"),
        "{help}"
    );
}

/// A `[serve]` asking for clear text beyond loopback is refused with the
/// flag's own error, before the site's database is opened.
#[test]
fn a_table_listening_beyond_loopback_in_clear_text_is_refused_as_the_flag_is() {
    let site = TestSite::new("serve-table-exposure");
    let by_flag = site.fails(&["serve", "--listen", "0.0.0.0:0"]);
    with_table(&site, "listen = \"0.0.0.0:0\"");
    let by_table = site.fails(&["serve"]);
    assert_eq!(by_table.code, "LISTEN_UNSAFE");
    assert_eq!(by_table.stderr, by_flag.stderr);
    // A flag that keeps it on loopback wins over the table.
    let s = Serve::start_from_table(&site, &["--listen", "127.0.0.1:0"]);
    assert!(s.addr.starts_with("127.0.0.1:"), "{}", s.addr);
}

#[test]
fn a_secret_in_the_serve_table_is_refused_and_never_echoed() {
    let site = TestSite::new("serve-table-secret");
    let password = "Pw0rdZx9Qw8Er7Ty6Ui5Op4As3";
    with_table(
        &site,
        &format!("public_url = \"https://admin:{password}@mcp.example.org\""),
    );
    let f = site.fails(&["serve", "--listen", "127.0.0.1:0"]);
    assert_eq!(f.code, "SERVE_SETTING_SECRET");
    assert!(f.stderr.contains("public_url"), "{}", f.stderr);
    assert!(!f.stderr.contains(password), "{}", f.stderr);
    // The flag is refused by the same rule, without the echo either.
    let site = TestSite::new("serve-flag-secret");
    let token = "ghp_Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVb";
    let f = site.fails(&["serve", "--allow-origin", token]);
    assert_eq!(f.code, "SERVE_SETTING_SECRET");
    assert!(!f.stderr.contains(token), "{}", f.stderr);
}

#[test]
fn an_unknown_or_bad_serve_key_is_a_clear_error_naming_it() {
    let site = TestSite::new("serve-table-unknown");
    with_table(&site, "listn = \"127.0.0.1:0\"");
    let f = site.fails(&["serve"]);
    assert_eq!(f.code, "SITE_CONFIG_INVALID");
    assert!(f.stderr.contains("[serve] listn"), "{}", f.stderr);
    assert!(
        f.stderr.contains("listen"),
        "the hint names the keys: {}",
        f.stderr
    );
    let site = TestSite::new("serve-table-bad");
    with_table(&site, "behind_proxy = [\"proxy.internal\"]");
    let f = site.fails(&["serve"]);
    assert_eq!(f.code, "SITE_CONFIG_INVALID");
    assert!(f.stderr.contains("[serve] behind_proxy"), "{}", f.stderr);
    assert!(f.stderr.contains("not an IP address"), "{}", f.stderr);
}

/// A typo in `[serve]` stops serving only: a leaked key can still be
/// revoked, and the site's other commands still work.
#[test]
fn a_bad_serve_table_stops_only_serve_never_revocation() {
    let site = TestSite::new("serve-table-scoped");
    let (_, id) = site.mint("viewer");
    with_table(&site, "rate_per_key = -1");
    let f = site.fails(&["serve"]);
    assert_eq!(f.code, "SITE_CONFIG_INVALID");
    assert!(f.stderr.contains("rate_per_key"), "{}", f.stderr);
    site.ok(&["whoami", "--key-id", &id]);
    site.ok(&["keys", "revoke", &id]);
    let revoked = site.fails(&["whoami", "--key-id", &id]);
    assert_eq!(revoked.code, "ACTOR_API_KEY_INVALID", "{}", revoked.stderr);
    assert!(revoked.stderr.contains("revoked"), "{}", revoked.stderr);
    let verified = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(verified["ok"], true, "{verified}");
}

/// The log lines before serve listens, with `extra` flags.
fn first_log_lines(site: &TestSite, extra: &[&str]) -> Vec<String> {
    use std::io::BufRead as _;
    let mut child = site
        .command()
        .env("GATEHOUSE_LOG", "debug")
        .arg("serve")
        .args(extra)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = Vec::new();
    for line in std::io::BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.starts_with("gatehouse serve: listening on ") {
            break;
        }
        lines.push(line);
    }
    let _ = child.kill();
    let _ = child.wait();
    lines
}

/// Logging starts before the site is opened, yet follows `[serve]
/// log_format`; `--log-format` wins over it.
#[test]
fn the_log_format_comes_from_the_table_unless_the_flag_says() {
    let site = TestSite::new("serve-table-log");
    with_table(&site, "listen = \"127.0.0.1:0\"\nlog_format = \"json\"");
    let json = first_log_lines(&site, &[]);
    assert!(!json.is_empty());
    assert!(json.iter().all(|l| l.starts_with('{')), "{json:?}");
    let text = first_log_lines(&site, &["--log-format", "text"]);
    assert!(!text.is_empty());
    assert!(text.iter().all(|l| !l.starts_with('{')), "{text:?}");
}
