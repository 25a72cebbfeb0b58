//! Key restrictions through the real binary: set at mint, changed with
//! `keys restrict` (each restriction cleared on its own), shown in words by
//! `whoami` and `keys list`, kept by exports, and enforced for a real MCP
//! client (the official Python SDK over stdio, both eras: the manifest, the
//! refusals and their audit entries, read-only, the content scope, the
//! rate). Runs on SQLite, and on PostgreSQL with `GATEHOUSE_TEST_PG_URL`.

use serde_json::Value;

use crate::util::TestSite;

use crate::sdk::SdkClient;

/// Mints a key with `flags` after the roles; returns (raw key, id).
fn mint(site: &TestSite, roles: &str, flags: &[&str]) -> (String, String) {
    let mut args = vec!["keys", "mint", "--label", "restricted", "--roles", roles];
    args.extend_from_slice(flags);
    args.push("--json");
    let v = site.ok_json(&args);
    (
        v["key"].as_str().unwrap().to_string(),
        v["id"].as_str().unwrap().to_string(),
    )
}

fn listed(site: &TestSite, id: &str) -> Value {
    let list = site.ok_json(&["keys", "list", "--json"]);
    list.as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == id)
        .cloned()
        .unwrap()
}

#[test]
fn restrictions_set_at_mint_are_changed_cleared_and_shown_in_words() {
    let site = TestSite::new("restrict_cli");
    let (_, id) = mint(
        &site,
        "editor",
        &[
            "--tools",
            "content_search,content_read",
            "--read-only",
            "--content",
            "blog-*,news-*",
            "--content-status",
            "published",
            "--rate",
            "60/min",
        ],
    );
    let k = listed(&site, &id);
    assert_eq!(
        k["restrictions"],
        serde_json::json!({
            "tools": ["content_read", "content_search"],
            "read_only": true,
            "content": {"slugs": ["blog-*", "news-*"], "status": "published"},
            "rate": "60/min",
        })
    );
    let words = k["reach"]["words"].to_string();
    for want in [
        "only the tools content_read, content_search",
        "read-only",
        "published entries with slugs matching blog-* or news-*",
        "60 calls a minute",
    ] {
        assert!(words.contains(want), "{want:?} in {words}");
    }
    assert_eq!(
        k["reach"]["tools"],
        serde_json::json!(["content_read", "content_search"])
    );
    let text = site.ok(&["keys", "list"]);
    assert!(text.contains("rate 60/min"), "{text}");
    let who = site.ok(&["whoami", "--key-id", &id]);
    assert!(
        who.contains("only the tools content_read, content_search"),
        "{who}"
    );
    let who = site.ok_json(&["whoami", "--key-id", &id, "--json"]);
    assert_eq!(who["restrictions"]["rate"], "60/min", "{who}");
    assert_eq!(who["reach"]["restricted"], true);

    // Each restriction clears on its own; the others stay.
    site.ok(&["keys", "restrict", &id, "--clear", "rate"]);
    let r = &listed(&site, &id)["restrictions"];
    assert!(r.get("rate").is_none() && r["read_only"] == true, "{r}");
    site.ok(&["keys", "restrict", &id, "--clear", "read-only,tools"]);
    let r = &listed(&site, &id)["restrictions"];
    assert!(
        r.get("read_only").is_none() && r.get("tools").is_none(),
        "{r}"
    );
    assert_eq!(r["content"]["status"], "published");
    site.ok(&["keys", "restrict", &id, "--content", "docs-*"]);
    let r = &listed(&site, &id)["restrictions"];
    assert_eq!(r["content"]["slugs"], serde_json::json!(["docs-*"]));
    assert_eq!(
        r["content"]["status"], "published",
        "a new pattern keeps the status"
    );
    site.ok(&["keys", "restrict", &id, "--clear", "content"]);
    let k = listed(&site, &id);
    assert_eq!(k["restrictions"], serde_json::json!({}));
    assert_eq!(k["reach"]["restricted"], false);

    // Every change is in the audit log with the old and new set.
    let log = site.ok_json(&["audit", "list", "--limit", "100", "--json"]);
    let restricts = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "key.restrict" && e["subject"] == id.as_str())
        .count();
    assert_eq!(restricts, 4, "{log}");
}

