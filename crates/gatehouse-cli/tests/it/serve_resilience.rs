//! `gatehouse serve` when things change or go wrong around it: manifest
//! changes announced on open `subscriptions/listen` streams of every instance,
//! a client that closes its stream mid-call, an instance killed under load,
//! and memory under a flood of large bodies and open streams. On PostgreSQL
//! when `GATEHOUSE_TEST_PG_URL` is set (the test command's second pass), else
//! on the SQLite file: either way one database behind two instances.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::audit_fail_closed::black_hole;
use crate::mcp_util::McpSite;
use crate::serve_util::{Events, LEGACY, PATIENCE, Serve, try_request};
use crate::util::TestSite;

fn calls_by(site: &TestSite, key_id: &str) -> Vec<Value> {
    site.audit()
        .into_iter()
        .filter(|e| e["action"] == "mcp.tool_call" && e["actor"] == format!("key:{key_id}"))
        .collect()
}

fn outcome(entry: &Value) -> Value {
    serde_json::from_str::<Value>(entry["detail"].as_str().unwrap_or("{}")).unwrap()["outcome"]
        .clone()
}

/// Waits (bounded) for a `tools/list_changed` on `events` for subscription `id`.
fn list_changed(events: &mut Events, id: u64, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        let Some(m) = events.next_message(Duration::from_secs(15)) else {
            break;
        };
        if m["method"] == "notifications/tools/list_changed" {
            assert_eq!(
                m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                json!(id),
                "{m}"
            );
            return;
        }
    }
    panic!("no tools/list_changed after {what}");
}

#[test]
fn subscriptions_listen_announces_manifest_changes_on_every_instance() {
    let site = TestSite::new("serve-listen");
    let (key, id) = site.mint("editor");
    let a = Serve::start(&site, &[]);
    let b = Serve::start(&site, &[]);
    let listen = json!({"notifications": {"toolsListChanged": true}});
    let mut streams: Vec<Events> = [&a, &b]
        .iter()
        .map(|s| s.modern_stream(Some(&key), 5, "subscriptions/listen", listen.clone()))
        .collect();
    for e in &mut streams {
        assert_eq!(e.status, 200);
        let ack = e.next_message(PATIENCE).expect("an acknowledgement");
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);
    }
    // Narrowed through the CLI (a third process on the same database).
    site.ok(&["keys", "restrict", &id, "--tools", "content_read"]);
    for e in &mut streams {
        list_changed(e, 5, "keys restrict");
    }
    // A role change written straight to the database, as another admin tool would.
    site.sql(&format!(
        "UPDATE api_keys SET roles = 'viewer' WHERE id = '{id}'"
    ));
    site.sql("UPDATE access_generation SET gen = gen + 1 WHERE id = 1");
    site.ok(&["keys", "restrict", &id, "--clear", "tools"]);
    for e in &mut streams {
        list_changed(e, 5, "a role change");
    }
    // Revoked: the manifest is empty now, both say so, and both streams end
    // with the refusal (a revoked key's stream had stayed open, holding its
    // slot and its key's share, for good).
    site.ok(&["keys", "revoke", &id]);
    for e in &mut streams {
        list_changed(e, 5, "keys revoke");
        let end = e.next_message(PATIENCE).expect("the stream's last message");
        assert_eq!(end["id"], 5, "{end}");
        assert_eq!(
            end["error"]["data"]["code"], "ACTOR_API_KEY_INVALID",
            "{end}"
        );
        assert!(
            e.next_message(Duration::from_secs(2)).is_none(),
            "the stream ended"
        );
    }
    assert_eq!(a.legacy(Some(&key), "tools/list", json!({})).status, 401);
    for e in streams {
        e.close();
    }
}

