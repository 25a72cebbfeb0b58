//! `gatehouse serve` end to end: the same server core over HTTP, the exposure
//! and auth rules, both eras on one endpoint, the limits and the drain.

use std::time::Duration;

use serde_json::{Value, json};

use crate::mcp_util::McpSite;
use crate::serve_util::{LEGACY, MODERN, Serve, request};
use crate::util::{TestSite, closed_port};

const PUBLIC: &[&str] = &["content_list", "content_read", "content_search"];

fn tool_calls(site: &TestSite) -> Vec<Value> {
    site.audit()
        .into_iter()
        .filter(|e| e["action"] == "mcp.tool_call")
        .collect()
}

fn error_code(r: &crate::serve_util::Reply) -> Value {
    r.json()["error"]["code"].clone()
}

fn gatehouse_code(r: &crate::serve_util::Reply) -> Value {
    r.json()["error"]["data"]["code"].clone()
}

// --- Exposure (hostile cases first) ---

#[test]
fn a_forged_host_header_is_refused_with_403() {
    let site = TestSite::new("serve-host");
    let s = Serve::start(&site, &[]);
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    for host in [
        "evil.example",
        "evil.example:8808",
        "127.0.0.1.evil.example",
    ] {
        let r = request(
            &s.addr,
            "POST",
            "/mcp",
            &[("Host", host), ("Content-Type", "application/json")],
            body,
        );
        assert_eq!(r.status, 403, "Host {host}: {}", r.text());
        assert_eq!(gatehouse_code(&r), "HOST_NOT_ALLOWED");
    }
    // The loopback name the server listens on is served.
    let r = s.legacy(None, "tools/list", json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn a_foreign_browser_origin_is_refused_with_403() {
    let site = TestSite::new("serve-origin");
    let s = Serve::start(&site, &["--allow-origin", "https://app.example.org"]);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    for origin in ["https://evil.example", "null", "http://localhost:1"] {
        let r = s.post(&[("Origin", origin)], &list);
        assert_eq!(r.status, 403, "Origin {origin}: {}", r.text());
        assert_eq!(gatehouse_code(&r), "ORIGIN_NOT_ALLOWED");
    }
    let r = s.post(&[("Origin", "https://app.example.org")], &list);
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn an_absolute_form_target_naming_a_foreign_host_is_refused() {
    // HTTP/1.1 has the origin server take the name from an absolute-form
    // target and ignore Host: the target is what must be allowed.
    let site = TestSite::new("serve-absolute-form");
    let s = Serve::start(&site, &[]);
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    let headers = [
        ("Content-Type", "application/json"),
        ("MCP-Protocol-Version", LEGACY),
    ];
    for target in [
        "http://evil.example/mcp".to_string(),
        format!(
            "http://evil.example:{}/mcp",
            s.addr.rsplit(':').next().unwrap()
        ),
    ] {
        let r = request(&s.addr, "POST", &target, &headers, body);
        assert_eq!(r.status, 403, "{target}: {}", r.text());
        assert_eq!(gatehouse_code(&r), "HOST_NOT_ALLOWED");
    }
    // The server's own name in absolute form is served.
    let own = format!("http://{}/mcp", s.addr);
    let r = request(&s.addr, "POST", &own, &headers, body);
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn a_page_of_an_allowed_origin_passes_the_preflight_and_reads_the_answer() {
    let site = TestSite::new("serve-cors");
    let (key, _) = site.mint("editor");
    let page = "https://app.example.org";
    let s = Serve::start(&site, &["--allow-origin", page, "--require-key"]);
    // The browser's preflight carries no credentials: it is answered before
    // any key is asked for, and names every header a client sends.
    let preflight = |origin: &str| {
        request(
            &s.addr,
            "OPTIONS",
            "/mcp",
            &[
                ("Origin", origin),
                ("Access-Control-Request-Method", "POST"),
                (
                    "Access-Control-Request-Headers",
                    "authorization, content-type, mcp-protocol-version, mcp-method, mcp-name",
                ),
            ],
            b"",
        )
    };
    let r = preflight(page);
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(r.header("access-control-allow-origin"), Some(page));
    let methods = r.header("access-control-allow-methods").unwrap_or("");
    assert!(methods.contains("POST"), "{methods}");
    let allowed = r
        .header("access-control-allow-headers")
        .unwrap_or("")
        .to_ascii_lowercase();
    for h in [
        "authorization",
        "content-type",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "last-event-id",
    ] {
        assert!(allowed.contains(h), "{h} missing from {allowed}");
    }
    assert!(r.header("vary").unwrap_or("").contains("Origin"));
    // A foreign page's preflight is refused and learns nothing.
    let r = preflight("https://evil.example");
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(r.header("access-control-allow-origin"), None);

    // The answers themselves are readable by the page: a refusal's challenge
    // included (an OAuth client in a page reads WWW-Authenticate).
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let r = s.post(&[("Origin", page)], &list);
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(r.header("access-control-allow-origin"), Some(page));
    let exposed = r
        .header("access-control-expose-headers")
        .unwrap_or("")
        .to_ascii_lowercase();
    assert!(exposed.contains("www-authenticate"), "{exposed}");
    let bearer = format!("Bearer {key}");
    let r = s.post(&[("Origin", page), ("Authorization", &bearer)], &list);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("access-control-allow-origin"), Some(page));
    // Without an Origin (no browser) nothing of CORS is sent, and caches
    // are told the answer depends on it.
    let r = s.post(&[("Authorization", &bearer)], &list);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("access-control-allow-origin"), None);
    assert!(r.header("vary").unwrap_or("").contains("Origin"));
    // A refusal for a second, foreign Origin stays unreadable to the first.
    let r = s.post(
        &[
            ("Origin", page),
            ("Origin", "https://evil.example"),
            ("Authorization", &bearer),
        ],
        &list,
    );
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(r.header("access-control-allow-origin"), None);
}

/// Beyond loopback without TLS, `--behind-proxy` is what allowed the
/// listener: only the proxy may connect (anyone on the network had been
/// served directly, in clear text, keys included).
#[test]
fn a_plain_listener_behind_a_proxy_serves_the_proxy_only() {
    let site = TestSite::new("serve-proxy-only");
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    let ask = |port: &str| {
        let addr = format!("127.0.0.1:{port}");
        crate::serve_util::try_request(
            &addr,
            "POST",
            "/mcp",
            &[
                ("Host", addr.as_str()),
                ("Content-Type", "application/json"),
                ("MCP-Protocol-Version", LEGACY),
            ],
            body,
        )
    };
    let port_of = |s: &Serve| s.addr.rsplit(':').next().unwrap().to_string();
    let elsewhere = Serve::start_on(&site, "0.0.0.0:0", &["--behind-proxy", "203.0.113.9"]);
    assert!(
        ask(&port_of(&elsewhere)).is_none(),
        "a peer that is not the proxy was served"
    );
    let local = Serve::start_on(&site, "0.0.0.0:0", &["--behind-proxy", "127.0.0.1"]);
    let r = ask(&port_of(&local)).expect("the proxy is served");
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn a_key_in_the_query_string_is_refused_and_never_used() {
    let site = TestSite::new("serve-query-key");
    let (key, _) = site.mint("editor");
    let s = Serve::start(&site, &[]);
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    for target in [
        format!("/mcp?api_key={key}"),
        format!("/mcp?x={key}"),
        "/mcp?token=abc".into(),
    ] {
        let r = request(
            &s.addr,
            "POST",
            &target,
            &[
                ("Content-Type", "application/json"),
                ("MCP-Protocol-Version", LEGACY),
            ],
            body,
        );
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(gatehouse_code(&r), "API_KEY_IN_URL");
        assert!(
            !r.text().contains(&key),
            "the refusal must not echo the key"
        );
    }
    assert!(!s.stderr().contains(&key), "the key must not reach the log");
}

#[test]
fn listening_beyond_loopback_without_tls_or_a_proxy_is_refused() {
    let site = TestSite::new("serve-exposure");
    let out = site
        .command()
        .args(["serve", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("LISTEN_UNSAFE"), "{stderr}");
}

#[test]
fn oauth_discovery_paths_answer_a_plain_404() {
    let site = TestSite::new("serve-wellknown");
    let s = Serve::start(&site, &[]);
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/admin",
        "/keys",
    ] {
        let r = request(&s.addr, "GET", path, &[], b"");
        assert_eq!(r.status, 404, "{path}");
    }
    assert_eq!(request(&s.addr, "GET", "/healthz", &[], b"").status, 200);
    assert_eq!(request(&s.addr, "GET", "/readyz", &[], b"").status, 200);
}

/// The SQLite file moved away under a running server: `/readyz` says the
/// server is not ready, and no call makes a new, empty database at the path.
/// The next pool connection had created one (resetting the WAL the old file
/// left, so acknowledged calls were lost) while `/readyz` said ready.
#[test]
fn a_database_file_moved_under_the_server_is_never_replaced_by_an_empty_one() {
    let site = TestSite::new("serve-db-moved");
    let Some(db) = site.db_file() else {
        return; // A SQLite file is what moves.
    };
    let (key, _) = site.mint("editor");
    let s = Serve::start(&site, &[]);
    let write = |slug: &str| {
        s.legacy(
            Some(&key),
            "tools/call",
            json!({"name": "content_write_draft", "arguments": {"slug": slug, "title": "t", "body": "b"}}),
        )
    };
    assert_eq!(write("before").json()["result"]["isError"], false);
    let moved = db.with_extension("db.moved");
    std::fs::rename(&db, &moved).unwrap();
    let ready = request(&s.addr, "GET", "/readyz", &[], b"");
    assert_eq!(ready.status, 503, "{}", ready.text());
    // Reads and writes, several at once so the pools open new connections.
    let calls: Vec<_> = (0..6)
        .map(|i| {
            let (addr, key) = (s.addr.clone(), key.clone());
            std::thread::spawn(move || {
                crate::serve_util::try_legacy(
                    &addr,
                    Some(&key),
                    1,
                    "tools/call",
                    json!({"name": "content_search", "arguments": {"query": format!("before{i}")}}),
                )
            })
        })
        .collect();
    for c in calls {
        c.join().unwrap();
    }
    write("after");
    assert!(!db.exists(), "a database was made at the moved file's path");
    std::fs::rename(&moved, &db).unwrap();
    drop(s);
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
    let before = site.sql("SELECT COUNT(*) FROM content WHERE slug = 'before'");
    assert_eq!(before.trim(), "1");
}

// --- Auth ---

#[test]
fn the_auth_matrix_refuses_every_bad_key_and_never_falls_back_to_public() {
    let site = TestSite::new("serve-auth");
    let (good, _) = site.mint("editor");
    let (revoked, revoked_id) = site.mint("editor");
    site.ok(&["keys", "revoke", &revoked_id]);
    let (expired, expired_id) = site.mint("editor");
    site.sql(&format!(
        "UPDATE api_keys SET expires_at = 1000 WHERE id = '{expired_id}'"
    ));
    let (viewer, viewer_id) = site.mint("viewer");
    // A wrong secret for a real id, with a valid checksum.
    let wrong_secret = {
        let body = format!("gatehouse_sk_{viewer_id}_{}", "A".repeat(33));
        format!("{body}{}", gatehouse_core::access::keys::checksum(&body))
    };
    let never_minted = {
        let body = format!("gatehouse_sk_{}_{}", "Z".repeat(12), "B".repeat(33));
        format!("{body}{}", gatehouse_core::access::keys::checksum(&body))
    };
    let s = Serve::start(&site, &[]);

    let cases: &[(&str, String, &str)] = &[
        ("malformed", "gatehouse_sk_short".into(), "malformed"),
        ("unknown", never_minted, "unknown"),
        ("wrong secret", wrong_secret, "unknown"),
        ("revoked", revoked.clone(), "revoked"),
        ("expired", expired, "expired"),
    ];
    for (what, key, reason) in cases {
        let r = s.legacy(Some(key), "tools/list", json!({}));
        assert_eq!(r.status, 401, "{what}: {}", r.text());
        assert!(
            r.header("www-authenticate")
                .is_some_and(|v| v.starts_with("Bearer")),
            "{what}: {:?}",
            r.headers
        );
        assert_eq!(gatehouse_code(&r), "ACTOR_API_KEY_INVALID", "{what}");
        assert_eq!(
            r.json()["error"]["data"]["detail"]["reason"],
            *reason,
            "{what}"
        );
    }
    // Another scheme is no key either.
    let r = s.post(
        &[
            ("Authorization", "Basic dXNlcjpwYXNz"),
            ("MCP-Protocol-Version", LEGACY),
        ],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    assert_eq!(r.status, 401);
    // Two credentials: neither is taken, whichever comes first.
    for pair in [[&good, &viewer], [&viewer, &good]] {
        let (a, b) = (format!("Bearer {}", pair[0]), format!("Bearer {}", pair[1]));
        let r = s.post(
            &[
                ("Authorization", &a),
                ("Authorization", &b),
                ("MCP-Protocol-Version", LEGACY),
            ],
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        );
        assert_eq!(r.status, 401, "{}", r.text());
        assert_eq!(gatehouse_code(&r), "ACTOR_API_KEY_INVALID");
    }
    // No header: public. A good key: its roles.
    assert_eq!(s.tool_names(None), PUBLIC);
    let editor = s.tool_names(Some(&good));
    assert!(
        editor.contains(&"content_publish".to_string()),
        "{editor:?}"
    );
    assert!(
        s.tool_names(Some(&viewer))
            .contains(&"media_list".to_string())
    );
    let log = s.stderr();
    for secret in [&good, &revoked, &viewer] {
        assert!(!log.contains(secret.as_str()), "a key reached the log");
    }
}

#[test]
fn require_key_answers_401_before_405_and_then_405_allow_post() {
    let site = TestSite::new("serve-require");
    let (key, _) = site.mint("viewer");
    let s = Serve::start(&site, &["--require-key"]);
    let r = s.legacy(None, "tools/list", json!({}));
    assert_eq!(r.status, 401);
    assert_eq!(gatehouse_code(&r), "ACTOR_API_KEY_REQUIRED");
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    for method in ["GET", "DELETE"] {
        let r = request(&s.addr, method, "/mcp", &[], b"");
        assert_eq!(r.status, 401, "{method} without a key");
        let auth = format!("Bearer {key}");
        let r = request(&s.addr, method, "/mcp", &[("Authorization", &auth)], b"");
        assert_eq!(r.status, 405, "{method} with a key");
        assert_eq!(r.header("allow"), Some("POST"));
    }
}

#[test]
fn a_key_revoked_through_the_cli_is_refused_on_its_next_request_within_a_second() {
    let site = TestSite::new("serve-revoke");
    let (key, id) = site.mint("editor");
    let s = Serve::start(&site, &[]);
    assert_eq!(s.legacy(Some(&key), "tools/list", json!({})).status, 200);
    site.ok(&["keys", "revoke", &id]);
    let r = s.legacy(Some(&key), "tools/list", json!({}));
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(r.json()["error"]["data"]["detail"]["reason"], "revoked");
}

#[test]
fn a_role_change_applies_to_the_next_request() {
    let site = TestSite::new("serve-role");
    let (key, id) = site.mint("viewer");
    let s = Serve::start(&site, &[]);
    assert!(
        !s.tool_names(Some(&key))
            .contains(&"content_publish".to_string())
    );
    site.sql(&format!(
        "UPDATE api_keys SET roles = 'editor' WHERE id = '{id}'"
    ));
    site.sql("UPDATE access_generation SET gen = gen + 1 WHERE id = 1");
    assert!(
        s.tool_names(Some(&key))
            .contains(&"content_publish".to_string())
    );
}

// --- Both eras on one endpoint ---

#[test]
fn the_legacy_handshake_is_answered_per_request_without_a_session() {
    let site = TestSite::new("serve-legacy");
    let (key, id) = site.mint("editor");
    let s = Serve::start(&site, &[]);
    for requested in ["2025-11-25", "2025-06-18", "2025-03-26", "1999-01-01"] {
        let r = s.post(
            &[],
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": requested, "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(
            r.header("mcp-session-id").is_none(),
            "no session is ever minted"
        );
        let expected = if requested == "1999-01-01" {
            "2025-11-25"
        } else {
            requested
        };
        assert_eq!(r.json()["result"]["protocolVersion"], expected);
    }
    let r = s.post(
        &[("MCP-Protocol-Version", LEGACY)],
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(r.status, 202);
    assert!(r.body.is_empty());
    let r = s.post(&[], &json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
    assert_eq!(r.status, 202);
    // No version header: served as 2025-03-26.
    let r = s.post(
        &[],
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.json()["result"].get("resultType").is_none());
    // An unsupported header version.
    let r = s.post(
        &[("MCP-Protocol-Version", "1999-01-01")],
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
    );
    assert_eq!(r.status, 400);
    assert_eq!(error_code(&r), -32022);
    let r = s.legacy(
        Some(&key),
        "tools/call",
        json!({"name": "content_read", "arguments": {"slug": "welcome"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["result"]["isError"], false, "{}", r.text());
    let calls = tool_calls(&site);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["actor"], format!("key:{id}"));
    assert_eq!(calls[0]["subject"], "content_read");
}

#[test]
fn the_modern_era_checks_headers_against_the_body() {
    let site = TestSite::new("serve-modern");
    let (key, _) = site.mint("editor");
    let s = Serve::start(&site, &[]);
    let r = s.modern(None, "server/discover", json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["result"]["resultType"], "complete");
    assert!(
        v["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!(MODERN))
    );
    let r = s.modern(Some(&key), "tools/list", json!({}));
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["result"]["cacheScope"], "private");
    assert!(v["result"]["ttlMs"].is_number());
    let r = s.modern(
        Some(&key),
        "tools/call",
        json!({"name": "content_read", "arguments": {"slug": "welcome"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["result"]["resultType"], "complete");

    let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}});
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "content_read", "arguments": {"slug": "welcome"}, "_meta": meta}});
    let mismatches: &[(&str, Vec<(&str, &str)>)] = &[
        (
            "no version header",
            vec![("Mcp-Method", "tools/call"), ("Mcp-Name", "content_read")],
        ),
        (
            "another version",
            vec![
                ("MCP-Protocol-Version", LEGACY),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "content_read"),
            ],
        ),
        (
            "no method header",
            vec![
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Name", "content_read"),
            ],
        ),
        (
            "another method",
            vec![
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "tools/list"),
                ("Mcp-Name", "content_read"),
            ],
        ),
        (
            "another name",
            vec![
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "content_delete"),
            ],
        ),
        (
            "no name",
            vec![
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "tools/call"),
            ],
        ),
    ];
    let before = tool_calls(&site).len();
    for (what, headers) in mismatches {
        let r = s.post(headers, &call);
        assert_eq!(r.status, 400, "{what}: {}", r.text());
        assert_eq!(error_code(&r), -32020, "{what}");
        assert_eq!(r.json()["id"], 9, "{what}");
        assert!(
            !r.text().contains("content_delete"),
            "Mcp-Name values are not echoed"
        );
    }
    assert_eq!(
        tool_calls(&site).len(),
        before,
        "a refused request runs no tool"
    );
    // Header says modern, body does not.
    let r = s.post(
        &[
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "tools/list"),
        ],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    assert_eq!((r.status, error_code(&r)), (400, json!(-32020)));
    // An unsupported version lists ours.
    let r = s.post(
        &[
            ("MCP-Protocol-Version", "2099-01-01"),
            ("Mcp-Method", "tools/list"),
        ],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2099-01-01",
            "io.modelcontextprotocol/clientCapabilities": {}}}}),
    );
    assert_eq!((r.status, error_code(&r)), (400, json!(-32022)));
    assert!(
        r.json()["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!(MODERN))
    );
    // An unknown method.
    let r = s.modern(None, "resources/list", json!({}));
    assert_eq!((r.status, error_code(&r)), (404, json!(-32601)));
    // Notifications keep the same rules (they had been accepted whatever
    // the headers said); one that keeps them is accepted.
    let cancelled = |meta: bool| {
        let mut params = json!({"requestId": 1});
        if meta {
            params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN});
        }
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})
    };
    for (what, headers, meta, status) in [
        (
            "an unsupported version",
            vec![("MCP-Protocol-Version", "2099-01-01")],
            false,
            400,
        ),
        (
            "another method",
            vec![
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "tools/call"),
            ],
            true,
            400,
        ),
        (
            "no method header",
            vec![("MCP-Protocol-Version", MODERN)],
            false,
            400,
        ),
        (
            "a handshake revision",
            vec![("MCP-Protocol-Version", LEGACY)],
            false,
            202,
        ),
        (
            "the modern rules kept",
            vec![
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "notifications/cancelled"),
            ],
            true,
            202,
        ),
    ] {
        let r = s.post(&headers, &cancelled(meta));
        assert_eq!(r.status, status, "{what}: {}", r.text());
    }
}