#[test]
fn bad_restrictions_are_refused_with_a_hint_naming_the_cause() {
    let site = TestSite::new("restrict_bad");
    let cases: &[(&[&str], &str)] = &[
        (&["--content", "blog/*"], "blog-*"),
        (&["--tools", "content_reed"], "content_read"),
        (&["--rate", "60/week"], "60/min"),
        (&["--content-status", "live"], "published"),
    ];
    for (flags, hint) in cases {
        let mut args = vec!["keys", "mint", "--label", "x", "--roles", "viewer"];
        args.extend_from_slice(flags);
        let f = site.fails(&args);
        assert_eq!(f.code, "KEY_RESTRICTION_INVALID", "{flags:?}: {}", f.stderr);
        assert!(f.stderr.contains(hint), "{flags:?}: {}", f.stderr);
    }
    // Nothing half-made: no key was minted by the refused commands.
    assert_eq!(
        site.ok_json(&["keys", "list", "--json"]),
        serde_json::json!([])
    );
    let f = site.fails(&["keys", "restrict", "nosuchkey123", "--read-only"]);
    assert_eq!(f.code, "KEY_NOT_FOUND");
    let (_, id) = mint(&site, "viewer", &[]);
    let f = site.fails(&["keys", "restrict", &id, "--clear", "everything"]);
    assert_eq!(f.code, "KEY_RESTRICTION_INVALID");
}

#[test]
fn a_roll_keeps_the_restrictions() {
    let site = TestSite::new("restrict_roll");
    let (_, id) = mint(&site, "editor", &["--read-only", "--content", "blog-*"]);
    let rolled = site.ok_json(&["keys", "roll", &id, "--grace", "0s", "--json"]);
    let new_id = rolled["id"].as_str().unwrap();
    assert_eq!(
        listed(&site, new_id)["restrictions"],
        listed(&site, &id)["restrictions"]
    );
}

/// The export carries each key's restrictions and the import checks them
/// against the audit log, like roles: stripping them off is refused.
#[test]
fn an_export_with_a_keys_restrictions_stripped_is_refused() {
    let src = TestSite::new("restrict_export");
    let (_, id) = mint(&src, "admin", &["--read-only", "--content", "blog-*"]);
    let (_, later) = mint(&src, "editor", &[]);
    src.ok(&["keys", "restrict", &later, "--tools", "content_read"]);
    let file = src.dir.parent().unwrap().join("dump.json");
    src.ok(&["site", "export", "--out", file.to_str().unwrap()]);
    let dump: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let signer = dump["signature"]["public_key"]
        .as_str()
        .unwrap()
        .to_string();
    let import = |name: &str, dump: &Value| {
        let dst = TestSite::plain(name);
        let f = dst.dir.parent().unwrap().join("in.json");
        std::fs::write(&f, dump.to_string()).unwrap();
        let out = dst.run(&[
            "site",
            "import",
            f.to_str().unwrap(),
            "--trust-key",
            &signer,
        ]);
        (dst, out)
    };
    let (dst, out) = import("restrict_export_ok", &dump);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        listed(&dst, &id)["restrictions"],
        listed(&src, &id)["restrictions"]
    );
    assert_eq!(
        listed(&dst, &later)["restrictions"]["tools"],
        serde_json::json!(["content_read"])
    );
    for victim in [&id, &later] {
        let mut edited = dump.clone();
        for k in edited["keys"].as_array_mut().unwrap() {
            if k["id"] == victim.as_str() {
                k.as_object_mut().unwrap().remove("restrictions");
            }
        }
        let (_, out) = import("restrict_export_bad", &edited);
        let f = crate::util::failure(out, &["site", "import"]);
        assert_eq!(f.code, "IMPORT_TAMPERED", "{}", f.stderr);
        assert!(
            f.stderr.contains("restrictions") && f.stderr.contains(victim.as_str()),
            "{}",
            f.stderr
        );
    }
}

