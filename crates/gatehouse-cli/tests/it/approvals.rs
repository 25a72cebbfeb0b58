//! Held calls: the policy in gatehouse.toml, decided by the client's user
//! (elicitation) and by the owner's queue (`gatehouse approvals`), through
//! the official Python SDK client against the real server; every decision in
//! the audit chain.

use serde_json::Value;

use crate::sdk::SdkClient;
use crate::util::TestSite;

fn mint(site: &TestSite, flags: &[&str]) -> (String, String) {
    let mut args = vec!["keys", "mint", "--label", "held", "--roles", "editor"];
    args.extend_from_slice(flags);
    args.push("--json");
    let v = site.ok_json(&args);
    (
        v["key"].as_str().unwrap().to_string(),
        v["id"].as_str().unwrap().to_string(),
    )
}

#[test]
fn approval_policy_refuses_unknown_effects_at_start() {
    let site = TestSite::new("approvals_bad_policy");
    let toml = site.path().join("gatehouse.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        format!("{text}\n[approvals]\neffects = [\"publsh\"]\n"),
    )
    .unwrap();
    let f = site.fails(&["approvals", "list"]);
    assert_eq!(f.code, "SITE_CONFIG_INVALID", "{}", f.stderr);
    assert!(f.stderr.contains("publsh"), "{}", f.stderr);
}

#[test]
fn key_approve_list_is_checked_shown_and_cleared() {
    let site = TestSite::new("approvals_key_flag");
    let f = site.fails(&[
        "keys",
        "mint",
        "--label",
        "x",
        "--roles",
        "editor",
        "--approve",
        "publsh",
    ]);
    assert_eq!(f.code, "KEY_RESTRICTION_INVALID", "{}", f.stderr);
    let (_, id) = mint(&site, &["--approve", "publish,media_write"]);
    let v = site.ok_json(&["keys", "restrict", &id, "--tools", "content_read", "--json"]);
    assert_eq!(
        v["restrictions"]["approve"],
        serde_json::json!(["publish", "media_write"])
    );
    assert!(
        v["reach"]["words"].as_array().unwrap().iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("waits for a person's yes: publish, media_write")),
        "{v}"
    );
    let v = site.ok_json(&["keys", "restrict", &id, "--clear", "approve", "--json"]);
    assert!(v["restrictions"].get("approve").is_none(), "{v}");
}

#[test]
fn unknown_held_call_is_not_found() {
    let site = TestSite::new("approvals_unknown");
    for cmd in ["approve", "deny"] {
        let f = site.fails(&["approvals", cmd, "hold_nothing"]);
        assert_eq!(f.code, "APPROVAL_NOT_FOUND", "{}", f.stderr);
    }
    assert_eq!(
        site.ok(&["approvals", "list"]).trim(),
        "no calls are waiting for a decision"
    );
}

#[test]
fn python_sdk_calls_wait_for_the_clients_user_and_the_owners_queue() {
    let site = TestSite::new("approvals_py");
    let Some(client) = SdkClient::python("python_approvals.py", &site) else {
        return;
    };
    let other = TestSite::new("approvals_py_other");
    let (editor_key, editor_id) = mint(&site, &[]);
    let (approve_key, approve_id) = mint(&site, &["--approve", "write"]);
    client
        .arg(other.path())
        .env("GATEHOUSE_SCRATCH_DIR", site.scratch_dir())
        .env("INTEROP_EDITOR_KEY", editor_key)
        .env("INTEROP_EDITOR_ID", &editor_id)
        .env("INTEROP_APPROVE_KEY", approve_key)
        .env("INTEROP_APPROVE_ID", &approve_id)
        .run();
    // Every ask and every end is in the chain, with who decided, and the chain holds.
    let log = site.ok_json(&["audit", "list", "--limit", "5000", "--json"]);
    let entries: Vec<(String, String, Value)> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"].as_str().unwrap().starts_with("approval."))
        .map(|e| {
            let d = match &e["detail"] {
                Value::String(s) => serde_json::from_str(s).unwrap(),
                other => other.clone(),
            };
            (
                e["action"].as_str().unwrap().to_string(),
                e["actor"].as_str().unwrap().to_string(),
                d,
            )
        })
        .collect();
    let count = |action: &str, actor: &str| {
        entries
            .iter()
            .filter(|(a, who, _)| a == action && who == actor)
            .count()
    };
    let editor = format!("key:{editor_id}");
    let asked_user = format!("{editor} (client's user)");
    // The client's user: by elicitation/create (handshake revisions) and by
    // the input_required round trip (2026-07-28).
    assert_eq!(count("approval.approved", &asked_user), 3, "{entries:?}");
    assert_eq!(count("approval.declined", &asked_user), 2, "{entries:?}");
    assert_eq!(count("approval.approved", "cli"), 2, "{entries:?}");
    assert_eq!(count("approval.denied", "cli"), 5, "{entries:?}");
    assert_eq!(count("approval.timeout", "gatehouse"), 4, "{entries:?}");
    assert_eq!(count("approval.abandoned", "gatehouse"), 2, "{entries:?}");
    let asked = entries
        .iter()
        .filter(|(a, _, _)| a == "approval.asked")
        .count();
    let ended = entries.len() - asked;
    assert_eq!(asked, ended, "every ask has exactly one end: {entries:?}");
    // Each end names the hold and the caller it decided.
    assert!(
        entries
            .iter()
            .filter(|(a, _, _)| a != "approval.asked")
            .all(
                |(_, _, d)| d["hold"].as_str().is_some_and(|h| h.starts_with("hold_"))
                    && d["caller"].is_string()
            ),
        "{entries:?}"
    );
    let verified = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(verified["ok"], true, "{verified}");
}

#[test]
fn python_sdk_over_http_waits_in_the_owners_queue() {
    let site = TestSite::new("approvals_http");
    let Some(client) = SdkClient::python("python_approvals_http.py", &site) else {
        return;
    };
    let toml = site.path().join("gatehouse.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        format!("{text}\n[approvals]\neffects = [\"publish\"]\ntimeout_seconds = 30\n"),
    )
    .unwrap();
    let (key, id) = mint(&site, &[]);
    let serve = crate::serve_util::Serve::start(&site, &[]);
    client
        .arg(format!("http://{}/mcp", serve.addr))
        .env("INTEROP_EDITOR_KEY", &key)
        .env("INTEROP_EDITOR_ID", &id)
        .run_against(&serve);
    assert!(
        !serve.stderr().contains(&key),
        "a key reached the server log"
    );
    let verified = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(verified["ok"], true, "{verified}");
}
