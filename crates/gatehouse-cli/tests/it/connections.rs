//! `gatehouse connections`, `probe`, `call` against the fixture MCP server:
//! the real binary, a real site, real child processes.

use crate::util::{TestSite, fixture};

#[test]
fn add_list_probe_call_remove() {
    let site = TestSite::new("connections");
    let server = fixture("mcp_server.py");
    site.ok(&[
        "connections",
        "add",
        "echo",
        "--timeout",
        "20s",
        "--max-rss",
        "512MiB",
        "--",
        "python3",
        &server,
    ]);
    let taken = site.fails(&["connections", "add", "echo", "--", "python3", &server]);
    assert_eq!(taken.code, "CONNECTION_EXISTS");
    let list = site.ok_json(&["connections", "list", "--json"]);
    assert_eq!(list[0]["name"], "echo");
    assert_eq!(list[0]["limits"]["max_rss_bytes"], 512 << 20);

    let probe = site.ok_json(&["probe", "echo", "--json"]);
    assert_eq!(probe["server"]["name"], "gatehouse-fixture");
    assert_eq!(probe["server"]["protocol_version"], "2026-07-28");
    let tools: Vec<&str> = probe["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"echo"));
    assert_eq!(probe["stderr"]["bytes_seen"], 0);
    assert_eq!(
        probe["exit"]["code"], 0,
        "it exited by itself when stdin closed"
    );

    let call = site.ok_json(&[
        "call",
        "echo",
        "echo",
        "--args",
        r#"{"message":"hi there"}"#,
        "--json",
    ]);
    assert_eq!(call["state"], "completed");
    assert_eq!(call["result"]["content"][0]["text"], "hi there");
    let id = call["call_id"].as_str().unwrap();
    assert_eq!(
        site.sql(&format!(
            "SELECT state FROM mcp_calls WHERE call_id = '{id}'"
        ))
        .trim(),
        "completed"
    );
    assert_eq!(
        site.ok(&["call", "echo", "echo", "--args", r#"{"message":"plain"}"#]),
        "plain\n"
    );

    // A failed call exits non-zero with its error code, stdout clean.
    let crash = site.fails(&["call", "echo", "exit", "--args", r#"{"code":4}"#, "--json"]);
    assert_eq!(crash.code, "SERVER_EXITED");
    let exit_code = site.sql("SELECT exit_code FROM mcp_calls WHERE state = 'outcome_unknown'");
    assert_eq!(exit_code.trim(), "4");

    site.ok(&["connections", "remove", "echo"]);
    assert_eq!(site.fails(&["probe", "echo"]).code, "CONNECTION_NOT_FOUND");
    // Scratch directories live outside the site, and nothing is left in the site.
    assert!(!site.path().join("run/scratch").exists());
    let left: Vec<_> = std::fs::read_dir(site.scratch_dir()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn secrets_are_stored_by_name_only() {
    let site = TestSite::new("connections_secret");
    site.ok(&[
        "connections",
        "add",
        "s",
        "--secret",
        "API_TOKEN=GH_TEST_TOKEN",
        "--",
        "python3",
        &fixture("env_dump.py"),
    ]);
    let spec = site.sql("SELECT spec FROM mcp_connections WHERE name = 's'");
    assert!(
        spec.contains("secret_from_host") && spec.contains("GH_TEST_TOKEN"),
        "{spec}"
    );
}

/// `gatehouse tail` connects while the server is mid-way through its output:
/// what came before (from the kept tail) and what comes after (live) join up
/// with every line exactly once, in order, unfinished lines included.
#[test]
fn tail_shows_every_line_once_across_the_connect() {
    let site = TestSite::new("connections_tail");
    let n = 400;
    site.ok(&[
        "connections",
        "add",
        "chat",
        "--",
        "python3",
        &fixture("mcp_server.py"),
        "--chatter",
        &n.to_string(),
    ]);
    let out = site.ok(&["tail", "chat"]);
    let lines: Vec<&str> = out.lines().collect();
    let chatter: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("chatter"))
        .collect();
    let expected: Vec<String> = (0..n).map(|i| format!("chatter {i}")).collect();
    assert_eq!(chatter, expected, "{out}");
    assert!(!out.contains("[gatehouse: missed"), "{out}");
    assert!(
        lines
            .last()
            .is_some_and(|l| l.starts_with("[gatehouse: connection ended (end_of_input)")),
        "{out}"
    );
}

/// Connection changes and outbound calls are audited: who added or removed
/// which server (never a variable's value), and each call's dispatch and end.
#[test]
fn connection_changes_and_outbound_calls_are_audited() {
    let site = TestSite::new("connections_audited");
    let server = fixture("mcp_server.py");
    site.ok(&[
        "connections",
        "add",
        "echo",
        "--env",
        "MODE=plain-value-not-logged",
        "--",
        "python3",
        &server,
    ]);
    site.ok(&[
        "call",
        "echo",
        "echo",
        "--args",
        r#"{"message":"secret-ish text"}"#,
    ]);
    site.ok(&["connections", "remove", "echo"]);
    let log = site.ok_json(&["audit", "list", "--json"]);
    let text = log.to_string();
    assert!(!text.contains("plain-value-not-logged"), "{text}");
    assert!(!text.contains("secret-ish text"), "{text}");
    let actions: Vec<(String, String)> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_string(),
                e["subject"].as_str().unwrap().to_string(),
            )
        })
        .filter(|(a, _)| a.starts_with("connection.") || a == "mcp.client_call")
        .collect();
    let states: Vec<String> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "mcp.client_call")
        .map(|e| {
            let d: serde_json::Value = serde_json::from_str(e["detail"].as_str().unwrap()).unwrap();
            d["state"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("connection.add".into(), "echo".into()),
            // The first connect pins the server's tools (decision "Tool pinning").
            ("connection.tools_pinned".into(), "echo".into()),
            ("mcp.client_call".into(), "echo".into()),
            ("mcp.client_call".into(), "echo".into()),
            ("connection.remove".into(), "echo".into()),
        ],
        "{text}"
    );
    assert_eq!(states, ["dispatched", "completed"]);
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}