#[test]
fn progress_requests_get_an_event_stream_that_nginx_does_not_buffer() {
    let site = TestSite::new("serve-sse");
    let s = Serve::start(&site, &[]);
    let r = s.post(
        &[("MCP-Protocol-Version", LEGACY)],
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "content_read", "arguments": {"slug": "welcome"}, "_meta": {"progressToken": 1}}}),
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("x-accel-buffering"), Some("no"));
    let text = r.text();
    let data = text
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("no event in {text}"));
    let v: Value = serde_json::from_str(data).unwrap();
    assert_eq!(v["id"], 5);
    assert_eq!(v["result"]["isError"], false);
    // Without a progress token: plain JSON.
    let r = s.legacy(None, "tools/list", json!({}));
    assert_eq!(r.header("content-type"), Some("application/json"));
}

// --- Limits ---

#[test]
fn a_body_over_the_limit_gets_413() {
    let site = TestSite::new("serve-413");
    let s = Serve::start(&site, &["--max-body", "1024"]);
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "content_search", "arguments": {"query": "x".repeat(4096)}}});
    let r = s.post(&[("MCP-Protocol-Version", LEGACY)], &big);
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(tool_calls(&site).len(), 0);
    assert_eq!(s.legacy(None, "tools/list", json!({})).status, 200);
}

