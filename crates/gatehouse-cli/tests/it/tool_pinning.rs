//! Tool pinning (docs/decisions.md) through the binary, against `pin_server.py`
//! whose tool list is chosen by `PIN_VARIANT` (passed through from the
//! environment of each `gatehouse` run) and which can announce a change
//! mid-session (`PIN_LIST_CHANGED`).

use serde_json::Value;

use crate::util::{TestSite, failure, fixture};

/// Adds `pin` whose variant comes from the host's PIN_VARIANT at each connect.
fn add_pin_server(site: &TestSite, name: &str, list_changed: Option<&str>) {
    let mut args = vec![
        "connections".to_string(),
        "add".into(),
        name.into(),
        "--env-from-host".into(),
        "PIN_VARIANT".into(),
    ];
    if let Some(mode) = list_changed {
        args.push("--env".into());
        args.push(format!("PIN_LIST_CHANGED={mode}"));
    }
    args.extend(["--".into(), "python3".into(), fixture("pin_server.py")]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    site.ok(&args);
}

fn run_with(site: &TestSite, variant: &str, args: &[&str]) -> std::process::Output {
    site.command()
        .env("PIN_VARIANT", variant)
        .args(args)
        .output()
        .unwrap()
}

fn ok_json_with(site: &TestSite, variant: &str, args: &[&str]) -> Value {
    let out = run_with(site, variant, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn audit_actions(site: &TestSite) -> Vec<String> {
    site.ok_json(&["audit", "list", "--limit", "1000", "--json"])
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap().to_string())
        .filter(|a| a.starts_with("connection.tools_"))
        .collect()
}

#[test]
fn changed_tool_list_is_refused_with_a_diff_until_approved() {
    let site = TestSite::new("pin_rug_pull");
    add_pin_server(&site, "notes", None);
    // First connect pins the list.
    let probe = ok_json_with(&site, "a", &["probe", "notes", "--json"]);
    assert_eq!(probe["pin"]["tools"], 2);
    assert!(probe["pin"]["pending"].is_null());
    let call = ok_json_with(
        &site,
        "a",
        &[
            "call",
            "notes",
            "echo",
            "--args",
            r#"{"message":"hi"}"#,
            "--json",
        ],
    );
    assert_eq!(call["state"], "completed");

    // The server now offers another list: refused, with the diff.
    let out = run_with(
        &site,
        "b",
        &[
            "call",
            "notes",
            "echo",
            "--args",
            r#"{"message":"hi"}"#,
            "--json",
        ],
    );
    let f = failure(out, &["call"]);
    assert_eq!(f.code, "CONNECTION_TOOLS_CHANGED", "{}", f.stderr);
    let err: Value = serde_json::from_str(f.stderr.lines().last().unwrap()).unwrap();
    let diff = &err["error"]["detail"]["diff"];
    assert_eq!(diff["added"][0]["name"], "exfiltrate", "{err}");
    assert_eq!(diff["removed"][0], "read_notes", "{err}");
    let changed = &diff["changed"][0];
    assert_eq!(changed["name"], "echo");
    assert_eq!(changed["changes"][0]["field"], "description");
    assert_eq!(changed["changes"][0]["before"], "Echoes a message.");
    assert!(
        changed["changes"][0]["after"]
            .as_str()
            .unwrap()
            .contains("id_ed25519")
    );
    assert_eq!(changed["changes"][1]["field"], "input_schema");
    // Text output names the differences too.
    let text = failure(run_with(&site, "b", &["probe", "notes"]), &["probe"]);
    assert!(
        text.stderr.contains("+ added exfiltrate"),
        "{}",
        text.stderr
    );
    assert!(
        text.stderr.contains("- removed read_notes"),
        "{}",
        text.stderr
    );
    assert!(
        text.stderr.contains("connections approve notes"),
        "{}",
        text.stderr
    );
    // No call reached the server while held.
    assert_eq!(
        site.sql("SELECT count(*) FROM mcp_calls WHERE state = 'completed'"),
        "1"
    );
    // Even the old list is refused while the change waits: the hold is sticky.
    let f = failure(run_with(&site, "a", &["probe", "notes"]), &["probe"]);
    assert_eq!(f.code, "CONNECTION_TOOLS_CHANGED");
    let show = site.ok_json(&["connections", "show", "notes", "--json"]);
    assert_eq!(show["pin"]["pending"], "changed", "{show}");

    // The admin approves what the refusal showed; the new list then works.
    let approval = site.ok_json(&["connections", "approve", "notes", "--json"]);
    assert_eq!(approval["diff"]["added"][0]["name"], "exfiltrate");
    let call = ok_json_with(
        &site,
        "b",
        &[
            "call",
            "notes",
            "echo",
            "--args",
            r#"{"message":"again"}"#,
            "--json",
        ],
    );
    assert_eq!(call["state"], "completed");
    // Going back is a change as well.
    let f = failure(run_with(&site, "a", &["probe", "notes"]), &["probe"]);
    assert_eq!(f.code, "CONNECTION_TOOLS_CHANGED");
    assert_eq!(
        site.fails(&["connections", "approve", "nosuch"]).code,
        "CONNECTION_NOT_FOUND"
    );
    site.ok(&["connections", "approve", "notes"]);
    assert_eq!(
        site.fails(&["connections", "approve", "notes"]).code,
        "CONNECTION_NOTHING_TO_APPROVE"
    );

    assert_eq!(
        audit_actions(&site),
        [
            "connection.tools_pinned",
            "connection.tools_changed",
            "connection.tools_approved",
            "connection.tools_changed",
            "connection.tools_approved",
        ]
    );
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}

#[test]
fn reordered_tools_and_keys_are_not_a_change() {
    // The same list is the same whatever order a server writes it in: a
    // second connect with the same variant passes and pins nothing new.
    let site = TestSite::new("pin_same");
    add_pin_server(&site, "notes", None);
    let first = ok_json_with(&site, "a", &["probe", "notes", "--json"]);
    let second = ok_json_with(&site, "a", &["probe", "notes", "--json"]);
    assert_eq!(first["pin"]["tools_sha256"], second["pin"]["tools_sha256"]);
    assert_eq!(audit_actions(&site), ["connection.tools_pinned"]);
}

#[test]
fn list_changed_mid_session_puts_the_connection_on_hold() {
    let site = TestSite::new("pin_list_changed");
    // Announces the change right after listing its tools: the call is refused.
    add_pin_server(&site, "early", Some("list"));
    let out = run_with(
        &site,
        "a",
        &[
            "call",
            "early",
            "echo",
            "--args",
            r#"{"message":"hi"}"#,
            "--json",
        ],
    );
    let f = failure(out, &["call"]);
    assert_eq!(f.code, "CONNECTION_TOOLS_CHANGED", "{}", f.stderr);
    assert!(
        f.stderr.contains("exfiltrate"),
        "the hold names the new list: {}",
        f.stderr
    );
    assert_eq!(
        site.sql("SELECT count(*) FROM mcp_calls WHERE state = 'completed'"),
        "0",
        "no call may reach a held server"
    );

    // Announces it while answering the first call: that call completes, the
    // hold then stands for the next connects until approved.
    add_pin_server(&site, "late", Some("call"));
    let call = ok_json_with(
        &site,
        "a",
        &[
            "call",
            "late",
            "echo",
            "--args",
            r#"{"message":"hi"}"#,
            "--json",
        ],
    );
    assert_eq!(call["state"], "completed");
    let f = failure(
        run_with(
            &site,
            "a",
            &["call", "late", "echo", "--args", r#"{"message":"x"}"#],
        ),
        &["call"],
    );
    assert_eq!(f.code, "CONNECTION_TOOLS_CHANGED");
    let show = site.ok_json(&["connections", "show", "late", "--json"]);
    assert_eq!(show["pin"]["pending"], "list_changed", "{show}");
    let approval = site.ok_json(&["connections", "approve", "late", "--json"]);
    assert_eq!(approval["reason"], "list_changed");
    assert_eq!(approval["diff"]["added"][0]["name"], "exfiltrate");
    // Approved: variant b (what the server moved to) is now the pin.
    let call = ok_json_with(
        &site,
        "b",
        &[
            "call",
            "late",
            "echo",
            "--args",
            r#"{"message":"ok"}"#,
            "--json",
        ],
    );
    assert_eq!(call["state"], "completed");
    let actions = audit_actions(&site);
    assert!(
        actions.contains(&"connection.tools_held".to_string()),
        "{actions:?}"
    );
    assert!(
        actions.contains(&"connection.tools_approved".to_string()),
        "{actions:?}"
    );
}

/// A change announced right after a call's answer, as the session ends: the
/// hold is recorded by that session, with its audit entry (it was missed,
/// and the next connect found the new list without the announcement).
#[test]
fn a_list_change_announced_right_after_the_answer_is_held_by_that_session() {
    let site = TestSite::new("pin_after_answer");
    add_pin_server(&site, "after", Some("after"));
    for _ in 0..3 {
        let call = ok_json_with(
            &site,
            "a",
            &[
                "call",
                "after",
                "echo",
                "--args",
                r#"{"message":"hi"}"#,
                "--json",
            ],
        );
        assert_eq!(call["state"], "completed");
        assert_eq!(call["held"]["code"], "CONNECTION_TOOLS_CHANGED", "{call}");
        let show = site.ok_json(&["connections", "show", "after", "--json"]);
        assert_eq!(show["pin"]["pending"], "list_changed", "{show}");
        let held = site.ok_json(&["connections", "approve", "after", "--json"]);
        assert_eq!(held["diff"]["added"][0]["name"], "exfiltrate", "{held}");
        // Back to variant a's pin for the next round.
        site.ok(&["connections", "remove", "after"]);
        add_pin_server(&site, "after", Some("after"));
    }
    let held = audit_actions(&site)
        .iter()
        .filter(|a| *a == "connection.tools_held")
        .count();
    assert_eq!(held, 3);
}

#[test]
fn removing_a_connection_drops_its_pin() {
    let site = TestSite::new("pin_remove");
    add_pin_server(&site, "notes", None);
    ok_json_with(&site, "a", &["probe", "notes", "--json"]);
    site.ok(&["connections", "remove", "notes"]);
    assert_eq!(site.sql("SELECT count(*) FROM mcp_tool_pins"), "0");
    add_pin_server(&site, "notes", None);
    let probe = ok_json_with(&site, "b", &["probe", "notes", "--json"]);
    assert_eq!(probe["pin"]["tools"], 2);
}

/// A server given a secret can put it in what it says at connect (its name,
/// instructions, a tool's description): none of it reaches the pin, the
/// audit log or the CLI's output. The changed description had gone into the
/// hash-chained `connection.tools_changed` entry, where no one can take it out.
#[test]
fn a_secret_in_a_servers_tool_list_or_identity_is_redacted_from_pin_audit_and_output() {
    const SECRET: &str = "pin-s3cr3t-5e8d1c";
    let site = TestSite::new("pin_secret");
    site.ok(&[
        "connections",
        "add",
        "notes",
        "--env-from-host",
        "PIN_VARIANT",
        "--secret",
        "PIN_TOKEN=GATEHOUSE_TEST_PIN_TOKEN",
        "--",
        "python3",
        &fixture("pin_server.py"),
    ]);
    let run = |variant: &str, args: &[&str]| {
        site.command()
            .env("PIN_VARIANT", variant)
            .env("GATEHOUSE_TEST_PIN_TOKEN", SECRET)
            .args(args)
            .output()
            .unwrap()
    };
    let first = run("a", &["probe", "notes", "--json"]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let mut shown = Vec::new();
    for args in [&["probe", "notes", "--json"][..], &["probe", "notes"][..]] {
        let out = run("secret", args);
        assert!(!out.status.success(), "a changed list was accepted");
        shown.push(String::from_utf8_lossy(&out.stdout).into_owned());
        shown.push(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    assert!(
        shown.iter().any(|s| s.contains("<redacted>")),
        "the change is not shown: {shown:?}"
    );
    shown.push(site.ok(&["audit", "list", "--limit", "1000", "--json"]));
    shown.push(site.sql("SELECT COALESCE(pending_tools, '') || tools FROM mcp_tool_pins"));
    for text in &shown {
        assert!(
            !text.contains(SECRET),
            "the secret was shown or stored: {text}"
        );
    }
}

/// A server listing more tools than any real one (1,001 over two pages) is
/// refused at connect, and nothing of its list is pinned or audited: an
/// endless list (three million tools over eight pages) had taken the host
/// to 4 GB and put every name in the audit log.
#[test]
fn a_tool_list_past_the_cap_fails_the_connect_and_pins_nothing() {
    let site = TestSite::new("pin_many");
    add_pin_server(&site, "many", None);
    let f = failure(
        run_with(&site, "many", &["probe", "many", "--json"]),
        &["probe"],
    );
    assert_eq!(f.code, "PROTOCOL_VIOLATION", "{}", f.stderr);
    assert!(f.stderr.contains("1000 tools"), "{}", f.stderr);
    assert!(
        audit_actions(&site).is_empty(),
        "{:?}",
        audit_actions(&site)
    );
    assert_eq!(site.sql("SELECT COUNT(*) FROM mcp_tool_pins").trim(), "0");
}

/// A tool name holding a bidirectional control (it reads as another name:
/// `read_\u{202e}seton` shows as "read_notes") is refused at connect, not
/// pinned and shown.
#[test]
fn a_tool_name_with_a_bidirectional_control_fails_the_connect() {
    let site = TestSite::new("pin_bidi");
    add_pin_server(&site, "bidi", None);
    let f = failure(
        run_with(&site, "bidi", &["probe", "bidi", "--json"]),
        &["probe"],
    );
    assert_eq!(f.code, "PROTOCOL_VIOLATION", "{}", f.stderr);
    assert!(f.stderr.contains("u202eseton"), "{}", f.stderr);
    assert_eq!(site.sql("SELECT COUNT(*) FROM mcp_tool_pins").trim(), "0");
}

/// Every refusal of a change already on hold shows the list approval pins:
/// the diff had been made from the list offered at that moment, so a
/// refusal showed a harmless rewording while approval pinned the earlier
/// list with a new tool. Approval says what it pinned.
#[test]
fn a_refusal_shows_the_list_approval_pins_and_approval_says_so() {
    let site = TestSite::new("pin_shown_is_pinned");
    add_pin_server(&site, "p", None);
    ok_json_with(&site, "a", &["probe", "p", "--json"]);
    let f = failure(run_with(&site, "b", &["probe", "p"]), &["probe"]);
    assert!(f.stderr.contains("+ added exfiltrate"), "{}", f.stderr);
    // The server moves on to a harmless change: the refusal still shows
    // what is on hold, and says another list is offered now.
    let f = failure(run_with(&site, "c", &["probe", "p"]), &["probe"]);
    assert_eq!(f.code, "CONNECTION_TOOLS_CHANGED");
    assert!(f.stderr.contains("+ added exfiltrate"), "{}", f.stderr);
    assert!(f.stderr.contains("yet another list"), "{}", f.stderr);
    assert!(!f.stderr.contains("Celsius"), "{}", f.stderr);
    let approved = site.ok(&["connections", "approve", "p"]);
    assert!(approved.contains("+ added exfiltrate"), "{approved}");
}

/// A hold whose new list could not be read (the server answers `tools/list`
/// with an error after announcing a change) approved nothing visible: it
/// had deleted the pin, and the next connect pinned whatever came, unseen.
/// The old pin now stays, and the next connect's list is checked against it.
#[test]
fn approving_a_hold_with_no_readable_list_keeps_the_old_pin() {
    let site = TestSite::new("pin_unreadable_hold");
    add_pin_server(&site, "u", Some("unreadable"));
    ok_json_with(
        &site,
        "a",
        &[
            "call",
            "u",
            "echo",
            "--args",
            r#"{"message":"hi"}"#,
            "--json",
        ],
    );
    let f = failure(
        run_with(
            &site,
            "a",
            &["call", "u", "echo", "--args", r#"{"message":"x"}"#],
        ),
        &["call"],
    );
    assert_eq!(f.code, "CONNECTION_TOOLS_CHANGED", "{}", f.stderr);
    let approved = site.ok(&["connections", "approve", "u"]);
    assert!(approved.contains("the old pin stays"), "{approved}");
    let f = failure(
        run_with(&site, "b", &["call", "u", "exfiltrate", "--args", "{}"]),
        &["call"],
    );
    assert_eq!(f.code, "CONNECTION_TOOLS_CHANGED", "{}", f.stderr);
    assert!(f.stderr.contains("+ added exfiltrate"), "{}", f.stderr);
}

/// A tool list naming a tool twice is refused whole and pins nothing: the
/// diff (by name) kept the last of the two, so a harmful rewrite listed
/// first was approved as an empty change and then served.
#[test]
fn a_tool_list_naming_a_tool_twice_is_refused_and_pins_nothing() {
    let site = TestSite::new("pin_duplicate");
    add_pin_server(&site, "d", None);
    let f = failure(run_with(&site, "dup", &["probe", "d"]), &["probe"]);
    assert_eq!(f.code, "PROTOCOL_VIOLATION", "{}", f.stderr);
    assert!(f.stderr.contains("twice"), "{}", f.stderr);
    let show = site.ok_json(&["connections", "show", "d", "--json"]);
    assert!(show["pin"].is_null(), "{show}");
    // Pinned first, the same list later is refused too, never compared.
    ok_json_with(&site, "a", &["probe", "d", "--json"]);
    let f = failure(run_with(&site, "dup", &["probe", "d"]), &["probe"]);
    assert_eq!(f.code, "PROTOCOL_VIOLATION", "{}", f.stderr);
}

/// A newline in a tool's description is shown escaped in the diff: it had
/// printed a forged line of the diff itself.
#[test]
fn a_newline_in_a_description_cannot_forge_a_diff_line() {
    let d = gatehouse_core::connections::pin::diff::ToolsDiff {
        added: vec![gatehouse_core::connections::pin::diff::PinnedTool {
            name: "x".into(),
            title: None,
            description: Some("ok\n~ changed run description: \"a\" -> \"a\"".into()),
            input_schema: Value::Null,
            annotations: Value::Null,
        }],
        ..Default::default()
    };
    assert_eq!(d.summary().lines().count(), 1, "{}", d.summary());
}
