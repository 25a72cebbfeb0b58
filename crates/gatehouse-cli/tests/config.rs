//! `gatehouse config` through the real binary: every client's output parses and
//! points at this binary and site, refusals keep stdout clean, and a generated
//! command line really starts `gatehouse` as the chosen actor.

mod util;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use util::{BIN, TestSite};

const CLIENTS: [&str; 8] = [
    "claude-desktop",
    "claude-code",
    "cursor",
    "vscode",
    "windsurf",
    "zed",
    "codex",
    "continue",
];

/// The server entry of a client's main snippet, parsed by the format's own parser.
fn entry(client: &str, format: &str, text: &str) -> Value {
    let doc: Value = match format {
        "json" => serde_json::from_str(text).unwrap(),
        "toml" => toml::from_str(text).unwrap(),
        "yaml" => serde_yaml_ng::from_str(text).unwrap(),
        other => panic!("unexpected format {other}"),
    };
    match client {
        "vscode" => doc["servers"]["gatehouse"].clone(),
        "zed" => doc["context_servers"]["gatehouse"].clone(),
        "codex" => doc["mcp_servers"]["gatehouse"].clone(),
        "continue" => doc["mcpServers"][0].clone(),
        _ => doc["mcpServers"]["gatehouse"].clone(),
    }
}

fn strings(v: &Value) -> Vec<String> {
    serde_json::from_value(v.clone()).unwrap()
}

#[test]
fn every_client_config_points_at_this_binary_and_site() {
    let site = TestSite::plain("config_clients");
    let bin = Path::new(BIN).canonicalize().unwrap();
    let dir = site.path().canonicalize().unwrap();
    for client in CLIENTS {
        let out = site.ok_json(&["config", "--client", client, "--json"]);
        assert_eq!(out["client"], client);
        let main = &out["snippets"][0];
        let e = entry(
            client,
            main["format"].as_str().unwrap(),
            main["text"].as_str().unwrap(),
        );
        let command = e["command"].as_str().unwrap();
        assert_eq!(Path::new(command), bin, "{client}");
        assert!(
            Path::new(command).is_file(),
            "{client}: {command} does not exist"
        );
        assert_eq!(
            strings(&e["args"]),
            ["mcp", "--site", dir.to_str().unwrap()],
            "{client}"
        );
    }
}

#[test]
fn plain_output_is_paste_ready_and_notes_never_hold_the_key() {
    let site = TestSite::plain("config_plain");
    let (key, _id) = site.mint("viewer");
    let out = site
        .command()
        .args(["config", "--client", "claude-code"])
        .env("GATEHOUSE_API_KEY", &key)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let e = entry("claude-code", "json", &stdout);
    assert_eq!(e["env"]["GATEHOUSE_API_KEY"], key.as_str());
    assert!(strings(&e["args"]).iter().all(|a| !a.contains(&key)));
    assert!(stderr.contains("claude mcp add gatehouse"), "{stderr}");
    assert!(!stderr.contains(&key), "the key leaked to stderr");
}

#[test]
fn refusals_have_codes_and_a_clean_stdout() {
    let site = TestSite::plain("config_refusals");
    let f = site.fails(&["config", "--client", "emacs"]);
    assert_eq!(f.code, "CLIENT_UNKNOWN");
    assert!(f.stderr.contains("claude-desktop") && f.stderr.contains("continue"));

    let f = site.fails(&["config", "--client", "zed", "--secret-ref"]);
    assert_eq!(f.code, "CONFIG_SECRET_REF_UNSUPPORTED");

    let f = site.fails(&["config", "--client", "cursor", "--role", "viewer"]);
    assert_eq!(f.code, "ACTOR_ROLE_NOT_SCRATCH");

    let f = site.fails(&[
        "config",
        "--client",
        "cursor",
        "--api-key",
        "gatehouse_sk_nope",
    ]);
    assert_eq!(f.code, "ACTOR_API_KEY_INVALID");

    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .arg("--site")
        .arg(empty.path())
        .args(["config", "--client", "cursor"])
        .env_remove("GATEHOUSE_API_KEY")
        .output()
        .unwrap();
    assert_eq!(util::failure(out, &["config"]).code, "SITE_NOT_FOUND");
}

/// Runs what a client would run from the generated config: its command and args,
/// with exactly its env block (references resolved the way the client resolves
/// them) and nothing else inherited.
///
/// `gatehouse mcp` is not on main yet, so the first argument `mcp` is swapped
/// for `whoami --json`: same binary, same `--site`, same actor flags, same env.
/// That proves the path, site and key delivery; once `mcp` exists this should
/// become an `initialize` round trip.
fn run_as_client(client: &str, site: &TestSite, flags: &[&str], key: Option<&str>) -> Value {
    let mut argv = vec!["config", "--client", client, "--json"];
    argv.extend_from_slice(flags);
    let mut cmd = site.command();
    cmd.args(&argv);
    if let Some(key) = key {
        cmd.env("GATEHOUSE_API_KEY", key);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let generated: Value = serde_json::from_slice(&out.stdout).unwrap();
    let main = &generated["snippets"][0];
    let e = entry(
        client,
        main["format"].as_str().unwrap(),
        main["text"].as_str().unwrap(),
    );

    let mut env: BTreeMap<String, String> = e
        .get("env")
        .map(|v| serde_json::from_value(v.clone()).unwrap())
        .unwrap_or_default();
    for value in env.values_mut() {
        // What each client substitutes at spawn time.
        for reference in [
            "${GATEHOUSE_API_KEY}",
            "${env:GATEHOUSE_API_KEY}",
            "${input:gatehouse-api-key}",
            "${{ secrets.GATEHOUSE_API_KEY }}",
        ] {
            if value == reference {
                *value = key.expect("a reference needs a key").to_string();
            }
        }
    }
    if e.get("env_vars").is_some() {
        env.insert("GATEHOUSE_API_KEY".into(), key.unwrap().to_string());
    }

    let mut args = strings(&e["args"]);
    assert_eq!(args[0], "mcp");
    args.splice(0..1, ["whoami".to_string(), "--json".to_string()]);
    let out = Command::new(e["command"].as_str().unwrap())
        .args(&args)
        .env_clear()
        .envs(&env)
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{client} {flags:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn generated_command_line_starts_gatehouse_as_the_chosen_actor() {
    let site = TestSite::new("config_actor");
    site.ok(&[
        "users",
        "create",
        "--email",
        "ed@example.org",
        "--roles",
        "editor",
    ]);
    let (key, id) = site.mint("author");

    let who = run_as_client("claude-desktop", &site, &["--public"], None);
    assert_eq!(who["kind"], "public");

    let who = run_as_client("zed", &site, &["--email", "ed@example.org"], None);
    assert_eq!(who["email"], "ed@example.org");

    let who = run_as_client("continue", &site, &["--role", "viewer"], None);
    assert_eq!(who["kind"], "synthetic");
    assert_eq!(who["roles"], serde_json::json!(["viewer"]));

    for client in ["cursor", "codex", "vscode"] {
        let who = run_as_client(client, &site, &["--api-key", &key], None);
        assert_eq!(who["key_id"], id.as_str(), "{client} inline");
    }
    for client in [
        "claude-code",
        "cursor",
        "vscode",
        "windsurf",
        "codex",
        "continue",
    ] {
        let who = run_as_client(client, &site, &["--secret-ref"], Some(&key));
        assert_eq!(who["key_id"], id.as_str(), "{client} by reference");
    }
}
