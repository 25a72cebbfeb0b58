//! Every tool call gets its audit entry, however it ends: a call whose entry
//! cannot be committed returns an error instead of its result, and a call cut
//! short (cancelled by the client, or stdin closed while it runs) is recorded
//! with the outcome it reached.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::sync::mpsc;

use serde_json::{Value, json};

use crate::mcp_util::{McpSite, tool_error, wait_exit};
use crate::util::TestSite;

/// An HTTP server that reads one request, reports it on the channel, and
/// never answers (the connection stays open until the test ends).
pub(crate) fn black_hole() -> (u16, mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { break };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let _ = tx.send(());
            held.push(stream);
        }
    });
    (port, rx)
}

fn tool_calls(site: &TestSite) -> Vec<Value> {
    site.audit()
        .into_iter()
        .filter(|e| e["action"] == "mcp.tool_call")
        .collect()
}

fn detail(e: &Value) -> Value {
    serde_json::from_str(e["detail"].as_str().unwrap()).unwrap()
}

#[test]
fn a_cancelled_http_fetch_that_reached_its_target_is_audited() {
    let site = TestSite::new("fail_closed_cancel");
    let (port, reached) = black_hole();
    site.sql("UPDATE site_config SET value = '127.0.0.1' WHERE key = 'http_fetch.allowlist'");
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    mcp.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "http_fetch", "arguments": {"url": format!("http://127.0.0.1:{port}/x")}}}));
    reached
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the fetch reached its target");
    mcp.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "test"}}),
    );
    // A later request is answered, so the cancel was handled.
    let pong = mcp.request(8, "ping", json!({}));
    assert!(pong.get("result").is_some(), "{pong}");
    let status = mcp.finish();
    assert!(status.success());
    let calls = tool_calls(&site);
    let fetch = calls
        .iter()
        .find(|e| e["subject"] == "http_fetch")
        .unwrap_or_else(|| panic!("no audit entry for the cancelled fetch: {calls:?}"));
    assert_eq!(detail(fetch)["outcome"], "cancelled", "{fetch}");
}

#[test]
fn a_call_interrupted_by_the_end_of_input_is_audited() {
    let site = TestSite::new("fail_closed_eof");
    let (port, reached) = black_hole();
    site.sql("UPDATE site_config SET value = '127.0.0.1' WHERE key = 'http_fetch.allowlist'");
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    mcp.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "http_fetch", "arguments": {"url": format!("http://127.0.0.1:{port}/x")}}}));
    reached
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the fetch reached its target");
    mcp.close_stdin();
    // Past the drain bound the call is answered, not left without a reply.
    let reply = mcp.response(&json!(7));
    cut_by_the_stop(&reply, json!(7));
    let status = wait_exit(&mut mcp.child);
    assert!(status.success(), "{}", mcp.stderr());
    let calls = tool_calls(&site);
    let fetch = calls
        .iter()
        .find(|e| e["subject"] == "http_fetch")
        .unwrap_or_else(|| panic!("no audit entry for the interrupted fetch: {calls:?}"));
    assert_eq!(detail(fetch)["outcome"], "interrupted", "{fetch}");
    assert_eq!(detail(fetch)["code"], "SERVER_EXITED", "{fetch}");
}

/// The answer to a running read-only call cut short by a stopping server:
/// a JSON-RPC error with the stable code, saying the server is shutting down
/// and that the call, a read, failed rather than left an unknown outcome.
fn cut_by_the_stop(reply: &Value, id: Value) {
    assert_eq!(reply["id"], id, "{reply}");
    let error = &reply["error"];
    assert_eq!(error["code"], -32000, "{reply}");
    assert_eq!(error["data"]["code"], "SERVER_EXITED", "{reply}");
    assert_eq!(
        error["data"]["detail"]["reason"], "server_stopping",
        "{reply}"
    );
    assert_eq!(error["data"]["detail"]["outcome"], "failed", "{reply}");
    assert!(
        error["message"].as_str().unwrap().contains("shutting down"),
        "{reply}"
    );
}

/// `gatehouse serve`, SIGTERM while a call (not held) is still running past
/// `--drain`: its client gets the shutdown error as a JSON answer instead of
/// a cut connection, and the call's entry says `interrupted`.
#[cfg(unix)]
#[test]
fn a_running_http_call_cut_by_sigterm_is_answered_with_a_shutdown_error_not_a_cut_connection() {
    use crate::serve_util::{Serve, try_legacy};
    let site = TestSite::new("fail_closed_serve_term");
    let (port, reached) = black_hole();
    site.sql("UPDATE site_config SET value = '127.0.0.1' WHERE key = 'http_fetch.allowlist'");
    let (key, key_id) = site.mint("viewer");
    let serve = Serve::start(&site, &["--drain", "1"]);
    let (addr, k) = (serve.addr.clone(), key.clone());
    let waiting = std::thread::spawn(move || {
        try_legacy(
            &addr,
            Some(&k),
            9,
            "tools/call",
            json!({"name": "http_fetch", "arguments": {"url": format!("http://127.0.0.1:{port}/x")}}),
        )
    });
    reached
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the fetch reached its target");
    let status = serve.terminate();
    assert!(status.success(), "{status}");
    let reply = waiting
        .join()
        .unwrap()
        .expect("the running call's client got an answer, not a cut connection");
    assert_eq!(reply.status, 200, "{}", reply.text());
    cut_by_the_stop(&reply.json(), json!(9));
    let calls = tool_calls(&site);
    let fetch: Vec<&Value> = calls
        .iter()
        .filter(|e| e["subject"] == "http_fetch" && e["actor"] == format!("key:{key_id}"))
        .collect();
    assert_eq!(fetch.len(), 1, "{calls:?}");
    assert_eq!(detail(fetch[0])["outcome"], "interrupted", "{fetch:?}");
    assert_eq!(detail(fetch[0])["code"], "SERVER_EXITED", "{fetch:?}");
    let verified = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(verified["ok"], true, "{verified}");
}