#[test]
fn a_burst_over_the_keys_rate_gets_429_with_retry_after() {
    let site = TestSite::new("serve-429");
    let (key, _) = site.mint("viewer");
    let (other, _) = site.mint("viewer");
    let s = Serve::start(&site, &["--rate", "1"]);
    let statuses: Vec<u16> = (0..4)
        .map(|_| s.legacy(Some(&key), "tools/list", json!({})).status)
        .collect();
    assert_eq!(
        &statuses[..2],
        &[200, 200],
        "the burst passes: {statuses:?}"
    );
    let r = s.legacy(Some(&key), "tools/list", json!({}));
    assert_eq!(r.status, 429);
    assert_eq!(gatehouse_code(&r), "RATE_LIMITED");
    let after: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=2).contains(&after), "{after}");
    // Another key has its own bucket.
    assert_eq!(s.legacy(Some(&other), "tools/list", json!({})).status, 200);
}

/// A batch is many calls: each spends a request of the key's rate, as it
/// would sent alone (one batch of 300 drafts went through `--rate 1`
/// whole); and a request of a later era cannot ride in one past the header
/// rules it must meet alone.
#[test]
fn a_batch_spends_the_rate_per_request_and_carries_no_later_era() {
    let site = TestSite::new("serve-batch-rate");
    let (key, _) = site.mint("viewer");
    let (other, _) = site.mint("viewer");
    let s = Serve::start(&site, &["--rate", "1"]);
    let call = |i: u64| {
        json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
               "params": {"name": "content_read", "arguments": {"slug": "welcome"}}})
    };
    let batch = |key: &str, items: Vec<Value>| {
        let auth = format!("Bearer {key}");
        s.post(
            &[
                ("MCP-Protocol-Version", "2025-03-26"),
                ("Authorization", &auth),
            ],
            &Value::Array(items),
        )
    };
    // The burst (two) covers a batch of two, not one of twenty.
    let r = batch(&key, (1..=20).map(call).collect());
    assert_eq!(r.status, 429, "{}", r.text());
    assert!(r.header("retry-after").is_some());
    assert_eq!(tool_calls(&site).len(), 0, "nothing of a refused batch ran");
    let r = batch(&other, (1..=2).map(call).collect());
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(tool_calls(&site).len(), 2);

    let (third, _) = site.mint("viewer");
    let mut modern = call(3);
    modern["params"]["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
                                      "io.modelcontextprotocol/clientCapabilities": {}});
    let r = batch(&third, vec![modern]);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(error_code(&r), -32020, "{}", r.text());
    assert_eq!(tool_calls(&site).len(), 2);
}

