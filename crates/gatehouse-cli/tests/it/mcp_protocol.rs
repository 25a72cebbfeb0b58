//! `gatehouse mcp` on the wire: both protocol eras and every kind of malformed
//! input, in raw JSON lines against the real binary.

use crate::mcp_util::{McpSite, modern, modern_meta, tool_error};
use crate::util::TestSite;
use serde_json::{Value, json};

#[test]
fn every_handshake_revision_negotiates_and_serves() {
    let site = TestSite::new("legacy");
    for version in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
        let mut mcp = site.mcp(&[], &[]);
        let init = mcp.initialize(version);
        let result = &init["result"];
        assert_eq!(result["protocolVersion"], version, "{init}");
        assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
        assert_eq!(result["serverInfo"]["name"], "gatehouse");
        assert!(
            result.get("resultType").is_none(),
            "legacy results have no resultType"
        );
        assert_eq!(mcp.request(1, "ping", json!({}))["result"], json!({}));
        let list = mcp.request(2, "tools/list", json!({}));
        assert!(list["result"].get("resultType").is_none());
        assert!(list["result"].get("ttlMs").is_none());
        assert!(list["result"].get("nextCursor").is_none(), "one page");
        // No cursor was issued, so any cursor is invalid (pagination rules).
        let paged = mcp.request(4, "tools/list", json!({"cursor": "page-2"}));
        assert_eq!(paged["error"]["code"], -32602, "{paged}");
        let call = mcp.call(3, "content_read", json!({"slug": "welcome"}), None);
        assert_eq!(call["result"]["isError"], false, "{call}");
        assert_eq!(call["result"]["structuredContent"]["slug"], "welcome");
        assert!(call["result"].get("resultType").is_none());
        assert!(mcp.finish().success());
    }
}

#[test]
fn initialize_with_an_unknown_or_modern_version_falls_back_to_the_newest_handshake() {
    let site = TestSite::new("fallback");
    for asked in ["1999-01-01", "2026-07-28"] {
        let mut mcp = site.mcp(&[], &[]);
        let init = mcp.initialize(asked);
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
        // A second handshake in the same process is refused; the first one stands.
        let again = mcp.request(9, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}));
        assert_eq!(again["error"]["code"], -32600, "{again}");
        assert_eq!(mcp.request(10, "ping", json!({}))["result"], json!({}));
    }
}

#[test]
fn modern_requests_are_served_without_a_handshake() {
    let site = TestSite::new("modern");
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    let d = mcp.request(1, "server/discover", json!({"_meta": modern_meta()}));
    let r = &d["result"];
    assert_eq!(r["resultType"], "complete", "{d}");
    assert_eq!(r["supportedVersions"][0], "2026-07-28");
    assert!(
        r["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2024-11-05"))
    );
    assert_eq!(r["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "gatehouse"
    );
    assert!(r["ttlMs"].is_u64() && r["cacheScope"].is_string());

    let list = mcp.request(2, "tools/list", modern(json!({})));
    assert_eq!(list["result"]["resultType"], "complete");
    assert_eq!(list["result"]["ttlMs"], 0);
    assert_eq!(list["result"]["cacheScope"], "private");

    let call = mcp.call(
        3,
        "content_read",
        json!({"slug": "roadmap-draft"}),
        Some(modern_meta()),
    );
    assert_eq!(call["result"]["resultType"], "complete", "{call}");
    assert_eq!(call["result"]["structuredContent"]["status"], "draft");

    // ping was removed in 2026-07-28.
    let ping = mcp.request(4, "ping", modern(json!({})));
    assert_eq!(ping["error"]["code"], -32601, "{ping}");
    assert!(mcp.finish().success());
}

#[test]
fn unsupported_versions_and_missing_metadata_are_refused_per_request() {
    let site = TestSite::new("versions");
    let mut mcp = site.mcp(&[], &[]);
    let r = mcp.request(
        1,
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "1900-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}),
    );
    assert_eq!(r["error"]["code"], -32022, "{r}");
    assert_eq!(r["error"]["data"]["requested"], "1900-01-01");
    assert_eq!(r["error"]["data"]["supported"][0], "2026-07-28");

    let r = mcp.request(
        2,
        "server/discover",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
    );
    assert_eq!(
        r["error"]["code"], -32602,
        "missing clientCapabilities: {r}"
    );

    let r = mcp.request(3, "tools/list", json!({}));
    assert_eq!(r["error"]["code"], -32602, "no _meta and no handshake: {r}");

    // ping is allowed before initialize in the handshake revisions.
    assert_eq!(mcp.request(4, "ping", json!({}))["result"], json!({}));
    // The same process still serves a handshake client afterwards, and a modern request too.
    assert_eq!(
        mcp.initialize("2025-06-18")["result"]["protocolVersion"],
        "2025-06-18"
    );
    assert_eq!(
        mcp.request(5, "tools/list", modern(json!({})))["result"]["resultType"],
        "complete"
    );
    assert!(
        mcp.request(6, "tools/list", json!({}))["result"]
            .get("resultType")
            .is_none()
    );
    assert!(mcp.finish().success());
}