#[test]
fn closing_a_modern_event_stream_cancels_its_call_and_audits_the_cancel() {
    let site = TestSite::new("serve-stream-close");
    let (port, reached) = black_hole();
    site.sql("UPDATE site_config SET value = '127.0.0.1' WHERE key = 'http_fetch.allowlist'");
    let (key, id) = site.mint("viewer");
    let s = Serve::start(&site, &[]);
    let events = s.modern_stream(
        Some(&key),
        9,
        "tools/call",
        json!({"name": "http_fetch", "arguments": {"url": format!("http://127.0.0.1:{port}/slow")},
               "_meta": {"progressToken": "p9"}}),
    );
    reached
        .recv_timeout(PATIENCE)
        .expect("the fetch reached its target");
    events.close();
    // The entry says cancelled (the fetch's own timeout, 15 s, would say error).
    let deadline = Instant::now() + PATIENCE;
    let entry = loop {
        if let Some(e) = calls_by(&site, &id)
            .into_iter()
            .find(|e| e["subject"] == "http_fetch")
        {
            break e;
        }
        assert!(
            Instant::now() < deadline,
            "no audit entry for the fetch whose stream was closed"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(outcome(&entry), "cancelled", "{entry}");
    // The server goes on serving.
    assert_eq!(s.legacy(Some(&key), "tools/list", json!({})).status, 200);
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}

/// The metrics line that starts with `name`'s value (0 when absent).
fn metric(maddr: &str, name: &str) -> u64 {
    let text = crate::serve_util::request(maddr, "GET", "/metrics", &[], b"").text();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0)
}

/// Waits (bounded) until `name` reads `want` on the metrics listener.
fn metric_reaches(maddr: &str, name: &str, want: u64) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let got = metric(maddr, name);
        if got == want {
            return;
        }
        assert!(Instant::now() < deadline, "{name} is {got}, not {want}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn metrics_count_calls_whose_client_went_away_and_show_open_streams() {
    let site = TestSite::new("serve-metrics-cancel");
    let (port, reached) = black_hole();
    site.sql("UPDATE site_config SET value = '127.0.0.1' WHERE key = 'http_fetch.allowlist'");
    let (key, _) = site.mint("viewer");
    let maddr = format!("127.0.0.1:{}", crate::util::closed_port());
    let s = Serve::start(&site, &["--metrics-listen", &maddr]);
    let cancelled = r#"gatehouse_tool_calls_total{tool="http_fetch",outcome="cancelled"}"#;
    let fetch = json!({"name": "http_fetch",
                       "arguments": {"url": format!("http://127.0.0.1:{port}/slow")},
                       "_meta": {"progressToken": "p1"}});
    // A progress stream closed mid-call: open while it runs, then cancelled.
    let events = s.modern_stream(Some(&key), 1, "tools/call", fetch.clone());
    reached
        .recv_timeout(PATIENCE)
        .expect("the fetch reached its target");
    metric_reaches(&maddr, "gatehouse_http_streams_open", 1);
    events.close();
    metric_reaches(&maddr, cancelled, 1);
    metric_reaches(&maddr, "gatehouse_http_streams_open", 0);
    // A plain JSON request whose connection closes mid-call.
    let addr = s.addr.clone();
    let auth = format!("Bearer {key}");
    let gone = std::thread::spawn(move || {
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "http_fetch", "arguments": {"url": format!("http://127.0.0.1:{port}/slow")}}});
        let mut c = std::net::TcpStream::connect(&addr).unwrap();
        let body = serde_json::to_vec(&body).unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nMCP-Protocol-Version: {LEGACY}\r\nAuthorization: {auth}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        use std::io::Write;
        c.write_all(head.as_bytes()).unwrap();
        c.write_all(&body).unwrap();
        c
    });
    reached
        .recv_timeout(PATIENCE)
        .expect("the second fetch reached its target");
    drop(gone.join().unwrap());
    metric_reaches(&maddr, cancelled, 2);
    metric_reaches(&maddr, "gatehouse_http_in_flight", 0);
}

