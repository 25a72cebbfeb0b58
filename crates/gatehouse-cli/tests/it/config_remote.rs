//! The remote form end to end: `gatehouse config install CLIENT --url` writes
//! the entry for a real `gatehouse serve`, and `config doctor` calls that
//! server with the entry's key and reports the key and what it may see, then
//! the refusal once the key is revoked.

use serde_json::Value;

use crate::config_install::in_home;
use crate::serve_util::Serve;
use crate::util::TestSite;

fn doctor(site: &TestSite, home: &std::path::Path) -> Value {
    let out = in_home(site, home)
        .args(["config", "doctor", "--json"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

fn server_check(report: &Value) -> Value {
    let file = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["client"] == "cursor")
        .unwrap_or_else(|| panic!("{report:#}"));
    let entry = &file["entries"][0];
    entry["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "server")
        .unwrap()
        .clone()
}

#[test]
fn doctor_calls_gatehouse_serve_with_the_installed_key() {
    let site = TestSite::new("remote-doctor");
    let (key, id) = site.mint("editor");
    let serve = Serve::start(&site, &[]);
    let url = format!("http://{}/mcp", serve.addr);
    let home = tempfile::tempdir().unwrap();
    let out = in_home(&site, home.path())
        .env("GATEHOUSE_API_KEY", &key)
        .args([
            "config", "install", "cursor", "--url", &url, "--scope", "user",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains(&key), "the diff shows the key: {stdout}");
    let written = std::fs::read_to_string(home.path().join(".cursor/mcp.json")).unwrap();
    let doc: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(doc["mcpServers"]["gatehouse"]["url"], url.as_str());
    assert_eq!(
        doc["mcpServers"]["gatehouse"]["headers"]["Authorization"],
        format!("Bearer {key}")
    );

    let report = doctor(&site, home.path());
    let check = server_check(&report);
    assert_eq!(check["status"], "pass", "{report:#}");
    let message = check["message"].as_str().unwrap();
    // The server's word on the actor: the key and its roles, not only the id.
    assert!(
        message.contains(&format!("answers as key {id} (roles editor)")),
        "{message}"
    );
    assert!(
        message.contains("content_write_draft"),
        "an editor writes drafts: {message}"
    );

    // A role change on the server (this machine's config still says editor)
    // shows in the next report, as the server sees it.
    site.sql(&format!(
        "UPDATE api_keys SET roles = 'viewer' WHERE id = '{id}'"
    ));
    site.sql("UPDATE access_generation SET gen = gen + 1 WHERE id = 1");
    let report = doctor(&site, home.path());
    let message = server_check(&report)["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains(&format!("answers as key {id} (roles viewer)"))
            && !message.contains("content_write_draft"),
        "{message}"
    );

    site.ok(&["keys", "revoke", &id]);
    let report = doctor(&site, home.path());
    let check = server_check(&report);
    assert_eq!(check["status"], "fail", "{report:#}");
    assert_eq!(check["code"], "CONFIG_REMOTE_FAILED");
    let message = check["message"].as_str().unwrap();
    assert!(
        message.contains("401") && !message.contains(&key),
        "{message}"
    );
    assert_eq!(report["ok"], false);
    serve.terminate();
}
