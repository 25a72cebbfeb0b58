//! `http_fetch` through the real server: the SSRF guard refuses internal
//! addresses (also when a redirect points at one), the allowlist opens a host,
//! and the body is capped.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

use crate::mcp_util::{McpSite, tool_error};
use crate::util::TestSite;
use serde_json::json;

/// A tiny HTTP server on 127.0.0.1: `/big` sends 2 MiB, `/hop` redirects to
/// `target` (if given), anything else says hello.
fn serve(target: Option<String>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap() == 0 || header == "\r\n" {
                    break;
                }
            }
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("/")
                .to_string();
            let (head, body): (String, Vec<u8>) = match (path.as_str(), &target) {
                ("/big", _) => (
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n".into(),
                    vec![b'x'; 2 * 1024 * 1024],
                ),
                ("/hop", Some(t)) => (
                    format!("HTTP/1.1 302 Found\r\nLocation: {t}\r\n"),
                    Vec::new(),
                ),
                _ => (
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n".into(),
                    b"hello from the test server".to_vec(),
                ),
            };
            let _ = stream.write_all(
                format!(
                    "{head}Content-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )
                .as_bytes(),
            );
            let _ = stream.write_all(&body);
        }
    });
    port
}

fn set_allowlist(site: &TestSite, hosts: &str) {
    site.sql(&format!(
        "UPDATE site_config SET value = '{hosts}' WHERE key = 'http_fetch.allowlist'"
    ));
}

#[test]
fn internal_addresses_are_refused_unless_allowlisted() {
    let site = TestSite::new("fetch_guard");
    let port = serve(None);
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    for (i, url) in [
        format!("http://127.0.0.1:{port}/"),
        format!("http://localhost:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://10.0.0.1/".to_string(),
        "http://[::]/".to_string(),
    ]
    .iter()
    .enumerate()
    {
        let err = tool_error(&mcp.call(i as i64 + 1, "http_fetch", json!({"url": url}), None));
        assert_eq!(err["code"], "HTTP_FETCH_BLOCKED", "{url}: {err}");
    }
    for (i, url) in [
        "file:///etc/passwd",
        "ftp://example.com/",
        "http://user:pw@example.com/",
    ]
    .iter()
    .enumerate()
    {
        let err = tool_error(&mcp.call(20 + i as i64, "http_fetch", json!({"url": url}), None));
        assert_eq!(err["code"], "HTTP_FETCH_URL_INVALID", "{url}: {err}");
    }

    // The allowlist is read at call time: no restart needed.
    set_allowlist(&site, "127.0.0.1");
    let ok = mcp.call(
        30,
        "http_fetch",
        json!({"url": format!("http://127.0.0.1:{port}/")}),
        None,
    );
    let r = &ok["result"]["structuredContent"];
    assert_eq!(r["status"], 200, "{ok}");
    assert_eq!(r["body"], "hello from the test server");
    assert_eq!(r["truncated"], false);

    let big = mcp.call(
        31,
        "http_fetch",
        json!({"url": format!("http://127.0.0.1:{port}/big")}),
        None,
    );
    let r = &big["result"]["structuredContent"];
    assert_eq!(r["truncated"], true, "{}", r["bytes"]);
    assert_eq!(r["bytes"], 1024 * 1024);
}

#[test]
fn a_redirect_to_an_internal_address_is_refused() {
    let site = TestSite::new("fetch_redirect");
    let inner = serve(None);
    let outer = serve(Some(format!("http://127.0.0.1:{inner}/")));
    // Only "localhost" is allowed; the redirect target 127.0.0.1 is not.
    set_allowlist(&site, "localhost");
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    let direct = mcp.call(
        1,
        "http_fetch",
        json!({"url": format!("http://localhost:{inner}/")}),
        None,
    );
    assert_eq!(
        direct["result"]["structuredContent"]["status"], 200,
        "{direct}"
    );
    let err = tool_error(&mcp.call(
        2,
        "http_fetch",
        json!({"url": format!("http://localhost:{outer}/hop")}),
        None,
    ));
    assert_eq!(err["code"], "HTTP_FETCH_BLOCKED", "{err}");
}