/// A key that may not read pending edits (published entries only) had
/// replaced someone else's pending edit it never saw, unpublished work lost.
/// It may still revise the entry where no one else's edit waits.
#[test]
fn a_published_only_key_cannot_replace_a_pending_edit_it_cannot_read() {
    use crate::mcp_util::McpSite;
    use serde_json::json;
    let site = TestSite::new("restrict_pending");
    let write = |m: &mut crate::mcp_util::Mcp, id: i64, body: &str| {
        m.call(
            id,
            "content_write_draft",
            json!({"slug": "welcome", "title": "Welcome", "body": body}),
            None,
        )
    };
    let mut editor = site.mcp(&["--email", "editor@example.com"], &[]);
    editor.initialize("2025-06-18");
    let r = write(&mut editor, 1, "SECRET PENDING WORK");
    assert_ne!(r["result"]["isError"], true, "{r}");
    let (key, _) = mint(&site, "editor", &["--content-status", "published"]);
    let mut k = site.mcp(&["--api-key", &key], &[]);
    k.initialize("2025-06-18");
    let r = write(&mut k, 1, "blind overwrite");
    assert_eq!(
        crate::mcp_util::tool_error(&r)["code"],
        "KEY_SCOPE_CONTENT",
        "{r}"
    );
    let read = editor.call(2, "content_read", json!({"slug": "welcome"}), None);
    assert_eq!(
        read["result"]["structuredContent"]["pending_revision"]["body"], "SECRET PENDING WORK",
        "{read}"
    );
    // Once it is published, the key revises the entry, and again its own edit.
    let r = editor.call(3, "content_publish", json!({"slug": "welcome"}), None);
    assert_ne!(r["result"]["isError"], true, "{r}");
    for (id, body) in [(2, "first"), (3, "second")] {
        let r = write(&mut k, id, body);
        assert_ne!(r["result"]["isError"], true, "{r}");
    }
}

fn audit_codes(site: &TestSite, key_id: &str) -> Vec<String> {
    let log = site.ok_json(&["audit", "list", "--limit", "1000", "--json"]);
    log.as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "mcp.tool_call" && e["actor"] == format!("key:{key_id}"))
        .filter_map(|e| {
            let d = &e["detail"];
            let d: Value = match d {
                Value::String(s) => serde_json::from_str(s).unwrap(),
                other => other.clone(),
            };
            d["code"].as_str().map(str::to_string)
        })
        .collect()
}

/// Runs tests/interop/python_restricted.py on a fresh site, over stdio or,
/// with `http`, against `gatehouse serve`; then checks that each refusal is
/// audited with its own code, once per era.
fn python_restricted(name: &str, http: bool) {
    let site = TestSite::new(name);
    let Some(client) = SdkClient::python("python_restricted.py", &site) else {
        return;
    };
    let (tools_key, tools_id) = mint(&site, "editor", &["--tools", "content_read,content_search"]);
    let (ro_key, ro_id) = mint(&site, "editor", &["--read-only"]);
    let (scoped_key, scoped_id) = mint(&site, "editor", &["--content", "blog-*"]);
    let (rate_key, rate_id) = mint(&site, "viewer", &["--rate", "3/min"]);
    // One server keeps a key's bucket across both eras: a second key.
    let (rate2_key, rate2_id) = mint(&site, "viewer", &["--rate", "3/min"]);
    let (live_key, live_id) = mint(&site, "editor", &[]);
    let secrets = [
        &tools_key,
        &ro_key,
        &scoped_key,
        &rate_key,
        &rate2_key,
        &live_key,
    ]
    .map(|k| k.clone());
    let serve = http.then(|| crate::serve_util::Serve::start(&site, &[]));
    let client = match &serve {
        Some(serve) => client
            .arg(format!("http://{}/mcp", serve.addr))
            .env("INTEROP_RATE_KEY_LEGACY", &rate2_key),
        None => client,
    };
    let client = client
        .env("INTEROP_TOOLS_KEY", tools_key)
        .env("INTEROP_READONLY_KEY", ro_key)
        .env("INTEROP_SCOPED_KEY", scoped_key)
        .env("INTEROP_RATE_KEY", rate_key)
        .env("INTEROP_LIVE_KEY", live_key)
        .env("INTEROP_LIVE_ID", &live_id);
    match &serve {
        Some(serve) => client.run_against(serve),
        None => client.run(),
    };
    // Each refusal is audited with its own code, once per era.
    let rate_limited = |id: &str| {
        audit_codes(&site, id)
            .iter()
            .filter(|c| *c == "KEY_RATE_LIMITED")
            .count()
    };
    for (id, code, times) in [
        (&tools_id, "KEY_TOOL_NOT_ALLOWED", 4),
        (&ro_id, "KEY_READ_ONLY", 2),
        (&scoped_id, "KEY_SCOPE_CONTENT", 6),
    ] {
        let codes = audit_codes(&site, id);
        assert_eq!(
            codes.iter().filter(|c| *c == code).count(),
            times,
            "{code} for key {id}: {codes:?}"
        );
    }
    assert_eq!(
        (rate_limited(&rate_id), rate_limited(&rate2_id)),
        if http { (1, 1) } else { (2, 0) },
        "KEY_RATE_LIMITED per rate key"
    );
    if let Some(serve) = &serve {
        let log = serve.stderr();
        assert!(
            secrets.iter().all(|k| !log.contains(k.as_str())),
            "a key reached the server log"
        );
    }
}

