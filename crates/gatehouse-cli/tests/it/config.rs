//! `gatehouse config` through the real binary: every client's output parses and
//! points at this binary and site, refusals keep stdout clean, and a generated
//! command line really starts `gatehouse mcp` as the chosen actor and answers
//! `initialize`.

use crate::util;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::util::{BIN, TestSite};
use serde_json::Value;

/// Every client, as `gatehouse config --help` lists them.
pub const CLIENTS: [&str; 17] = [
    "claude-desktop",
    "claude-code",
    "cursor",
    "vscode",
    "windsurf",
    "zed",
    "codex",
    "continue",
    "gemini",
    "cline",
    "roo-code",
    "jetbrains",
    "goose",
    "opencode",
    "kiro",
    "copilot",
    "lm-studio",
];

/// A document parsed by its format's own parser.
pub fn parse_doc(format: &str, text: &str) -> Value {
    match format {
        "json" => serde_json::from_str(text).unwrap(),
        "toml" => toml::from_str(text).unwrap(),
        "yaml" => serde_yaml_ng::from_str(text).unwrap(),
        other => panic!("unexpected format {other}"),
    }
}

/// The entry called `name` in a client's document, where that client's docs
/// put it (written out here, independently of core's table).
pub fn entry_in(client: &str, doc: &Value, name: &str) -> Value {
    match client {
        "vscode" => doc["servers"][name].clone(),
        "zed" => doc["context_servers"][name].clone(),
        "codex" => doc["mcp_servers"][name].clone(),
        "goose" => doc["extensions"][name.to_lowercase()].clone(),
        "opencode" => doc["mcp"][name].clone(),
        "continue" => doc["mcpServers"]
            .as_array()
            .and_then(|l| l.iter().find(|e| e["name"] == name))
            .cloned()
            .unwrap_or(Value::Null),
        _ => doc["mcpServers"][name].clone(),
    }
}

/// The server entry of a client's main snippet, parsed by the format's own parser.
fn entry(client: &str, format: &str, text: &str) -> Value {
    entry_in(client, &parse_doc(format, text), "gatehouse")
}

/// `(program, args)` of an entry: opencode's `command` is one array, Goose's
/// program is `cmd`.
pub fn program_and_args(client: &str, e: &Value) -> (String, Vec<String>) {
    match client {
        "opencode" => {
            let mut all = strings(&e["command"]);
            let program = all.remove(0);
            (program, all)
        }
        "goose" => (e["cmd"].as_str().unwrap().to_string(), strings(&e["args"])),
        _ => (
            e["command"].as_str().unwrap().to_string(),
            strings(&e["args"]),
        ),
    }
}

/// The env block of an entry under the client's own key.
pub fn env_of(client: &str, e: &Value) -> BTreeMap<String, String> {
    let key = match client {
        "opencode" => "environment",
        "goose" => "envs",
        _ => "env",
    };
    e.get(key)
        .filter(|v| !v.is_null())
        .map(|v| serde_json::from_value(v.clone()).unwrap())
        .unwrap_or_default()
}

pub fn strings(v: &Value) -> Vec<String> {
    serde_json::from_value(v.clone()).unwrap()
}

