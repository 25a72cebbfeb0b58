//! The manifest as a gate, and the permission layer behind it: what each kind
//! of actor is shown and may do, and how changes in the store apply to a
//! running server.

use crate::mcp_util;

use crate::mcp_util::{McpSite, modern, tool_error};
use crate::util::TestSite;
use serde_json::json;

const PUBLIC: &[&str] = &["content_list", "content_read", "content_search"];
const VIEWER: &[&str] = &[
    "content_list",
    "content_read",
    "content_search",
    "media_list",
    "media_read",
    "http_fetch",
];
const AUTHOR: &[&str] = &[
    "content_list",
    "content_read",
    "content_search",
    "content_write_draft",
    "media_list",
    "media_read",
    "media_write",
    "http_fetch",
];

fn with(base: &[&str], extra: &[&str]) -> Vec<String> {
    let mut all: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    all.extend(extra.iter().map(|s| s.to_string()));
    all
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn each_actor_kind_is_shown_what_its_roles_allow() {
    let site = TestSite::new("manifest");
    let (viewer_key, _) = site.mint("viewer");
    let (editor_key, _) = site.mint("editor");
    type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, Vec<String>);
    let cases: Vec<Case> = vec![
        (vec![], vec![], with(PUBLIC, &[])),
        (vec!["--role", "viewer"], vec![], with(VIEWER, &[])),
        (vec!["--role", "author"], vec![], with(AUTHOR, &[])),
        (
            vec!["--role", "editor"],
            vec![],
            with(AUTHOR, &["content_publish", "site_config_read"]),
        ),
        (
            vec!["--role", "admin"],
            vec![],
            with(
                AUTHOR,
                &["content_publish", "content_delete", "site_config_read"],
            ),
        ),
        (
            vec!["--email", "viewer@example.com"],
            vec![],
            with(VIEWER, &[]),
        ),
        (
            vec!["--email", "admin@example.com"],
            vec![],
            with(
                AUTHOR,
                &["content_publish", "content_delete", "site_config_read"],
            ),
        ),
        (
            vec![],
            vec![("GATEHOUSE_API_KEY", viewer_key.as_str())],
            with(VIEWER, &[]),
        ),
        (
            vec!["--api-key", editor_key.as_str()],
            vec![],
            with(AUTHOR, &["content_publish", "site_config_read"]),
        ),
    ];
    for (args, env, expected) in cases {
        let mut mcp = site.mcp(&args, &env);
        // Both eras list the same tools for the same actor.
        let modern_names = mcp.tool_names(1, modern(json!({})));
        mcp.initialize("2025-06-18");
        let legacy_names = mcp.tool_names(2, json!({}));
        assert_eq!(
            sorted(modern_names.clone()),
            sorted(expected.clone()),
            "actor {args:?}"
        );
        assert_eq!(modern_names, legacy_names);
        assert!(mcp.finish().success());
    }
}

#[test]
fn public_calls_to_unlisted_tools_are_refused_by_the_permission_layer() {
    let site = TestSite::new("public");
    let mut mcp = site.mcp(&[], &[]);
    mcp.initialize("2025-11-25");
    for (i, tool) in ["media_list", "site_config_read", "content_write_draft"]
        .iter()
        .enumerate()
    {
        let args = if *tool == "content_write_draft" {
            json!({"slug": "x", "title": "x", "body": "x"})
        } else {
            json!({})
        };
        let err = tool_error(&mcp.call(i as i64 + 1, tool, args, None));
        assert_eq!(err["code"], "PERMISSION_DENIED", "{tool}: {err}");
    }
    let err = tool_error(&mcp.call(9, "http_fetch", json!({"url": "http://example.com/"}), None));
    assert_eq!(err["code"], "PERMISSION_DENIED");
    // Drafts stay invisible to the public.
    let err = tool_error(&mcp.call(10, "content_read", json!({"slug": "roadmap-draft"}), None));
    assert_eq!(err["code"], "CONTENT_NOT_FOUND");
}

#[test]
fn a_viewer_cannot_publish() {
    let site = TestSite::new("viewer_publish");
    let mut mcp = site.mcp(&["--email", "viewer@example.com"], &[]);
    mcp.initialize("2025-06-18");
    let err = tool_error(&mcp.call(1, "content_publish", json!({"slug": "roadmap-draft"}), None));
    assert_eq!(err["code"], "PERMISSION_DENIED", "{err}");
    assert_eq!(err["detail"]["required_role"], "editor");
    // Nothing changed: the draft is still a draft.
    let read = mcp.call(2, "content_read", json!({"slug": "roadmap-draft"}), None);
    assert_eq!(read["result"]["structuredContent"]["status"], "draft");
}