#[test]
fn python_sdk_sees_and_is_refused_by_restricted_keys() {
    python_restricted("restrict_py", false);
}

#[test]
fn python_sdk_over_http_sees_and_is_refused_by_restricted_keys() {
    python_restricted("restrict_py_http", true);
}

/// `keys list --usage`: each key's calls by tool over the last day and
/// week, its refusals (by its roles and by its restrictions) and its last
/// call, counted from the audit log; keys that made no call show zeros.
#[test]
fn keys_list_usage_counts_calls_by_tool_and_refusals() {
    use crate::mcp_util::McpSite;
    let site = TestSite::new("usage_cli");
    let (key, id) = mint(
        &site,
        "viewer",
        &["--tools", "content_read,content_list,content_publish"],
    );
    let (_, idle) = mint(&site, "viewer", &[]);
    let mut mcp = site.mcp(&[], &[("GATEHOUSE_API_KEY", &key)]);
    mcp.initialize("2025-11-25");
    for i in 0..3 {
        let r = mcp.call(
            10 + i,
            "content_read",
            serde_json::json!({"slug": "welcome"}),
            None,
        );
        assert!(r["result"]["isError"] != true, "{r}");
    }
    mcp.call(20, "content_list", serde_json::json!({}), None);
    // Refused by the allowlist, and by the viewer role.
    mcp.call(
        21,
        "content_search",
        serde_json::json!({"query": "x"}),
        None,
    );
    mcp.call(
        22,
        "content_publish",
        serde_json::json!({"slug": "welcome"}),
        None,
    );
    // A tool error that is not a refusal.
    mcp.call(
        23,
        "content_read",
        serde_json::json!({"slug": "no-such"}),
        None,
    );
    mcp.close_stdin();
    assert!(mcp.finish().success());

    let list = site.ok_json(&["keys", "list", "--usage", "--json"]);
    let of = |id: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|k| k["id"] == id)
            .unwrap()["usage"]
            .clone()
    };
    let u = of(&id);
    assert_eq!(u["calls_day"], 7, "{u}");
    assert_eq!(u["calls_week"], 7);
    assert_eq!(u["refused_day"], 2);
    assert_eq!(u["refused_week"], 2);
    assert!(u["last_call_at"].is_string(), "{u}");
    let tools: Vec<(String, i64, i64)> = u["by_tool"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["tool"].as_str().unwrap().to_string(),
                t["week"].as_i64().unwrap(),
                t["refused_week"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            ("content_read".to_string(), 4, 0),
            ("content_list".to_string(), 1, 0),
            ("content_publish".to_string(), 1, 1),
            ("content_search".to_string(), 1, 1),
        ]
    );
    let quiet = of(&idle);
    assert_eq!(
        (quiet["calls_week"].clone(), quiet["last_call_at"].clone()),
        (serde_json::json!(0), Value::Null)
    );
    let text = site.ok(&["keys", "list", "--usage"]);
    assert!(text.contains("content_read 4, content_list 1"), "{text}");
    // Without --usage the list has no usage.
    assert!(
        site.ok_json(&["keys", "list", "--json"])[0]
            .get("usage")
            .is_none()
    );
}