/// `initialize` may not ride in a batch (2025-03-26 says so): it is refused
/// on its own, with a message that fits HTTP (it had said to start a new
/// server process), and the rest of the batch is served.
#[test]
fn initialize_in_a_batch_is_refused_in_http_terms() {
    let site = TestSite::new("serve-batch-initialize");
    let s = Serve::start(&site, &[]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}}});
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let r = s.post(
        &[("MCP-Protocol-Version", "2025-03-26")],
        &json!([init, list]),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let replies = r.json();
    let first = &replies[0];
    assert_eq!(first["id"], 1, "{replies}");
    assert_eq!(first["error"]["code"], -32600, "{replies}");
    let message = first["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("batch"), "{message}");
    assert!(!message.contains("process"), "{message}");
    assert!(replies[1]["result"]["tools"].is_array(), "{replies}");
}

/// A batch is bounded (a megabyte of `[1,1,…]` had been answered with 54 MB
/// of errors built in memory) and its request ids are its own: a duplicate
/// id had let one reply count for every call that shared it, and items that
/// never ran (a notification, a fractional id) were counted as calls.
#[test]
fn a_batch_is_bounded_and_counts_only_the_calls_it_ran() {
    let site = TestSite::new("serve-batch-bounds");
    let maddr = format!("127.0.0.1:{}", closed_port());
    let s = Serve::start(&site, &["--metrics-listen", &maddr]);
    let post = |items: Value| s.post(&[("MCP-Protocol-Version", "2025-03-26")], &items);
    let r = post(Value::Array(vec![json!(1); 129]));
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 128"),
        "{}",
        r.text()
    );
    let call = |id: Value, tool: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": tool, "arguments": {}}})
    };
    let r = post(json!([
        call(json!(1), "content_list"),
        call(json!(1), "http_fetch")
    ]));
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("two requests with id 1"), "{}", r.text());
    let r = post(json!([
        call(json!(1), "content_list"),
        {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "http_fetch", "arguments": {}}},
        call(json!(2.5), "content_publish"),
    ]));
    assert_eq!(r.status, 200, "{}", r.text());
    let metrics = request(&maddr, "GET", "/metrics", &[], b"").text();
    assert!(
        metrics.contains("gatehouse_tool_calls_total{tool=\"content_list\",outcome=\"ok\"} 1"),
        "{metrics}"
    );
    for never in ["http_fetch", "content_publish"] {
        assert!(
            !metrics.contains(&format!("tool=\"{never}\"")),
            "{never} never ran: {metrics}"
        );
    }
}

