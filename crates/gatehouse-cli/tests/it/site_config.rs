//! `gatehouse site config` and the `site_config_read` tool: secrets stay
//! hidden whatever their key is called, only editors and admins get the tool,
//! and every change is audited without its value.

use serde_json::{Value, json};

use crate::mcp_util::{McpSite, tool_error};
use crate::util::TestSite;

const PEM: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----";

fn config_as(site: &TestSite, actor: &[&str]) -> Value {
    let mut m = site.mcp(actor, &[]);
    m.initialize("2025-06-18");
    let r = m.call(1, "site_config_read", json!({}), None);
    assert_ne!(r["result"]["isError"], true, "{r}");
    r["result"]["structuredContent"]["config"].clone()
}

/// `site config set KEY` with the value on stdin (how a secret should be given).
fn set_from_stdin(site: &TestSite, key: &str, value: &str) {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = site
        .command()
        .args(["site", "config", "set", key])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{value}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn site_config_read_redacts_secret_shaped_values_whatever_the_key() {
    let site = TestSite::new("config_redact");
    let secrets = [
        ("db.url", "postgres://app:hunter2@db.internal:5432/site"),
        ("aws.private_key", PEM),
        ("stripe.sk", "sk_live_51H8sV2Kq0aZbYcXdWeVfGh"),
        ("github.pat", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
        (
            "backup.target",
            "s3://AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI@bucket",
        ),
    ];
    for (k, v) in secrets {
        set_from_stdin(&site, k, v);
    }
    // An admin-flagged value is hidden however harmless it looks.
    site.ok(&[
        "site",
        "config",
        "set",
        "--secret",
        "launch.codeword",
        "bluebird",
    ]);
    let shown = config_as(&site, &["--email", "editor@example.com"]);
    let text = shown.to_string();
    for (k, v) in secrets {
        assert_eq!(shown[k], "<redacted>", "{k}: {text}");
        assert!(!text.contains(&v[..12.min(v.len())]), "{k} leaked: {text}");
    }
    assert_eq!(shown["launch.codeword"], "<redacted>");
    assert!(!text.contains("bluebird"));
    assert_eq!(shown["site.title"], "Scratch site");
    // The admin's own terminal can still see the value, exactly as given.
    assert_eq!(
        site.ok(&["site", "config", "get", "aws.private_key", "--reveal"])
            .trim_end(),
        PEM
    );
}

/// Rotating a secret (setting it again without `--secret`) keeps it secret:
/// it had become readable to every editor key. Unmarking takes its own flag.
#[test]
fn a_secret_set_again_without_the_flag_stays_secret() {
    let site = TestSite::new("config_rotate");
    site.ok(&[
        "site",
        "config",
        "set",
        "--secret",
        "smtp.relay",
        "first-value",
    ]);
    let out = site.ok(&["site", "config", "set", "smtp.relay", "rotated-value"]);
    assert!(out.contains("(secret)"), "{out}");
    let shown = config_as(&site, &["--email", "editor@example.com"]);
    assert_eq!(shown["smtp.relay"], "<redacted>", "{shown}");
    assert!(!shown.to_string().contains("rotated-value"));
    site.ok(&[
        "site",
        "config",
        "set",
        "--not-secret",
        "smtp.relay",
        "public-now",
    ]);
    let shown = config_as(&site, &["--email", "editor@example.com"]);
    assert_eq!(shown["smtp.relay"], "public-now", "{shown}");
    // A new entry without a flag is not secret.
    site.ok(&["site", "config", "set", "site.motto", "hello"]);
    assert_eq!(
        config_as(&site, &["--email", "editor@example.com"])["site.motto"],
        "hello"
    );
}

#[test]
fn viewers_and_authors_are_not_given_site_config_read() {
    let site = TestSite::new("config_roles");
    for email in ["viewer@example.com", "author@example.com"] {
        let mut m = site.mcp(&["--email", email], &[]);
        m.initialize("2025-06-18");
        let names = m.tool_names(1, json!({}));
        assert!(
            !names.contains(&"site_config_read".to_string()),
            "{email}: {names:?}"
        );
        let e = tool_error(&m.call(2, "site_config_read", json!({}), None));
        assert_eq!(e["code"], "PERMISSION_DENIED", "{email}");
    }
    let mut m = site.mcp(&["--email", "editor@example.com"], &[]);
    m.initialize("2025-06-18");
    assert!(
        m.tool_names(1, json!({}))
            .contains(&"site_config_read".to_string())
    );
}

#[test]
fn site_config_commands_change_config_with_an_audit_entry_and_no_value_in_it() {
    let site = TestSite::new("config_cli");
    site.ok(&[
        "site",
        "config",
        "set",
        "--secret",
        "smtp.pass",
        "correct horse",
    ]);
    site.ok(&["site", "config", "set", "site.title", "New title"]);
    let list = site.ok_json(&["site", "config", "list", "--json"]);
    let entry = |k: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == k)
            .cloned()
            .unwrap_or_else(|| panic!("{k} missing: {list}"))
    };
    assert_eq!(entry("smtp.pass")["value"], "<redacted>");
    assert_eq!(entry("smtp.pass")["secret"], true);
    assert_eq!(entry("site.title")["value"], "New title");
    assert!(
        !site
            .ok(&["site", "config", "list"])
            .contains("correct horse")
    );
    assert_eq!(
        site.ok(&["site", "config", "get", "smtp.pass"]).trim(),
        "<redacted>"
    );
    assert_eq!(
        site.ok(&["site", "config", "get", "smtp.pass", "--reveal"])
            .trim(),
        "correct horse"
    );
    site.ok(&["site", "config", "unset", "smtp.pass"]);
    assert_eq!(
        site.fails(&["site", "config", "get", "smtp.pass"]).code,
        "SITE_CONFIG_KEY_NOT_FOUND"
    );
    assert_eq!(
        site.fails(&["site", "config", "set", "Bad Key", "x"]).code,
        "SITE_CONFIG_KEY_INVALID"
    );
    let audit = site.audit();
    let log = serde_json::to_string(&audit).unwrap();
    assert!(
        !log.contains("correct horse"),
        "a secret reached the audit log"
    );
    let actions: Vec<(&str, &str)> = audit
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap(),
                e["subject"].as_str().unwrap(),
            )
        })
        .collect();
    for want in [
        ("site_config.set", "smtp.pass"),
        ("site_config.set", "site.title"),
        ("site_config.unset", "smtp.pass"),
    ] {
        assert!(actions.contains(&want), "{want:?} not in {actions:?}");
    }
    site.ok(&["audit", "verify"]);
}