#[test]
fn malformed_input_gets_the_right_error_and_the_server_keeps_serving() {
    let site = TestSite::new("malformed");
    let mut mcp = site.mcp(&[], &[]);
    mcp.initialize("2025-06-18");
    let cases: Vec<(&[u8], i64, Value)> = vec![
        (b"this is not json", -32700, Value::Null),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1,", -32700, Value::Null),
        (b"\xff\xfe\x00garbage", -32700, Value::Null),
        (b"[]", -32600, Value::Null),
        (br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, -32600, Value::Null),
        (b"42", -32600, Value::Null),
        (br#"{"jsonrpc":"1.0","id":11,"method":"ping"}"#, -32600, json!(11)),
        (br#"{"id":12,"method":"ping"}"#, -32600, json!(12)),
        (br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, -32600, Value::Null),
        (br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#, -32600, Value::Null),
        (br#"{"jsonrpc":"2.0","id":13,"method":7}"#, -32600, json!(13)),
        (br#"{"jsonrpc":"2.0","id":14}"#, -32600, json!(14)),
        (br#"{"jsonrpc":"2.0","id":15,"method":"resources/list"}"#, -32601, json!(15)),
        (br#"{"jsonrpc":"2.0","id":16,"method":"no/such/method","params":{}}"#, -32601, json!(16)),
        (br#"{"jsonrpc":"2.0","id":17,"method":"tools/call","params":[1,2]}"#, -32602, json!(17)),
        (br#"{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{}}"#, -32602, json!(18)),
        (br#"{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"content_list","arguments":"x"}}"#, -32602, json!(19)),
        (br#"{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}"#, -32602, json!(20)),
    ];
    for (i, (line, code, id)) in cases.into_iter().enumerate() {
        mcp.send_raw(line);
        let reply = mcp.recv();
        assert_eq!(reply["jsonrpc"], "2.0");
        assert_eq!(
            reply["error"]["code"],
            code,
            "case {i} {:?}: {reply}",
            String::from_utf8_lossy(line)
        );
        assert_eq!(reply["id"], id, "case {i}: {reply}");
        assert_eq!(
            mcp.request(1000 + i as i64, "ping", json!({}))["result"],
            json!({}),
            "still serving after case {i}"
        );
    }

    // An oversized message (over the 4 MiB line limit) is refused without being buffered.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{{"name":"content_search","arguments":{{"query":"{}"}}}}}}"#,
        "a".repeat(5 * 1024 * 1024)
    );
    mcp.send_raw(huge.as_bytes());
    let reply = mcp.recv();
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit")
    );
    assert_eq!(mcp.request(2000, "ping", json!({}))["result"], json!({}));

    // Notifications, known or not, and stray responses get no reply.
    mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}}));
    mcp.send(&json!({"jsonrpc": "2.0", "id": "r1", "result": {}}));
    mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 12345}}));
    let next = mcp.request(2001, "ping", json!({}));
    assert_eq!(
        next["id"], 2001,
        "nothing answered the notifications: {next}"
    );
    assert!(mcp.finish().success());
}

#[test]
fn schema_invalid_tool_arguments_are_tool_errors() {
    let site = TestSite::new("badargs");
    let mut mcp = site.mcp(&["--role", "admin"], &[]);
    mcp.initialize("2025-11-25");
    for (i, (tool, args)) in [
        ("content_read", json!({})),
        ("content_read", json!({"slug": 5})),
        ("content_list", json!({"limit": 0})),
        ("content_list", json!({"limit": 10, "surprise": true})),
        ("content_search", json!({"query": "x", "limit": 1000})),
        ("media_write", json!({"filename": "a.png"})),
        // No text column holds U+0000 (PostgreSQL refuses it outright: this
        // was a storage error there, after the tool ran).
        ("content_read", json!({"slug": "wel\u{0}come"})),
        (
            "content_write_draft",
            json!({"slug": "nul", "title": "Nul", "body": "a\u{0}b"}),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let r = mcp.call(i as i64 + 1, tool, args.clone(), None);
        let err = tool_error(&r);
        assert_eq!(err["code"], "TOOL_ARGUMENTS_INVALID", "{tool} {args}: {r}");
    }
    let r = mcp.call(50, "content_list", json!({}), None);
    assert_eq!(r["result"]["isError"], false);
    let r = mcp.call(51, "content_read", json!({"slug": "nul"}), None);
    assert_eq!(tool_error(&r)["code"], "CONTENT_NOT_FOUND", "{r}");
    assert!(mcp.finish().success());
}

#[test]
fn batches_are_answered_only_where_the_revision_has_them() {
    let site = TestSite::new("batch");
    let mut mcp = site.mcp(&[], &[]);
    mcp.initialize("2025-03-26");
    mcp.send_raw(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":2,"method":"nope"}]"#);
    let reply = mcp.recv();
    let items = reply
        .as_array()
        .unwrap_or_else(|| panic!("a batch reply: {reply}"));
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["id"], 1);
    assert_eq!(items[1]["error"]["code"], -32601);
    assert!(mcp.finish().success());
}

#[test]
fn a_cancelled_subscription_gets_no_reply_and_open_ones_close_gracefully() {
    let site = TestSite::new("listen");
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    for id in [10, 11] {
        mcp.send(&json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
            "params": modern(json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}}))}));
        let ack = mcp.notification("notifications/subscriptions/acknowledged");
        assert_eq!(
            ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            id
        );
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true})
        );
    }
    mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 10}}));
    // The listen method does not exist for handshake clients.
    mcp.initialize("2025-11-25");
    let r = mcp.request(
        12,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    assert_eq!(r["error"]["code"], -32601, "{r}");
    mcp.close_stdin();
    let rest = mcp.drain();
    let ids: Vec<&Value> = rest.iter().filter_map(|m| m.get("id")).collect();
    assert_eq!(
        ids,
        [&json!(11)],
        "only the open subscription is answered: {rest:?}"
    );
    let last = rest.iter().find(|m| m["id"] == 11).unwrap();
    assert_eq!(last["result"]["resultType"], "complete");
    assert_eq!(
        last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        11
    );
}