#[test]
fn a_key_revoked_mid_session_is_refused_on_the_next_call() {
    let site = TestSite::new("revoke");
    let (key, id) = site.mint("viewer");
    // PGPASSWORD too (unused by a SQLite site; a PostgreSQL test cluster
    // trusts local connections, so the password passed on does no harm).
    let mut mcp = site.mcp(
        &[],
        &[
            ("GATEHOUSE_API_KEY", key.as_str()),
            ("PGPASSWORD", "pg-password-marker"),
        ],
    );
    mcp.initialize("2025-11-25");
    let ok = mcp.call(1, "content_list", json!({}), None);
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    site.ok(&["keys", "revoke", &id]);
    let err = tool_error(&mcp.call(2, "content_list", json!({}), None));
    assert_eq!(err["code"], "ACTOR_API_KEY_INVALID", "{err}");
    // The revoked key is shown no tools, and the change was announced.
    assert!(mcp.tool_names(3, json!({})).is_empty());
    mcp.notification("notifications/tools/list_changed");
    // Modern requests are refused the same way.
    let err = tool_error(&mcp.call(4, "content_list", json!({}), Some(mcp_util::modern_meta())));
    assert_eq!(err["code"], "ACTOR_API_KEY_INVALID");
    assert!(
        !mcp.stderr().contains(&key),
        "the raw key never reaches stderr"
    );
}

/// The key `gatehouse mcp` was given in its environment is taken out of it
/// at start: `/proc/PID/environ` (readable by root or a debugger for the
/// process's whole life; a same-user child is kept out by non-dumpable) no
/// longer holds it, while the key still works for every call.
#[test]
fn host_secrets_are_scrubbed_from_the_servers_environment_block() {
    let site = TestSite::new("env_scrub");
    let (key, _) = site.mint("viewer");
    // PGPASSWORD too (unused by a SQLite site; a PostgreSQL test cluster
    // trusts local connections, so the password passed on does no harm).
    let mut mcp = site.mcp(
        &[],
        &[
            ("GATEHOUSE_API_KEY", key.as_str()),
            ("PGPASSWORD", "pg-password-marker"),
        ],
    );
    mcp.initialize("2025-11-25");
    let ok = mcp.call(1, "content_list", json!({}), None);
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    match std::fs::read(format!("/proc/{}/environ", mcp.child.id())) {
        Ok(block) => {
            let text = String::from_utf8_lossy(&block);
            assert!(
                !text.contains(&key[13..]),
                "the key is still in the environment block"
            );
            assert!(
                !text.contains("pg-password-marker"),
                "PGPASSWORD is still there"
            );
            assert!(
                text.contains("GATEHOUSE_CONFIG_DIR"),
                "read the wrong block"
            );
        }
        // Not root: non-dumpable already keeps this reader out.
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}"),
    }
    // A call after the scrub still runs as the key.
    let ok = mcp.call(2, "content_list", json!({}), None);
    assert_eq!(ok["result"]["isError"], false, "{ok}");
}

#[test]
fn a_role_change_mid_session_announces_the_new_manifest() {
    let site = TestSite::new("role_change");
    let mut mcp = site.mcp(&["--email", "author@example.com"], &[]);
    mcp.initialize("2025-11-25");
    // A modern client on the same process listens too.
    mcp.send(
        &json!({"jsonrpc": "2.0", "id": 50, "method": "subscriptions/listen",
        "params": modern(json!({"notifications": {"toolsListChanged": true}}))}),
    );
    mcp.notification("notifications/subscriptions/acknowledged");
    assert!(
        !mcp.tool_names(1, json!({}))
            .contains(&"content_publish".to_string())
    );
    let err = tool_error(&mcp.call(2, "content_publish", json!({"slug": "roadmap-draft"}), None));
    assert_eq!(err["code"], "PERMISSION_DENIED");

    site.ok(&[
        "users",
        "update",
        "--email",
        "author@example.com",
        "--roles",
        "editor",
    ]);
    let published = mcp.call(3, "content_publish", json!({"slug": "roadmap-draft"}), None);
    assert_eq!(
        published["result"]["structuredContent"]["status"], "published",
        "{published}"
    );
    let mut seen_legacy = false;
    let mut seen_modern = false;
    while !(seen_legacy && seen_modern) {
        let n = mcp.notification("notifications/tools/list_changed");
        match n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].as_i64() {
            Some(50) => seen_modern = true,
            Some(other) => panic!("unexpected subscription {other}"),
            None => seen_legacy = true,
        }
    }
    assert!(
        mcp.tool_names(4, json!({}))
            .contains(&"content_publish".to_string())
    );
}

