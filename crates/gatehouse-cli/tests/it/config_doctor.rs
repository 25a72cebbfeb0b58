//! `gatehouse config doctor` through the real binary, against a fixture `HOME`
//! holding the files of several clients: a good entry, a revoked key, a key
//! about to expire, a missing binary, a missing site, a referenced key, a
//! foreign server and a file that does not parse, each reported as what it is.

use std::path::Path;

use serde_json::Value;

use crate::config_install::{in_home, run_in};
use crate::util::TestSite;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn install(site: &TestSite, home: &Path, args: &[&str]) {
    let mut argv = vec!["config", "install"];
    argv.extend_from_slice(args);
    let out = run_in(site, home, &argv);
    assert!(
        out.status.success(),
        "install {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The report's file for `client`.
fn file<'a>(report: &'a Value, client: &str) -> &'a Value {
    report["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["client"] == client)
        .unwrap_or_else(|| panic!("{client} not reported: {report:#}"))
}

/// `name → (status, code)` of the only entry in `client`'s file.
fn checks(report: &Value, client: &str) -> std::collections::BTreeMap<String, (String, String)> {
    let entries = file(report, client)["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{client}: {entries:#?}");
    entries[0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                (
                    c["status"].as_str().unwrap().to_string(),
                    c["code"].as_str().unwrap_or("").to_string(),
                ),
            )
        })
        .collect()
}

fn status(report: &Value, client: &str, check: &str) -> (String, String) {
    checks(report, client)
        .remove(check)
        .unwrap_or_else(|| panic!("{client} has no {check} check: {report:#}"))
}

fn pass() -> (String, String) {
    ("pass".into(), String::new())
}

#[test]
fn doctor_reports_each_entry_for_what_it_is() {
    let site = TestSite::new("doctor");
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let (good, _) = site.mint("viewer");
    let (revoked, revoked_id) = site.mint("viewer");
    let expiring = site.ok_json(&[
        "keys",
        "mint",
        "--label",
        "soon",
        "--roles",
        "viewer",
        "--expires-in",
        "2d",
        "--json",
    ])["key"]
        .as_str()
        .unwrap()
        .to_string();

    install(&site, h, &["cursor", "--api-key", &good]);
    install(&site, h, &["claude-desktop", "--api-key", &revoked]);
    site.ok(&["keys", "revoke", &revoked_id]);
    install(&site, h, &["windsurf", "--api-key", &expiring]);
    install(&site, h, &["vscode", "--secret-ref"]);
    install(&site, h, &["goose", "--role", "editor"]);
    let site_dir = site.path().canonicalize().unwrap();
    let site_dir = site_dir.to_str().unwrap();
    // Gatehouse moved or uninstalled since the entry was written.
    write(
        &h.join(".codex/config.toml"),
        &format!(
            "model = \"o3\"\n\n[mcp_servers.gatehouse]\ncommand = \"/nonexistent/bin/gatehouse\"\nargs = [\"mcp\", \"--site\", \"{site_dir}\"]\n"
        ),
    );
    // A site that is gone.
    let bin = Path::new(crate::util::BIN).canonicalize().unwrap();
    write(
        &h.join(".kiro/settings/mcp.json"),
        &serde_json::json!({"mcpServers": {"blog": {
            "command": bin, "args": ["mcp", "--site", "/nonexistent/site"]
        }}})
        .to_string(),
    );
    // Not Gatehouse's: listed, not checked.
    write(
        &h.join(".config/zed/settings.json"),
        "// Zed\n{ \"context_servers\": { \"other\": { \"command\": \"/usr/bin/other\" } } }\n",
    );
    // Unreadable: reported, never guessed at.
    write(&h.join(".gemini/settings.json"), "{ \"mcpServers\": ");

    let project = tempfile::tempdir().unwrap();
    let out = in_home(&site, h)
        .args(["config", "doctor", "--json", "--project"])
        .arg(project.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success(), "problems must fail the command");
    assert!(stderr.contains("CONFIG_DOCTOR_PROBLEMS"), "{stderr}");
    for key in [&good, &revoked, &expiring] {
        assert!(
            !stdout.contains(key.as_str()) && !stderr.contains(key.as_str()),
            "a key leaked"
        );
    }
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["ok"], false);

    let cursor = checks(&report, "cursor");
    for check in ["command", "site", "key", "actor"] {
        assert_eq!(cursor[check], pass(), "cursor {check}: {report:#}");
    }
    assert_eq!(file(&report, "cursor")["entries"][0]["ok"], true);

    assert_eq!(
        status(&report, "claude-desktop", "key"),
        ("fail".into(), "ACTOR_API_KEY_INVALID".into())
    );
    let entry = &file(&report, "claude-desktop")["entries"][0];
    assert_eq!(entry["ok"], false);
    assert!(entry.to_string().contains("revoked"), "{entry}");
    assert_eq!(status(&report, "claude-desktop", "command"), pass());

    assert_eq!(
        status(&report, "windsurf", "key"),
        ("warn".into(), "KEY_EXPIRING".into())
    );
    assert_eq!(status(&report, "windsurf", "actor"), pass());

    assert_eq!(status(&report, "vscode", "key").0, "skip");
    assert_eq!(status(&report, "vscode", "actor").0, "skip");
    assert_eq!(file(&report, "vscode")["entries"][0]["ok"], true);

    assert_eq!(status(&report, "goose", "actor"), pass());

    assert_eq!(
        status(&report, "codex", "command"),
        ("fail".into(), "COMMAND_NOT_FOUND".into())
    );
    assert_eq!(status(&report, "codex", "site"), pass());

    assert_eq!(
        status(&report, "kiro", "site"),
        ("fail".into(), "SITE_NOT_FOUND".into())
    );
    assert_eq!(status(&report, "kiro", "command"), pass());

    assert_eq!(file(&report, "zed")["entries"], serde_json::json!([]));
    assert!(file(&report, "zed").get("error").is_none());
    assert!(file(&report, "gemini")["error"].is_string(), "{report:#}");

    // The plain report names every file and marks the failures.
    let out = in_home(&site, h)
        .args(["config", "doctor", "--project"])
        .arg(project.path())
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("FAIL key") || text.contains("FAIL key "),
        "{text}"
    );
    assert!(text.contains("Codex CLI (user)"), "{text}");
    assert!(text.contains("no Gatehouse entry"), "{text}");
}