/// Failed authentications are limited per client network (an IPv4 /24, an
/// IPv6 /64), not per address: one address each for 250 made-up keys had
/// run 2,500 argon2 checks without a 429. Addresses come through a trusted
/// proxy here, as they would from many machines.
#[test]
fn failed_authentications_are_rate_limited_per_network() {
    let site = TestSite::new("serve-authrate");
    let (good, _) = site.mint("viewer");
    let s = Serve::start(&site, &["--behind-proxy", "127.0.0.1"]);
    // The last character changed (to one it is not).
    let last = if good.ends_with('x') { 'y' } else { 'x' };
    let bad = format!("{}{last}", &good[..good.len() - 1]);
    let auth = format!("Bearer {bad}");
    let from = |addr: &str| {
        s.post(
            &[
                ("Authorization", &auth),
                ("MCP-Protocol-Version", LEGACY),
                ("X-Forwarded-For", addr),
            ],
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .status
    };
    let statuses: Vec<u16> = (1..=12).map(|i| from(&format!("192.0.2.{i}"))).collect();
    assert!(statuses[..10].iter().all(|s| *s == 401), "{statuses:?}");
    assert_eq!(statuses[11], 429, "{statuses:?}");
    assert_eq!(
        from("198.51.100.1"),
        401,
        "another network has its own limit"
    );
    assert_eq!(from("2001:db8::1"), 401);
    for i in 2..=11 {
        from(&format!("2001:db8::{i:x}"));
    }
    assert_eq!(from("2001:db8::ffff:1"), 429, "one /64 is one network");
}

/// Keyless requests are rated per address, and per /64 for IPv6: a client
/// holds a whole /64, and an address each had let it pass any rate.
#[test]
fn keyless_requests_from_one_ipv6_64_share_one_rate() {
    let site = TestSite::new("serve-keyless-v6");
    let s = Serve::start(&site, &["--behind-proxy", "127.0.0.1", "--rate", "1"]);
    let from = |addr: &str| {
        s.post(
            &[("MCP-Protocol-Version", LEGACY), ("X-Forwarded-For", addr)],
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .status
    };
    let statuses: Vec<u16> = (1..=6).map(|i| from(&format!("2001:db8::{i:x}"))).collect();
    assert_eq!(&statuses[..2], [200, 200], "{statuses:?}");
    assert!(statuses[2..].iter().all(|s| *s == 429), "{statuses:?}");
    assert_eq!(from("2001:db8:0:1::1"), 200, "another /64 has its own");
    // IPv4 stays per address (an office's NAT is many clients).
    let v4: Vec<u16> = (1..=4).map(|i| from(&format!("192.0.2.{i}"))).collect();
    assert!(v4.iter().all(|s| *s == 200), "{v4:?}");
}

/// Made-up keys sent all at once must not each run argon2 (19 MiB and tens
/// of milliseconds apiece): checked first and counted after, a hundred
/// concurrent ones all passed the address's limit and took a server to
/// 2 GB. A key the server already verified still goes through meanwhile.
/// How many argon2 verifications the server ran, as its `/metrics` on
/// `maddr` says, and that text.
fn key_verifications(maddr: &str) -> (u64, String) {
    let metrics = request(maddr, "GET", "/metrics", &[], b"").text();
    let runs = metrics
        .lines()
        .find_map(|l| l.strip_prefix("gatehouse_key_verifications_total "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no verification count in {metrics}"));
    (runs, metrics)
}

#[test]
fn concurrent_made_up_keys_run_argon2_no_more_than_the_limit_allows() {
    let site = TestSite::new("serve-authrate-burst");
    let (good, _) = site.mint("viewer");
    let port = closed_port();
    let maddr = format!("127.0.0.1:{port}");
    let s = Serve::start(&site, &["--metrics-listen", &maddr]);
    assert_eq!(s.legacy(Some(&good), "tools/list", json!({})).status, 200);
    // Well-formed keys (the checksum holds) with ids nobody minted: each
    // would be verified against the dummy hash.
    let made_up: Vec<String> = (0..60)
        .map(|_| {
            gatehouse_core::access::keys::generate()
                .1
                .expose()
                .to_string()
        })
        .collect();
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let workers: Vec<_> = made_up
            .iter()
            .map(|k| scope.spawn(|| s.legacy(Some(k), "tools/list", json!({})).status))
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let refused = statuses.iter().filter(|s| **s == 401).count();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(refused + limited, statuses.len(), "{statuses:?}");
    assert!(
        refused <= 10,
        "{refused} argon2 runs past a burst of 10: {statuses:?}"
    );
    let (runs, metrics) = key_verifications(&maddr);
    assert!(runs <= 11, "{runs} verifications: {metrics}");
    // The verified key is not locked out by what others from its address did.
    assert_eq!(s.legacy(Some(&good), "tools/list", json!({})).status, 200);
}

/// A client's first requests with a key the server has not verified yet,
/// sent together, share one verification: they had each paid the network's
/// failed-authentication limit before argon2 (and run argon2), so a valid
/// key's thirtieth first request got 429.
#[test]
fn concurrent_first_requests_with_one_key_share_its_one_verification() {
    let site = TestSite::new("serve-first-burst");
    let (good, _) = site.mint("viewer");
    let port = closed_port();
    let maddr = format!("127.0.0.1:{port}");
    let s = Serve::start(&site, &["--metrics-listen", &maddr]);
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..30)
            .map(|_| scope.spawn(|| s.legacy(Some(&good), "tools/list", json!({})).status))
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let (runs, metrics) = key_verifications(&maddr);
    assert_eq!(runs, 1, "{metrics}");
}

#[test]
fn sigterm_under_load_finishes_and_audits_every_accepted_call() {
    let site = TestSite::new("serve-drain");
    let (key, id) = site.mint("viewer");
    let s = Serve::start(&site, &[]);
    let addr = s.addr.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (addr, key, stop) = (addr.clone(), key.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut ok = 0;
                let auth = format!("Bearer {key}");
                let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "content_read", "arguments": {"slug": "welcome"}}}))
                .unwrap();
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let Ok(mut c) = std::net::TcpStream::connect(&addr) else { break };
                    use std::io::{Read, Write};
                    let head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nMCP-Protocol-Version: {LEGACY}\r\nAuthorization: {auth}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
                    if c.write_all(head.as_bytes()).and_then(|_| c.write_all(&body)).is_err() {
                        break;
                    }
                    let mut raw = Vec::new();
                    let _ = c.read_to_end(&mut raw);
                    if raw.starts_with(b"HTTP/1.1 200") && raw.windows(15).any(|w| w == b"\"isError\":false") {
                        ok += 1;
                    }
                }
                ok
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let status = s.terminate();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let answered: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    assert!(status.success(), "{status:?}");
    assert!(answered > 0);
    let calls: Vec<Value> = tool_calls(&site)
        .into_iter()
        .filter(|e| e["actor"] == format!("key:{id}"))
        .collect();
    let ok = calls
        .iter()
        .filter(|e| {
            serde_json::from_str::<Value>(e["detail"].as_str().unwrap_or("{}")).unwrap()["outcome"]
                == "ok"
        })
        .count();
    assert_eq!(
        ok, answered,
        "every answered call has its entry, and no more succeeded"
    );
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}