#[test]
fn search_finds_a_draft_the_moment_it_is_written() {
    let site = TestSite::new("search_draft");
    let mut mcp = site.mcp(&["--role", "author"], &[]);
    mcp.initialize("2025-06-18");
    let w = mcp.call(
        1,
        "content_write_draft",
        json!({"slug": "zebra-notes", "title": "Notes on zebras", "body": "Quagga stripes are unusual."}),
        None,
    );
    assert_eq!(w["result"]["structuredContent"]["status"], "draft", "{w}");
    let s = mcp.call(2, "content_search", json!({"query": "quagga"}), None);
    let entries = s["result"]["structuredContent"]["entries"]
        .as_array()
        .unwrap();
    assert_eq!(entries.len(), 1, "{s}");
    assert_eq!(entries[0]["slug"], "zebra-notes");
    // Renaming keeps the old slug working and the index current.
    let r = mcp.call(3, "content_write_draft", json!({"slug": "zebra-notes", "title": "Zebras", "body": "Okapi are not zebras.", "new_slug": "zebras"}), None);
    assert_eq!(r["result"]["structuredContent"]["slug"], "zebras", "{r}");
    let old = mcp.call(4, "content_read", json!({"slug": "zebra-notes"}), None);
    assert_eq!(old["result"]["structuredContent"]["slug"], "zebras");
    let s = mcp.call(5, "content_search", json!({"query": "okapi"}), None);
    assert_eq!(
        s["result"]["structuredContent"]["entries"][0]["slug"],
        "zebras"
    );
    let s = mcp.call(6, "content_search", json!({"query": "quagga"}), None);
    assert!(
        s["result"]["structuredContent"]["entries"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn media_round_trips_as_base64_with_its_type_checked() {
    let site = TestSite::new("media");
    let mut mcp = site.mcp(&["--role", "author"], &[]);
    mcp.initialize("2025-11-25");
    let listed = mcp.call(1, "media_list", json!({}), None);
    assert_eq!(
        listed["result"]["structuredContent"]["media"][0]["filename"],
        "pixel.png"
    );
    let read = mcp.call(2, "media_read", json!({"filename": "pixel.png"}), None);
    let png = read["result"]["structuredContent"]["data_base64"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(read["result"]["content"][1]["type"], "image", "{read}");
    let w = mcp.call(
        3,
        "media_write",
        json!({"filename": "copy.png", "mime_type": "image/png", "data_base64": png}),
        None,
    );
    assert_eq!(
        w["result"]["structuredContent"]["size"], read["result"]["structuredContent"]["size"],
        "{w}"
    );
    // HTML declared as PNG is refused: the bytes are sniffed.
    let err = tool_error(&mcp.call(4, "media_write", json!({"filename": "x.png", "mime_type": "image/png", "data_base64": "PGh0bWw+PC9odG1sPg=="}), None));
    assert_eq!(err["code"], "MEDIA_TYPE_MISMATCH");
    let err = tool_error(&mcp.call(
        5,
        "media_write",
        json!({"filename": "x.txt", "mime_type": "text/plain", "data_base64": "%%%"}),
        None,
    ));
    assert_eq!(err["code"], "MEDIA_BASE64_INVALID");
}

#[test]
fn every_call_is_audited_with_a_digest_and_never_the_arguments() {
    let site = TestSite::new("audit");
    let mut mcp = site.mcp(&["--role", "author"], &[]);
    mcp.initialize("2025-11-25");
    mcp.call(
        1,
        "content_write_draft",
        json!({"slug": "secret-plans", "title": "Plans", "body": "PINEAPPLE-SECRET-BODY"}),
        None,
    );
    mcp.call(2, "content_publish", json!({"slug": "secret-plans"}), None);
    mcp.call(
        3,
        "no_such_tool",
        json!({"x": "PINEAPPLE-SECRET-ARG"}),
        None,
    );
    assert!(mcp.finish().success());
    let entries = site.audit();
    let calls: Vec<_> = entries
        .iter()
        .filter(|e| e["action"] == "mcp.tool_call")
        .collect();
    assert_eq!(calls.len(), 3, "{entries:?}");
    let by_subject = |s: &str| {
        calls
            .iter()
            .find(|e| e["subject"] == s)
            .unwrap_or_else(|| panic!("no entry for {s}"))
    };
    let write: serde_json::Value = serde_json::from_str(
        by_subject("content_write_draft")["detail"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(write["outcome"], "ok");
    assert_eq!(write["args_sha256"].as_str().unwrap().len(), 64);
    let publish: serde_json::Value =
        serde_json::from_str(by_subject("content_publish")["detail"].as_str().unwrap()).unwrap();
    assert_eq!(publish["outcome"], "error");
    assert_eq!(publish["code"], "PERMISSION_DENIED");
    assert_eq!(by_subject("<unknown>")["actor"], "synthetic:author");
    let all = serde_json::to_string(&entries).unwrap();
    assert!(
        !all.contains("PINEAPPLE"),
        "arguments leaked into the audit log"
    );
    site.ok(&["audit", "verify"]);
}

#[test]
fn a_bad_actor_exits_before_reading_stdin_with_a_clean_stdout() {
    let site = TestSite::new("bad_actor");
    for (args, code) in [
        (
            vec!["--api-key", "gatehouse_sk_notakey"],
            "ACTOR_API_KEY_INVALID",
        ),
        (vec!["--email", "nobody@example.com"], "ACTOR_EMAIL_UNKNOWN"),
        (
            vec!["--role", "viewer", "--email", "viewer@example.com"],
            "ACTOR_FLAGS_CONFLICT",
        ),
    ] {
        let out = site
            .command()
            .arg("mcp")
            .args(&args)
            .stdin(std::process::Stdio::piped()) // held open: the server must not wait on it
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        assert!(
            out.stdout.is_empty(),
            "stdout stays clean: {:?}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(code),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