#[test]
fn doctor_passes_when_every_entry_works() {
    let site = TestSite::plain("doctor_ok");
    let home = tempfile::tempdir().unwrap();
    let (key, _) = site.mint("viewer");
    install(&site, home.path(), &["cursor", "--api-key", &key]);
    install(&site, home.path(), &["codex", "--public"]);
    let out = run_in(&site, home.path(), &["config", "doctor", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report:#}");
    assert_eq!(report["files"].as_array().unwrap().len(), 2, "{report:#}");

    let empty = tempfile::tempdir().unwrap();
    let out = run_in(&site, empty.path(), &["config", "doctor"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("no MCP client configuration found"));
}

/// Continue reads every block file in `.continue/mcpServers/` whatever its
/// name, and the `mcpServers` list of `~/.continue/config.yaml`: the doctor
/// finds a Gatehouse entry in each, not only in the file `install` writes.
#[test]
fn doctor_finds_continue_entries_in_any_block_file_and_config_yaml() {
    let site = TestSite::plain("doctor_continue");
    let home = tempfile::tempdir().unwrap();
    install(
        &site,
        home.path(),
        &["continue", "--scope", "user", "--public"],
    );
    let installed = home.path().join(".continue/mcpServers/gatehouse.yaml");
    let block = std::fs::read_to_string(&installed).unwrap();
    std::fs::rename(&installed, installed.with_file_name("blog.yml")).unwrap();
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&block).unwrap();
    let servers = serde_yaml_ng::to_string(&serde_yaml_ng::Value::Mapping(
        [("mcpServers".into(), doc["mcpServers"].clone())]
            .into_iter()
            .collect(),
    ))
    .unwrap();
    write(
        &home.path().join(".continue/config.yaml"),
        &format!("name: my assistant\nversion: 1.0.0\nschema: v1\n{servers}"),
    );

    let out = run_in(&site, home.path(), &["config", "doctor", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let continue_files: Vec<&str> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["client"] == "continue")
        .map(|f| {
            assert_eq!(f["entries"].as_array().unwrap().len(), 1, "{f:#}");
            f["path"].as_str().unwrap()
        })
        .collect();
    assert_eq!(continue_files.len(), 2, "{report:#}");
    assert!(
        continue_files
            .iter()
            .any(|p| p.ends_with("mcpServers/blog.yml"))
    );
    assert!(
        continue_files
            .iter()
            .any(|p| p.ends_with(".continue/config.yaml"))
    );
    assert_eq!(report["ok"], true, "{report:#}");
}

/// A cloned project's own file names a site folder of the project whose
/// `database_url` points at a SQLite file of the user's: the doctor, a
/// check, had migrated that file into a Gatehouse database (and would have
/// created one where none was). It now leaves both as they were, and says
/// why the site was not opened.
#[test]
fn doctor_never_migrates_or_creates_a_database_a_project_names() {
    let site = TestSite::plain("doctor_foreign_db");
    let home = tempfile::tempdir().unwrap();
    let victim = home.path().join("victim/notes.db");
    std::fs::create_dir_all(victim.parent().unwrap()).unwrap();
    rusqlite::Connection::open(&victim)
        .unwrap()
        .execute_batch(
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('x');",
        )
        .unwrap();
    let before = std::fs::read(&victim).unwrap();
    let absent = home.path().join("victim/absent.db");
    let repo = home.path().join("repo");
    for (dir, db) in [("evil-site", &victim), ("absent-site", &absent)] {
        write(
            &repo.join(dir).join("gatehouse.toml"),
            &format!(
                "name = \"{dir}\"\ndatabase_url = \"sqlite://{}\"\n",
                db.display()
            ),
        );
    }
    write(
        &repo.join(".mcp.json"),
        r#"{"mcpServers": {
            "gatehouse": {"command": "gatehouse", "args": ["mcp", "--site", "evil-site", "--email", "a@b.example"]},
            "gatehouse-absent": {"command": "gatehouse", "args": ["mcp", "--site", "absent-site", "--email", "a@b.example"]}
        }}"#,
    );
    let out = in_home(&site, home.path())
        .current_dir(&repo)
        .args(["config", "doctor", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        before,
        "the user's file was changed"
    );
    assert!(!absent.exists(), "a database was created");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains("is not a Gatehouse database of this version"),
        "{report}"
    );
    assert!(report.contains("there is no database file at"), "{report}");
}