#[test]
fn metrics_are_served_on_their_own_listener_without_client_values() {
    let site = TestSite::new("serve-metrics");
    let port = closed_port();
    let maddr = format!("127.0.0.1:{port}");
    let s = Serve::start(&site, &["--metrics-listen", &maddr]);
    s.legacy(
        None,
        "tools/call",
        json!({"name": "content_read", "arguments": {"slug": "welcome"}}),
    );
    s.legacy(
        None,
        "tools/call",
        json!({"name": "no_such_tool_secret123", "arguments": {}}),
    );
    s.legacy(Some("gatehouse_sk_bad"), "tools/list", json!({}));
    // A batch's calls count one by one, as sent alone.
    let read = |id: u32| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "content_read", "arguments": {"slug": "welcome"}}});
    let r = s.post(
        &[("MCP-Protocol-Version", "2025-03-26")],
        &json!([read(1), read(2), {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}]),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = request(&maddr, "GET", "/metrics", &[], b"");
    assert_eq!(r.status, 200);
    let text = r.text();
    assert!(
        text.contains("gatehouse_tool_calls_total{tool=\"content_read\",outcome=\"ok\"} 3"),
        "{text}"
    );
    assert!(
        text.contains("gatehouse_http_auth_failures_total 1"),
        "{text}"
    );
    assert!(!text.contains("secret123"), "{text}");
    assert_eq!(request(&s.addr, "GET", "/metrics", &[], b"").status, 404);
}