#[test]
fn a_read_whose_audit_entry_cannot_be_written_returns_an_error_not_its_result() {
    let site = TestSite::new("fail_closed_locked");
    if site.db_file().is_none() {
        // PostgreSQL waits for a row lock without a busy timeout; the bound
        // per call is tested in database_errors.
        return;
    }
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    let before = mcp.call(1, "content_read", json!({"slug": "welcome"}), None);
    assert!(
        before["result"]["structuredContent"]["body"].is_string(),
        "{before}"
    );

    // Another process holds the write lock (WAL readers still read).
    let locker = site.hold_audit_writes();

    let during = mcp.call(2, "content_read", json!({"slug": "welcome"}), None);
    let err = tool_error(&during);
    assert_eq!(err["code"], "DATABASE_LOCKED", "{during}");
    assert!(
        !during.to_string().contains("visible to everyone"),
        "the result must be withheld: {during}"
    );
    locker.release("");
    assert!(mcp.finish().success());
    // The refused call left no entry, and the chain is intact.
    assert_eq!(tool_calls(&site).len(), 1);
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}

/// An outbound request is recorded before it is sent: with the audit log
/// unwritable, `http_fetch` sends nothing and answers the error. The request
/// had left (a leak through its URL) and only the answer was withheld.
#[test]
fn an_http_fetch_whose_entry_cannot_be_written_is_never_sent() {
    let site = TestSite::new("fail_closed_fetch");
    if site.db_file().is_none() {
        // As above: the lock that stands in for an unwritable log is SQLite's.
        return;
    }
    // A target that answers at once and reports each request.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, reached) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut line = String::new();
            let _ = BufReader::new(stream.try_clone().unwrap()).read_line(&mut line);
            let _ = tx.send(line);
            let _ = std::io::Write::write_all(
                &mut stream,
                b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
            );
        }
    });
    site.sql("UPDATE site_config SET value = '127.0.0.1' WHERE key = 'http_fetch.allowlist'");
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    let locker = site.hold_audit_writes();
    let url = format!("http://127.0.0.1:{port}/exfil?secret=s3cr3t");
    let during = mcp.call(2, "http_fetch", json!({"url": url}), None);
    let err = tool_error(&during);
    assert_eq!(err["code"], "DATABASE_LOCKED", "{during}");
    assert!(
        reached
            .recv_timeout(std::time::Duration::from_millis(500))
            .is_err(),
        "the request was sent without its entry"
    );
    locker.release("");
    assert!(mcp.finish().success());
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}

/// The `mcp.tool_call` entries of `tool`, as their details.
fn entries_of(site: &TestSite, tool: &str) -> Vec<Value> {
    tool_calls(site)
        .iter()
        .filter(|e| e["subject"] == tool)
        .map(detail)
        .collect()
}

/// A call cancelled while its entry waits for the database (another process
/// holds the write lock) has one entry: the one it had handed over, written
/// once the lock is gone. It had two, `ok` and `cancelled`.
#[test]
fn a_call_cancelled_while_its_entry_waits_for_the_database_has_one_entry() {
    let site = TestSite::new("fail_closed_cancel_waiting");
    if site.db_file().is_none() {
        return; // The SQLite write lock is what the entry waits for here.
    }
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    let locker = site.hold_audit_writes();
    mcp.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "content_list", "arguments": {}}}));
    std::thread::sleep(std::time::Duration::from_millis(1500));
    mcp.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7}}),
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    locker.release("");
    assert!(mcp.finish().success());
    let entries = entries_of(&site, "content_list");
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}

/// Calls cancelled the moment they are sent (the cancel in the same write)
/// each have exactly one entry: aborted before they ever ran, they had left
/// none.
#[test]
fn calls_cancelled_at_once_each_have_one_entry() {
    let site = TestSite::new("fail_closed_cancel_at_once");
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    let mut burst = Vec::new();
    for id in 1..=20 {
        for message in [
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "content_search", "arguments": {"query": format!("q{id}")}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": id}}),
        ] {
            burst.extend_from_slice(message.to_string().as_bytes());
            burst.push(b'\n');
        }
    }
    mcp.send_raw(&burst);
    // Answered in order after the burst: every call before it was settled.
    mcp.call(99, "content_list", json!({}), None);
    assert!(mcp.finish().success());
    let entries = entries_of(&site, "content_search");
    assert_eq!(entries.len(), 20, "{entries:?}");
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}

/// The end of input while a call's entry waits for the database (another
/// process holds the write lock past every bound): the call is answered
/// with the shutdown error, not left with a closed pipe, and has one entry.
/// It had none of the first and two entries (`ok`, `interrupted`).
#[test]
fn a_call_whose_entry_waits_at_the_end_of_input_is_answered_with_one_entry() {
    let site = TestSite::new("fail_closed_eof_waiting");
    if site.db_file().is_none() {
        return; // The SQLite write lock is what the entry waits for here.
    }
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    let locker = site.hold_audit_writes();
    mcp.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "content_list", "arguments": {}}}));
    std::thread::sleep(std::time::Duration::from_millis(500));
    mcp.close_stdin();
    let reply = mcp.response(&json!(5));
    assert_eq!(reply["error"]["data"]["code"], "SERVER_EXITED", "{reply}");
    assert_eq!(
        reply["error"]["data"]["detail"]["reason"], "server_stopping",
        "{reply}"
    );
    locker.release("");
    let status = wait_exit(&mut mcp.child);
    assert!(status.success(), "{}", mcp.stderr());
    let entries = entries_of(&site, "content_list");
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}
