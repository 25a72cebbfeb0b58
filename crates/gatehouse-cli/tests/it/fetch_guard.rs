//! The `http_fetch` guard against the forms an attack run got through: IPv6
//! addresses that embed an internal IPv4 one, allowlist entries with a port,
//! and error text that told a closed port from a filtered one.

use std::io::{Read, Write};
use std::net::TcpListener;

use serde_json::{Value, json};

use crate::mcp_util::{McpSite, tool_error};
use crate::util::{TestSite, closed_port};

/// Answers every connection with a small 200 response.
fn hello_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { break };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            );
        }
    });
    port
}

fn fetch(site: &TestSite, urls: &[String]) -> Vec<Value> {
    let mut m = site.mcp(&["--email", "viewer@example.com"], &[]);
    m.initialize("2025-06-18");
    urls.iter()
        .enumerate()
        .map(|(i, url)| m.call(i as i64 + 1, "http_fetch", json!({"url": url}), None))
        .collect()
}

#[test]
fn ipv6_forms_that_embed_an_internal_ipv4_address_are_refused() {
    let site = TestSite::new("fetch_v6_embedded");
    let port = hello_server();
    let urls: Vec<String> = [
        "[::ffff:0:127.0.0.1]",
        "[::ffff:0:7f00:1]",
        "[64:ff9b:1::7f00:1]",
        "[64:ff9b:1:ffff::a00:1]",
        "[2001:db9::5efe:127.0.0.1]",
        "[::ffff:127.0.0.1]",
    ]
    .iter()
    .map(|h| format!("http://{h}:{port}/"))
    .collect();
    for (url, r) in urls.iter().zip(fetch(&site, &urls)) {
        let e = tool_error(&r);
        assert_eq!(e["code"], "HTTP_FETCH_BLOCKED", "{url}: {e}");
    }
}

#[test]
fn an_allowlist_entry_with_a_port_opens_that_port_only() {
    let site = TestSite::new("fetch_allow_port");
    let port = hello_server();
    let other = hello_server();
    site.ok(&[
        "site",
        "config",
        "set",
        "http_fetch.allowlist",
        &format!("127.0.0.1:{port}"),
    ]);
    let r = fetch(
        &site,
        &[
            format!("http://127.0.0.1:{port}/"),
            format!("http://127.0.0.1:{other}/"),
        ],
    );
    assert_eq!(
        r[0]["result"]["structuredContent"]["body"], "hello",
        "{}",
        r[0]
    );
    assert_eq!(tool_error(&r[1])["code"], "HTTP_FETCH_BLOCKED");
}

#[test]
fn a_refused_port_and_an_unreachable_host_read_the_same() {
    let site = TestSite::new("fetch_no_scan");
    site.ok(&[
        "site",
        "config",
        "set",
        "http_fetch.allowlist",
        "127.0.0.1, 192.0.2.1",
    ]);
    let port = closed_port();
    let r = fetch(
        &site,
        &[
            format!("http://127.0.0.1:{port}/"),
            "http://192.0.2.1:81/".to_string(),
        ],
    );
    for (r, host) in r.iter().zip(["127.0.0.1", "192.0.2.1"]) {
        let e = tool_error(r);
        assert_eq!(e["code"], "HTTP_FETCH_FAILED", "{e}");
        assert_eq!(e["message"], format!("could not connect to {host}"), "{e}");
        let text = e.to_string().to_lowercase();
        for tell in ["refused", "timed out", "timeout", "unreachable", "os error"] {
            assert!(!text.contains(tell), "{tell:?} shows: {e}");
        }
    }
    // Nor in how long it takes: a refused port (answered at once by the
    // kernel) is reported only when an unreachable host's connect would have
    // timed out (5 s), so timing cannot scan ports either.
    let started = std::time::Instant::now();
    let r = fetch(&site, &[format!("http://127.0.0.1:{port}/")]);
    let took = started.elapsed();
    assert_eq!(tool_error(&r[0])["code"], "HTTP_FETCH_FAILED");
    assert!(
        took >= std::time::Duration::from_millis(4_500),
        "a refused port answered after {took:?}"
    );
}