/// The metrics name rate-limited keys: a page that rebinds its own name to
/// this address must not read them (a foreign `Host`, any `Origin`), and
/// idle connections to it are bounded, never the process's descriptors
/// that `/mcp` needs (twenty thousand of them stopped `/mcp` before).
#[test]
fn the_metrics_listener_refuses_foreign_hosts_and_bounds_its_connections() {
    let site = TestSite::new("serve-metrics-guard");
    let port = closed_port();
    let maddr = format!("127.0.0.1:{port}");
    let s = Serve::start(&site, &["--metrics-listen", &maddr]);
    let get = |headers: &[(&str, &str)]| request(&maddr, "GET", "/metrics", headers, b"").status;
    assert_eq!(get(&[]), 200);
    assert_eq!(get(&[("Host", &format!("localhost:{port}"))]), 200);
    assert_eq!(
        get(&[("Host", &format!("rebind.evil.example:{port}"))]),
        403
    );
    assert_eq!(get(&[("Origin", "http://evil.example")]), 403);

    use std::io::{Read, Write};
    // The connections above give their slots back as their tasks end.
    std::thread::sleep(Duration::from_millis(300));
    // One network holds a quarter of the 16 connections (sixteen idle ones,
    // renewed as they timed out, had kept every scraper out).
    let idle: Vec<std::net::TcpStream> = (0..4)
        .map(|_| std::net::TcpStream::connect(&maddr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut extra = std::net::TcpStream::connect(&maddr).unwrap();
    extra
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let _ = extra.write_all(format!("GET /metrics HTTP/1.1\r\nHost: {maddr}\r\n\r\n").as_bytes());
    let mut got = Vec::new();
    let _ = extra.read_to_end(&mut got);
    assert!(got.is_empty(), "a connection past the bound was served");
    assert_eq!(s.legacy(None, "tools/list", json!({})).status, 200);
    drop(idle);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(get(&[]), 200);
}

// --- Many instances on one database ---

#[test]
fn two_instances_on_one_database_share_revocations_and_the_audit_chain() {
    // One database: PostgreSQL under GATEHOUSE_TEST_PG_URL, else the SQLite file.
    let site = TestSite::new("serve-two");
    let (key, id) = site.mint("viewer");
    let (other, _) = site.mint("viewer");
    let a = Serve::start(&site, &[]);
    let b = Serve::start(&site, &[]);
    let call = json!({"name": "content_read", "arguments": {"slug": "welcome"}});
    let mut answered = 0;
    for i in 0..20 {
        let s = if i % 2 == 0 { &a } else { &b };
        let r = s.legacy(Some(&key), "tools/call", call.clone());
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["result"]["isError"], false);
        answered += 1;
    }
    // Revoked through one instance's database, refused by the other at once.
    site.ok(&["keys", "revoke", &id]);
    for s in [&b, &a] {
        let r = s.legacy(Some(&key), "tools/call", call.clone());
        assert_eq!(r.status, 401, "{}", r.text());
    }
    assert_eq!(b.legacy(Some(&other), "tools/list", json!({})).status, 200);
    let calls: Vec<Value> = tool_calls(&site)
        .into_iter()
        .filter(|e| e["actor"] == format!("key:{id}"))
        .collect();
    assert_eq!(calls.len(), answered);
    assert_eq!(a.terminate().code(), Some(0));
    assert_eq!(b.terminate().code(), Some(0));
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}

// --- TLS ---

/// A self-signed certificate for 127.0.0.1 and localhost, written over `dir/cert.pem`
/// and `dir/key.pem`.
#[cfg(unix)]
pub(crate) fn self_signed(dir: &std::path::Path, name: &str) {
    let out = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
        ])
        .args([
            "-subj",
            &format!("/CN={name}"),
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("cert.pem"))
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::copy(dir.join("cert.pem"), dir.join(format!("{name}.pem"))).unwrap();
}