#[test]
fn kill_9_of_one_of_two_instances_loses_no_answered_call() {
    let site = TestSite::new("serve-kill9");
    let (key, id) = site.mint("viewer");
    let a = Serve::start(&site, &[]);
    let b = Serve::start(&site, &[]);
    let (a_addr, b_addr) = (a.addr.clone(), b.addr.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..6)
        .map(|w| {
            let addr = if w % 2 == 0 {
                a_addr.clone()
            } else {
                b_addr.clone()
            };
            let (key, stop, sent) = (key.clone(), stop.clone(), sent.clone());
            std::thread::spawn(move || {
                let auth = format!("Bearer {key}");
                let body =
                    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "content_read", "arguments": {"slug": "welcome"}}}))
                    .unwrap();
                let headers = [
                    ("Content-Type", "application/json"),
                    ("MCP-Protocol-Version", LEGACY),
                    ("Authorization", auth.as_str()),
                ];
                let mut answered = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    sent.fetch_add(1, Ordering::SeqCst);
                    match try_request(&addr, "POST", "/mcp", &headers, &body) {
                        Some(r) if r.status == 200 && r.json()["result"]["isError"] == false => {
                            answered += 1
                        }
                        // The killed instance: nothing more to send there.
                        _ => break,
                    }
                }
                answered
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    // SIGKILL: no drain, no goodbye.
    let mut a = a;
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    stop.store(true, Ordering::SeqCst);
    let answered: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    assert_eq!(b.terminate().code(), Some(0));
    let entries = calls_by(&site, &id);
    let ok = entries.iter().filter(|e| outcome(e) == "ok").count() as u64;
    // Every answered call was committed before its answer; a call the kill cut
    // between its commit and its answer may have an entry and no answer.
    assert!(answered > 0);
    assert!(
        ok >= answered,
        "{ok} entries for {answered} answered calls: an answered call lost its entry"
    );
    assert!(ok <= sent.load(Ordering::SeqCst));
    let verify = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(verify["ok"], true, "{verify}");
}

