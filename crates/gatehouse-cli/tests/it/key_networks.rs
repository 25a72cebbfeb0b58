//! A key's client networks (`keys restrict --from`) on `gatehouse serve`,
//! behind a trusted proxy too, and where each key was last used from
//! (`keys list --usage`): stdio with the client's name, HTTP with the address.

use serde_json::{Value, json};

use crate::mcp_util::McpSite;
use crate::serve_util::Serve;
use crate::util::TestSite;

fn mint(site: &TestSite, from: &str) -> (String, String) {
    let v = site.ok_json(&[
        "keys", "mint", "--label", "net", "--roles", "viewer", "--from", from, "--json",
    ]);
    (
        v["key"].as_str().unwrap().to_string(),
        v["id"].as_str().unwrap().to_string(),
    )
}

fn list_status(serve: &Serve, key: &str, forwarded: Option<&str>) -> (u16, Value) {
    let auth = format!("Bearer {key}");
    let mut headers = vec![
        ("MCP-Protocol-Version", "2025-06-18"),
        ("Authorization", auth.as_str()),
    ];
    if let Some(f) = forwarded {
        headers.push(("X-Forwarded-For", f));
    }
    let r = serve.post(
        &headers,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
    );
    (
        r.status,
        serde_json::from_slice(&r.body).unwrap_or(Value::Null),
    )
}

fn usage(site: &TestSite, id: &str) -> Value {
    let list = site.ok_json(&["keys", "list", "--usage", "--json"]);
    list.as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == id)
        .unwrap()["usage"]
        .clone()
}

#[test]
fn key_from_another_network_is_refused_and_audited() {
    let site = TestSite::new("key_networks");
    let f = site.fails(&[
        "keys",
        "mint",
        "--label",
        "x",
        "--roles",
        "viewer",
        "--from",
        "10.0.0.0/33",
    ]);
    assert_eq!(f.code, "KEY_RESTRICTION_INVALID", "{}", f.stderr);
    let (far, far_id) = mint(&site, "10.0.0.0/8");
    let (near, near_id) = mint(&site, "127.0.0.0/8,::1");
    let serve = Serve::start(&site, &[]);
    let (status, body) = list_status(&serve, &far, None);
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["error"]["data"]["code"], "KEY_NETWORK_NOT_ALLOWED",
        "{body}"
    );
    assert!(
        body["error"]["data"]["hint"]
            .as_str()
            .unwrap()
            .contains("10.0.0.0/8"),
        "{body}"
    );
    // A forwarded address from an untrusted peer changes nothing.
    assert_eq!(list_status(&serve, &far, Some("10.1.2.3")).0, 403);
    let (status, body) = list_status(&serve, &near, None);
    assert_eq!(status, 200, "{body}");
    let r = serve.legacy(
        Some(&near),
        "tools/call",
        json!({"name": "content_read", "arguments": {"slug": "welcome"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let log = site.ok_json(&["audit", "list", "--limit", "100", "--json"]);
    let refused: Vec<&Value> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "key.network_refused")
        .collect();
    assert_eq!(refused.len(), 2, "{log}");
    assert!(
        refused.iter().all(|e| e["actor"] == format!("key:{far_id}")
            && e["detail"].to_string().contains("127.0.0.1"))
    );
    // Usage: the HTTP call's address.
    assert_eq!(usage(&site, &near_id)["last_from"], "127.0.0.1");
    drop(serve);

    // Behind a trusted proxy the forwarded address decides.
    let serve = Serve::start(&site, &["--behind-proxy", "127.0.0.1"]);
    assert_eq!(list_status(&serve, &far, Some("10.1.2.3")).0, 200);
    assert_eq!(list_status(&serve, &near, Some("10.1.2.3")).0, 403);
    let r = serve.post(
        &[
            ("MCP-Protocol-Version", "2025-06-18"),
            ("Authorization", &format!("Bearer {far}")),
            ("X-Forwarded-For", "10.1.2.3"),
        ],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "content_read", "arguments": {"slug": "welcome"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(usage(&site, &far_id)["last_from"], "10.1.2.3");
    drop(serve);

    // stdio is local: the network restriction does not apply, and the usage
    // names the client.
    let mut mcp = site.mcp(&[], &[("GATEHOUSE_API_KEY", far.as_str())]);
    mcp.initialize("2025-06-18");
    let r = mcp.call(1, "content_read", json!({"slug": "welcome"}), None);
    assert!(r["result"]["isError"] != true, "{r}");
    mcp.close_stdin();
    mcp.finish();
    let u = usage(&site, &far_id);
    assert_eq!(u["last_from"], "stdio raw-test", "{u}");
    let table = site.ok(&["keys", "list", "--usage"]);
    assert!(
        table.contains("stdio raw-test") && table.contains("127.0.0.1"),
        "{table}"
    );
}

/// On a dual-stack listener (`[::]`) an IPv4 proxy connects as
/// `::ffff:127.0.0.1`: it is still the trusted proxy, so the forwarded
/// address decides (it had been taken for the client, which let a key
/// `--from` the proxy's own network in from anywhere and refused the rest).
#[test]
fn a_trusted_ipv4_proxy_is_recognised_on_a_dual_stack_listener() {
    let site = TestSite::new("key_networks_dual_stack");
    let (far, _) = mint(&site, "10.0.0.0/8");
    let (near, _) = mint(&site, "127.0.0.0/8");
    let serve = Serve::start_on(&site, "[::]:0", &["--behind-proxy", "127.0.0.1"]);
    let port = serve.addr.rsplit(':').next().unwrap();
    let v4 = format!("127.0.0.1:{port}");
    let status = |key: &str, forwarded: &str| {
        let auth = format!("Bearer {key}");
        crate::serve_util::request(
            &v4,
            "POST",
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("MCP-Protocol-Version", "2025-06-18"),
                ("Authorization", &auth),
                ("X-Forwarded-For", forwarded),
            ],
            br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}"#,
        )
        .status
    };
    assert_eq!(
        status(&near, "203.0.113.9"),
        403,
        "the proxy's network is not the client's"
    );
    assert_eq!(status(&far, "10.1.2.3"), 200);
}