/// curl with only `ca` trusted; the HTTP status, or None when TLS failed.
#[cfg(unix)]
fn curl_status(ca: &std::path::Path, url: &str, body: Option<&str>) -> Option<u16> {
    let mut cmd = std::process::Command::new("curl");
    cmd.args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert"])
        .arg(ca);
    if let Some(b) = body {
        cmd.args([
            "-H",
            "Content-Type: application/json",
            "-H",
            &format!("MCP-Protocol-Version: {LEGACY}"),
            "--data",
            b,
        ]);
    }
    let out = cmd.arg(url).output().expect("curl runs");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).parse().unwrap())
}

// SIGHUP: Unix only.
#[cfg(unix)]
#[test]
fn tls_serves_with_the_given_certificate_and_rereads_it_on_sighup() {
    let site = TestSite::new("serve-tls");
    let tmp = tempfile::tempdir().unwrap();
    self_signed(tmp.path(), "first");
    let cert = tmp.path().join("cert.pem");
    let key = tmp.path().join("key.pem");
    let s = Serve::start(
        &site,
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    let first = tmp.path().join("first.pem");
    let base = format!("https://{}", s.addr);
    assert_eq!(
        curl_status(&first, &format!("{base}/healthz"), None),
        Some(200)
    );
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    assert_eq!(
        curl_status(&first, &format!("{base}/mcp"), Some(list)),
        Some(200)
    );
    // Plain HTTP on the TLS port is not served.
    assert_eq!(
        curl_status(&first, &format!("http://{}/healthz", s.addr), None),
        None
    );
    // A renewed certificate, then SIGHUP: new connections get it.
    self_signed(tmp.path(), "second");
    s.signal(nix::sys::signal::Signal::SIGHUP);
    let second = tmp.path().join("second.pem");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while curl_status(&second, &format!("{base}/healthz"), None) != Some(200) {
        assert!(
            std::time::Instant::now() < deadline,
            "the certificate was not reread: {}",
            s.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(curl_status(&first, &format!("{base}/healthz"), None), None);
    // Broken files on the next SIGHUP keep the running certificate.
    std::fs::write(&cert, "not a certificate").unwrap();
    s.signal(nix::sys::signal::Signal::SIGHUP);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        curl_status(&second, &format!("{base}/healthz"), None),
        Some(200)
    );
    assert!(
        s.stderr().contains("TLS_INVALID") || s.stderr().contains("TLS reload failed"),
        "{}",
        s.stderr()
    );
}

#[test]
fn the_default_key_rate_comes_from_gatehouse_toml() {
    let site = TestSite::new("serve-toml-rate");
    let (key, _) = site.mint("viewer");
    let toml = site.path().join("gatehouse.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, format!("{text}\n[serve]\nrate_per_key = 1\n")).unwrap();
    let s = Serve::start(&site, &[]);
    let statuses: Vec<u16> = (0..4)
        .map(|_| s.legacy(Some(&key), "tools/list", json!({})).status)
        .collect();
    assert_eq!(statuses[..2], [200, 200], "{statuses:?}");
    assert!(statuses[2..].contains(&429), "{statuses:?}");
    drop(s);
    std::fs::write(&toml, format!("{text}\n[serve]\nrate_per_key = -1\n")).unwrap();
    let f = site.fails(&["serve", "--listen", "127.0.0.1:0"]);
    assert_eq!(f.code, "SITE_CONFIG_INVALID");
    assert!(f.stderr.contains("rate_per_key"), "{}", f.stderr);
    // The flag is checked by the same rule.
    std::fs::write(&toml, &text).unwrap();
    let f = site.fails(&["serve", "--listen", "127.0.0.1:0", "--rate=-1"]);
    assert_eq!(f.code, "INPUT_INVALID");
    assert!(f.stderr.contains("--rate"), "{}", f.stderr);
}