/// Resident memory of a process, KiB (peak when `peak`).
#[cfg(target_os = "linux")]
fn rss_kib(pid: u32, peak: bool) -> u64 {
    let key = if peak { "VmHWM:" } else { "VmRSS:" };
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// A flood of bodies at the size limit from more clients than the memory
/// budget has room for, beside more listen streams than the server allows,
/// while the database is slow to take each call's audit entry (another
/// process holds its lock for the flood's first seconds), so calls pile up
/// as far as the budget lets them: the server's peak memory stays within a
/// generous bound set by its limits (256 MiB of bodies being read and
/// joined, 256 MiB of parsed messages, 128 MiB for the runtime, the database
/// and hyper's buffers), printed as a figure. Before bodies had a budget of
/// their own, 48 such clients took it to 474 MB; while a waiting call kept a
/// copy of its arguments for its entry, the piled-up calls took it to 675 MB.
#[cfg(target_os = "linux")]
#[test]
fn memory_stays_bounded_under_a_flood_of_large_bodies_and_streams() {
    let site = TestSite::new("serve-flood");
    let (key, _) = site.mint("viewer");
    let s = Serve::start(&site, &["--rate", "100000"]);
    let pid = s.child.id();
    let before = rss_kib(pid, false);
    // Streams: more than the 64 stream slots, each held open.
    let listen = json!({"notifications": {"toolsListChanged": true}});
    let mut streams = Vec::new();
    let mut refused = Vec::new();
    for i in 0..80 {
        match s.try_modern_stream(Some(&key), 100 + i, "subscriptions/listen", listen.clone()) {
            Ok(e) => streams.push(e),
            Err(status) => refused.push(status),
        }
    }
    let refused_503 = refused.iter().filter(|s| **s == 503).count();
    // Bodies: 96 clients (384 MiB at once), each sending 4 MiB requests (the default limit) for 5 s.
    let big = "x".repeat(4 * 1024 * 1024 - 200);
    let body = Arc::new(
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "content_read", "arguments": {"slug": big}}}))
        .unwrap(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let statuses = Arc::new(std::sync::Mutex::new(std::collections::BTreeMap::new()));
    let workers: Vec<_> = (0..96)
        .map(|_| {
            let (addr, key, body, stop, statuses) = (
                s.addr.clone(),
                key.clone(),
                body.clone(),
                stop.clone(),
                statuses.clone(),
            );
            std::thread::spawn(move || {
                let auth = format!("Bearer {key}");
                let headers = [
                    ("Content-Type", "application/json"),
                    ("MCP-Protocol-Version", LEGACY),
                    ("Authorization", auth.as_str()),
                ];
                while !stop.load(Ordering::SeqCst) {
                    let status =
                        try_request(&addr, "POST", "/mcp", &headers, &body).map_or(0, |r| r.status);
                    *statuses.lock().unwrap().entry(status).or_insert(0u64) += 1;
                }
            })
        })
        .collect();
    let mut peak_sampled = 0;
    let mut sample_for = |d: Duration| {
        let until = Instant::now() + d;
        while Instant::now() < until {
            peak_sampled = peak_sampled.max(rss_kib(pid, false));
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let locker = site.hold_audit_writes();
    sample_for(Duration::from_secs(3));
    locker.release("");
    sample_for(Duration::from_secs(2));
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        w.join().unwrap();
    }
    let peak = rss_kib(pid, true);
    let statuses = statuses.lock().unwrap().clone();
    println!(
        "serve under a flood: RSS {before} KiB before, {peak_sampled} KiB highest sampled, \
         {peak} KiB peak (VmHWM); {} streams held, {} refused; answers by status {statuses:?}",
        streams.len(),
        refused.len()
    );
    // The server answered the flood (no crash, no hang) and refused streams past its slots.
    assert!(
        statuses.keys().any(|s| *s == 200 || *s == 503),
        "{statuses:?}"
    );
    assert!(
        streams.len() <= 64 && refused_503 == refused.len() && refused_503 >= 16,
        "{} streams, refused with {refused:?}",
        streams.len()
    );
    assert!(
        peak < 640 * 1024,
        "peak RSS {peak} KiB: the server's memory is not bounded by its limits"
    );
    assert_eq!(s.legacy(Some(&key), "tools/list", json!({})).status, 200);
    for e in streams {
        e.close();
    }
}

/// A request's headers may take about 32 KiB (431 above it), not hyper's default
/// of ~400 KB a connection: 1,024 connections each sending ~387 KB of
/// headers and then nothing had pinned 540 MB (68 to 609 MB resident), counted
/// in no budget, until the header timeout. Printed: the resident memory
/// before and after 256 such connections.
#[cfg(target_os = "linux")]
#[test]
fn oversized_headers_get_431_and_idle_senders_of_them_pin_little_memory() {
    use std::io::Write;
    let site = TestSite::new("serve-big-headers");
    let s = Serve::start(&site, &[]);
    let pid = s.child.id();
    let filler = format!("X-Filler: {}\r\n", "a".repeat(3_900));
    let big = filler.repeat(12);
    // hyper checks the bound between reads, so a little more may land first.
    let r = try_request(
        &s.addr,
        "GET",
        "/healthz",
        &[("X-Big", &"b".repeat(100_000))],
        b"",
    )
    .expect("an answer");
    assert_eq!(r.status, 431, "{}", r.text());
    let before = rss_kib(pid, false);
    let senders: Vec<std::net::TcpStream> = (0..256)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(&s.addr).unwrap();
            let _ = c.write_all(format!("POST /mcp HTTP/1.1\r\nHost: {}\r\n", s.addr).as_bytes());
            for _ in 0..8 {
                if c.write_all(big.as_bytes()).is_err() {
                    break;
                }
            }
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_kib(pid, false);
    println!(
        "256 connections sending ~375 KB of headers each: RSS {before} KiB before, {after} KiB after"
    );
    assert!(
        after.saturating_sub(before) < 40 * 1024,
        "headers pinned {} KiB",
        after - before
    );
    drop(senders);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(s.legacy(None, "tools/list", json!({})).status, 200);
}

/// Bodies that declare the size limit and then trickle in must not hold the
/// bodies' memory budget: it used to be reserved as declared, before a byte
/// came, so 32 such clients made every other request "busy" for the body
/// deadline (40 s), with no key needed. It is reserved as the bytes arrive.
#[test]
fn bodies_trickling_in_hold_no_budget_they_have_not_sent() {
    use std::io::Write;
    let site = TestSite::new("serve-slow-bodies");
    let s = Serve::start(&site, &[]);
    let trickling: Vec<std::net::TcpStream> = (0..40)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(&s.addr).unwrap();
            let head = format!(
                "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
                 MCP-Protocol-Version: {LEGACY}\r\nContent-Length: 4194304\r\n\r\n{{",
                s.addr
            );
            c.write_all(head.as_bytes()).unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let r = s.legacy(None, "tools/list", json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    drop(trickling);
}

/// One client network may hold a quarter of the event stream slots and of
/// the connection slots, not all of them: 64 keyless `subscriptions/listen`
/// streams left open shut every other client's streams out, and 1,100 idle
/// connections every other client's requests. The streams here are two keys'
/// (keyless ones have a smaller share per network, tested below).
#[test]
fn one_network_holds_a_share_of_streams_and_connections_not_all() {
    let site = TestSite::new("serve-shares");
    let keys = [site.mint("viewer").0, site.mint("viewer").0];
    let s = Serve::start(&site, &[]);
    // Connections first, while no stream of this test holds one.
    std::thread::sleep(Duration::from_millis(300));
    let idle: Vec<std::net::TcpStream> = (0..256)
        .map(|_| std::net::TcpStream::connect(&s.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        try_request(&s.addr, "POST", "/mcp", &[], b"").is_none(),
        "a connection past the network's share is closed"
    );
    drop(idle);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(s.legacy(None, "tools/list", json!({})).status, 200);

    let listen = json!({"notifications": {"toolsListChanged": true}});
    let mut streams = Vec::new();
    let mut refused = Vec::new();
    for i in 0..20 {
        let key = &keys[i as usize % 2];
        match s.try_modern_stream(Some(key), 100 + i, "subscriptions/listen", listen.clone()) {
            Ok(e) => streams.push(e),
            Err(status) => refused.push(status),
        }
    }
    assert_eq!(streams.len(), 16, "a quarter of 64: {refused:?}");
    assert!(refused.iter().all(|s| *s == 503), "{refused:?}");
    for e in streams {
        e.close();
    }
    // A closed stream is noticed by its next keep-alive at the latest.
    let until = Instant::now() + PATIENCE;
    let again = loop {
        match s.try_modern_stream(Some(&keys[0]), 200, "subscriptions/listen", listen.clone()) {
            Ok(e) => break Some(e),
            Err(_) if Instant::now() < until => std::thread::sleep(Duration::from_millis(200)),
            Err(_) => break None,
        }
    };
    again.expect("streams given back are taken again").close();
}

/// One key (and every keyless client together) holds a share of the event
/// stream slots wherever it connects from: one viewer key's, or keyless,
/// `subscriptions/listen` streams from four networks (a quarter each) had
/// taken all 64, and a fifth network got none. Client addresses come through
/// a trusted proxy here.
#[test]
fn one_key_or_all_keyless_clients_hold_a_share_of_the_event_streams_from_any_network() {
    let site = TestSite::new("serve-key-streams");
    let (key, _) = site.mint("viewer");
    let (other, _) = site.mint("viewer");
    let s = Serve::start(&site, &["--behind-proxy", "127.0.0.1"]);
    let listen = json!({"notifications": {"toolsListChanged": true}});
    let mut streams = Vec::new();
    let mut refused = Vec::new();
    for net in 1..=4 {
        for i in 0..17u64 {
            let from = format!("10.0.{net}.{}", i + 1);
            let extra = [("X-Forwarded-For", from.as_str())];
            match s.try_modern_stream_with(
                Some(&key),
                &extra,
                100 * net + i,
                "subscriptions/listen",
                listen.clone(),
            ) {
                Ok(e) => streams.push(e),
                Err(status) => refused.push(status),
            }
        }
    }
    assert_eq!(
        streams.len(),
        16,
        "a quarter of 64 for the key: {refused:?}"
    );
    assert!(refused.iter().all(|s| *s == 503), "{refused:?}");
    // Keyless clients count as one, from however many networks.
    let mut keyless = 0;
    for net in 6..=9 {
        for i in 0..5u64 {
            let from = format!("10.0.{net}.{}", i + 1);
            let extra = [("X-Forwarded-For", from.as_str())];
            if let Ok(e) = s.try_modern_stream_with(
                None,
                &extra,
                1000 * net + i,
                "subscriptions/listen",
                listen.clone(),
            ) {
                streams.push(e);
                keyless += 1;
            }
        }
    }
    assert_eq!(
        keyless, 16,
        "a quarter of 64 for every keyless client together"
    );
    // Every keyless client's share is taken, whatever its network.
    let extra = [("X-Forwarded-For", "10.0.10.1")];
    let refused =
        s.try_modern_stream_with(None, &extra, 998, "subscriptions/listen", listen.clone());
    assert_eq!(refused.err(), Some(503), "the keyless share is taken");
    let extra = [("X-Forwarded-For", "10.0.5.1")];
    let theirs = s
        .try_modern_stream_with(
            Some(&other),
            &extra,
            999,
            "subscriptions/listen",
            listen.clone(),
        )
        .expect("another key from another network gets a stream");
    theirs.close();
    for e in streams {
        e.close();
    }
}

/// One network's keyless streams hold half of the keyless clients' share,
/// not all of it: 16 keyless `subscriptions/listen` streams from one address
/// had left keyless clients everywhere else none.
#[test]
fn one_network_of_keyless_streams_leaves_other_keyless_networks_room() {
    let site = TestSite::new("serve-keyless-streams");
    let s = Serve::start(&site, &["--behind-proxy", "127.0.0.1"]);
    let open = |from: &str, id: u64| keyless_listen(&s, from, id);
    let mut streams = Vec::new();
    let mut refused = Vec::new();
    for i in 0..20u64 {
        match open("10.1.0.1", 100 + i) {
            Ok(e) => streams.push(e),
            Err(status) => refused.push(status),
        }
    }
    assert_eq!(streams.len(), 8, "half of the keyless 16: {refused:?}");
    assert!(refused.iter().all(|s| *s == 503), "{refused:?}");
    let elsewhere =
        open("10.2.0.1", 200).expect("a keyless client of another network gets a stream");
    elsewhere.close();
    for e in streams {
        e.close();
    }
}

/// A stream refused as busy gives back the request of the rate it took: a
/// keyless client retrying a stream through a full share had emptied its
/// burst, and met 429 once a stream was free.
#[test]
fn a_stream_refused_as_busy_spends_none_of_the_callers_rate() {
    let site = TestSite::new("serve-stream-busy-rate");
    // A request every ten seconds per address, a burst of one.
    let s = Serve::start(&site, &["--behind-proxy", "127.0.0.1", "--rate", "0.1"]);
    let open = |from: &str, id: u64| keyless_listen(&s, from, id);
    // Eight addresses of one network fill its keyless share.
    let mut streams: Vec<_> = (1..=8u64)
        .map(|i| open(&format!("10.3.0.{i}"), i).expect("room for a stream"))
        .collect();
    for id in 20..23 {
        assert_eq!(
            open("10.3.0.9", id).err(),
            Some(503),
            "busy, not over the rate"
        );
    }
    streams.pop().unwrap().close();
    // A closed stream is noticed by its next keep-alive at the latest.
    let until = Instant::now() + PATIENCE;
    let again = loop {
        match open("10.3.0.9", 30) {
            Ok(e) => break e,
            Err(503) if Instant::now() < until => std::thread::sleep(Duration::from_millis(200)),
            Err(status) => panic!("{status}: the burst was spent by the refusals"),
        }
    };
    again.close();
    assert_eq!(open("10.3.0.9", 31).err(), Some(429), "the burst is one");
    for e in streams {
        e.close();
    }
}

/// A keyless `subscriptions/listen` stream from `from` (through the trusted
/// proxy), or the status that refused it.
fn keyless_listen(s: &Serve, from: &str, id: u64) -> Result<Events, u16> {
    let extra = [("X-Forwarded-For", from)];
    let listen = json!({"notifications": {"toolsListChanged": true}});
    s.try_modern_stream_with(None, &extra, id, "subscriptions/listen", listen)
}