/// `path` resolved, as a client config names it: Windows' canonical form starts
/// with the verbatim prefix `\\?\`, which configs leave out (clients cannot
/// start such a command).
fn resolved(path: &Path) -> std::path::PathBuf {
    let canonical = path.canonicalize().unwrap();
    match canonical.to_str().and_then(|s| s.strip_prefix(r"\\?\")) {
        Some(plain) if cfg!(windows) => plain.into(),
        _ => canonical,
    }
}

#[test]
fn every_client_config_points_at_this_binary_and_site() {
    let site = TestSite::plain("config_clients");
    let bin = resolved(Path::new(BIN));
    let dir = resolved(site.path());
    for client in CLIENTS {
        let out = site.ok_json(&["config", "--client", client, "--json"]);
        assert_eq!(out["client"], client);
        let main = &out["snippets"][0];
        let e = entry(
            client,
            main["format"].as_str().unwrap(),
            main["text"].as_str().unwrap(),
        );
        let (command, args) = program_and_args(client, &e);
        assert_eq!(Path::new(&command), bin, "{client}");
        assert!(
            Path::new(&command).is_file(),
            "{client}: {command} does not exist"
        );
        assert_eq!(args, ["mcp", "--site", dir.to_str().unwrap()], "{client}");
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

/// What a client would run from the generated config: its command and args,
/// with exactly its env block (references resolved the way the client resolves
/// them) and nothing else inherited.
fn client_command(client: &str, site: &TestSite, flags: &[&str], key: Option<&str>) -> Command {
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

    let mut env = env_of(client, &e);
    for value in env.values_mut() {
        // What each client substitutes at spawn time.
        for reference in [
            "${GATEHOUSE_API_KEY}",
            "${env:GATEHOUSE_API_KEY}",
            "{env:GATEHOUSE_API_KEY}",
            "${input:gatehouse-api-key}",
            "${{ secrets.GATEHOUSE_API_KEY }}",
        ] {
            if value == reference {
                *value = key.expect("a reference needs a key").to_string();
            }
        }
    }
    // Codex and Goose name the variable they forward instead of a value.
    for forward in ["env_vars", "env_keys"] {
        if let Some(names) = e.get(forward) {
            assert_eq!(strings(names), ["GATEHOUSE_API_KEY"], "{client}");
            env.insert("GATEHOUSE_API_KEY".into(), key.unwrap().to_string());
        }
    }
    let (program, args) = program_and_args(client, &e);
    assert_eq!(args[0], "mcp");
    let mut cmd = Command::new(program);
    cmd.args(&args)
        .env_clear()
        .envs(&env)
        .current_dir(std::env::temp_dir());
    cmd
}

/// Runs the generated command line with `whoami --json` in place of `mcp`
/// (same binary, site, actor flags and env), to see which actor it resolves to.
fn run_as_client(client: &str, site: &TestSite, flags: &[&str], key: Option<&str>) -> Value {
    let cmd = client_command(client, site, flags, key);
    let mut args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    args.splice(0..1, ["whoami".to_string(), "--json".to_string()]);
    let envs: Vec<(std::ffi::OsString, std::ffi::OsString)> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
        .collect();
    let run = || {
        Command::new(cmd.get_program())
            .args(&args)
            .env_clear()
            .envs(envs.clone())
            .current_dir(std::env::temp_dir())
            .output()
    };
    // Under Wine, process creation once failed with ERROR_INTERNAL_ERROR
    // (1359) before the program ran; that, and only that, is tried again.
    let out = match run() {
        Err(e) if cfg!(windows) && e.raw_os_error() == Some(1359) => run(),
        other => other,
    }
    .unwrap();
    assert!(
        out.status.success(),
        "{client} {flags:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Starts the generated command line as the client would and sends `initialize`.
fn initialize_as_client(client: &str, site: &TestSite, flags: &[&str], key: Option<&str>) -> Value {
    use std::io::{BufRead, Write};
    let mut child = client_command(client, site, flags, key)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"{client}","version":"1"}}}}}}"#
    )
    .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "{client}: the server did not exit cleanly on stdin close"
    );
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{client}: not JSON ({e}): {line:?}"))
}

#[test]
fn every_generated_command_line_starts_a_server_that_answers_initialize() {
    let site = TestSite::new("config_initialize");
    let (key, _) = site.mint("viewer");
    for client in CLIENTS {
        let answer = initialize_as_client(client, &site, &["--api-key", &key], None);
        assert_eq!(answer["id"], 1, "{client}: {answer}");
        assert_eq!(
            answer["result"]["serverInfo"]["name"], "gatehouse",
            "{client}: {answer}"
        );
        assert_eq!(
            answer["result"]["protocolVersion"], "2025-06-18",
            "{client}"
        );
    }
    // By reference too, wherever the client has a way to reference the key.
    for client in CLIENTS {
        if matches!(client, "claude-desktop" | "zed" | "jetbrains" | "lm-studio") {
            continue;
        }
        let answer = initialize_as_client(client, &site, &["--secret-ref"], Some(&key));
        assert_eq!(
            answer["result"]["serverInfo"]["name"], "gatehouse",
            "{client} by reference: {answer}"
        );
    }
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
        "gemini",
        "cline",
        "roo-code",
        "goose",
        "opencode",
        "kiro",
        "copilot",
    ] {
        let who = run_as_client(client, &site, &["--secret-ref"], Some(&key));
        assert_eq!(who["key_id"], id.as_str(), "{client} by reference");
    }
}
