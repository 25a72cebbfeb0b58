//! `gatehouse mcp` under load from several processes at once, on one site
//! (SQLite file or PostgreSQL database, from the environment): every call
//! answered is in the audit log exactly once, the chain verifies, the CLI
//! works meanwhile, and a key revoked by another process is refused on the
//! server's next call even after thousands of calls served from its cached
//! actor (the access generation, not a timer, decides when it re-reads).

use std::collections::HashSet;

use crate::mcp_util::{McpSite, tool_error};
use crate::util::TestSite;
use serde_json::json;

const SERVERS: usize = 3;
const CALLS: i64 = 300;
const IN_FLIGHT: i64 = 16;

#[test]
fn audit_chain_verifies_after_pipelined_calls_from_several_servers() {
    let site = TestSite::new("mcp_load");
    let keys: Vec<(String, String)> = (0..SERVERS).map(|_| site.mint("author")).collect();
    let before = site.ok_json(&["audit", "verify", "--json"])["entries"]
        .as_i64()
        .unwrap();
    let mut servers: Vec<_> = keys
        .iter()
        .map(|(key, _)| site.mcp(&[], &[("GATEHOUSE_API_KEY", key.as_str())]))
        .collect();
    for mcp in servers.iter_mut() {
        mcp.initialize("2025-11-25");
    }
    let call = |s: usize, id: i64| {
        let (name, args) = if id % 3 == 0 {
            (
                "content_write_draft",
                json!({"slug": format!("load-{s}-{}", id % 7), "title": "Load", "body": format!("call {id}")}),
            )
        } else {
            ("content_read", json!({"slug": "welcome"}))
        };
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": args}})
    };
    // Each server gets IN_FLIGHT calls at a time, all servers at once, while
    // the CLI mints keys in between: three processes writing one database.
    let mut sent = [0i64; SERVERS];
    let mut answered: Vec<HashSet<i64>> = vec![HashSet::new(); SERVERS];
    for (s, mcp) in servers.iter_mut().enumerate() {
        while sent[s] < IN_FLIGHT {
            sent[s] += 1;
            mcp.send(&call(s, sent[s]));
        }
    }
    let mut minted = 0;
    while answered.iter().any(|a| (a.len() as i64) < CALLS) {
        for (s, mcp) in servers.iter_mut().enumerate() {
            if answered[s].len() as i64 == CALLS {
                continue;
            }
            let r = mcp.recv();
            assert_eq!(r["result"]["isError"], false, "server {s}: {r}");
            assert!(answered[s].insert(r["id"].as_i64().unwrap()), "{r}");
            if sent[s] < CALLS {
                sent[s] += 1;
                mcp.send(&call(s, sent[s]));
            }
        }
        if answered[0].len() % 100 == 50 && minted < 3 {
            site.mint("viewer");
            minted += 1;
        }
    }
    let report = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(
        report["entries"].as_i64().unwrap(),
        // Each call's entry, each draft write's own entry, each CLI mint's.
        before + (SERVERS as i64) * (CALLS + CALLS / 3) + minted,
        "{report}"
    );

    // Checkpoints came due while calls were in flight: one was written at a
    // time (concurrent ones once raced on one temp file and warned IO_ERROR).
    for (s, mcp) in servers.iter().enumerate() {
        let stderr = mcp.stderr();
        assert!(
            !stderr.contains("could not write an audit checkpoint"),
            "server {s}: {stderr}"
        );
    }

    // The cached actor does not outlive a revocation made by another process.
    site.ok(&["keys", "revoke", &keys[1].1]);
    let err =
        tool_error(&servers[1].call(CALLS + 1, "content_read", json!({"slug": "welcome"}), None));
    assert_eq!(err["code"], "ACTOR_API_KEY_INVALID", "{err}");
    assert_eq!(err["detail"]["reason"], "revoked", "{err}");
    // The other servers' keys still work.
    let ok = servers[0].call(CALLS + 1, "content_read", json!({"slug": "welcome"}), None);
    assert_eq!(ok["result"]["isError"], false, "{ok}");
}

/// SQLite's WAL starts over from its beginning only when a commit finds every
/// frame in it already copied into the database file. Checkpointed beside a
/// stream of calls that never pauses, it never was, and grew by every
/// commit's pages (85 MB/s in the bench; 66 MB over this test's calls).
#[test]
fn the_wal_stays_bounded_while_calls_keep_coming() {
    let site = TestSite::new("mcp_wal_bound");
    let Some(db) = site.db_file() else {
        return; // PostgreSQL: no WAL file of ours.
    };
    let (key, _) = site.mint("viewer");
    let mut mcp = site.mcp(&[], &[("GATEHOUSE_API_KEY", key.as_str())]);
    mcp.initialize("2025-11-25");
    let wal = db.with_file_name(format!("{}-wal", db.file_name().unwrap().to_string_lossy()));
    let mut largest = 0;
    // One call at a time: one commit each, the most WAL per call.
    for id in 1..=4000 {
        let r = mcp.call(id, "content_read", json!({"slug": "welcome"}), None);
        assert_eq!(r["result"]["isError"], false, "{r}");
        if id % 250 == 0 {
            largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
        }
    }
    // Kept under 16 MiB (`store::direct`), plus what one checkpoint takes.
    assert!(
        largest < 24 << 20,
        "the WAL reached {largest} bytes over 4000 calls"
    );
    let report = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(report["ok"], true, "{report}");
}

/// Requests that arrive together read from one shared snapshot
/// (`store::direct`); one left open once they are answered would hold the WAL
/// back, unbounded, for as long as the server idles (listings commit nothing
/// that would end it).
#[test]
fn an_idle_server_holds_no_snapshot_open() {
    let site = TestSite::new("mcp_idle_snapshot");
    let Some(db) = site.db_file() else {
        return; // PostgreSQL: no WAL file of ours.
    };
    let (key, _) = site.mint("viewer");
    let mut mcp = site.mcp(&[], &[("GATEHOUSE_API_KEY", key.as_str())]);
    mcp.initialize("2025-11-25");
    for id in 1..=IN_FLIGHT {
        mcp.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
    }
    for _ in 1..=IN_FLIGHT {
        let r = mcp.recv();
        assert!(r["result"]["tools"].is_array(), "{r}");
    }
    let other = rusqlite::Connection::open(&db).unwrap();
    other.busy_timeout(std::time::Duration::ZERO).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let busy: i64 = other
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
            .unwrap();
        if busy == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the idle server still holds a read of the WAL"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let r = mcp.call(
        IN_FLIGHT + 1,
        "content_read",
        json!({"slug": "welcome"}),
        None,
    );
    assert_eq!(r["result"]["isError"], false, "{r}");
}

/// Calls that arrive together share one snapshot (`store::direct`), but
/// never one older than their arrival: with calls streaming 16 in flight, a
/// key revoked by another process serves none of the calls sent after the
/// revocation returned.
#[test]
fn a_revocation_reaches_every_call_sent_after_it_while_calls_stream() {
    use std::sync::atomic::{AtomicI64, Ordering};
    let site = TestSite::new("mcp_revoke_stream");
    let (key, id) = site.mint("viewer");
    let mut mcp = site.mcp(&[], &[("GATEHOUSE_API_KEY", key.as_str())]);
    mcp.initialize("2025-11-25");
    let sent = AtomicI64::new(0);
    // The id of the first call sent after the revocation returned.
    let revoked_from = AtomicI64::new(i64::MAX);
    let call = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "content_read", "arguments": {"slug": "welcome"}}})
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(100));
            site.ok(&["keys", "revoke", &id]);
            revoked_from.store(sent.load(Ordering::SeqCst) + 1, Ordering::SeqCst);
        });
        let mut answered = 0;
        let mut served_after = Vec::new();
        // Until 500 calls past the revocation were sent and all are answered.
        let to_send = || {
            sent.load(Ordering::SeqCst) < revoked_from.load(Ordering::SeqCst).saturating_add(500)
        };
        while answered < sent.load(Ordering::SeqCst) || to_send() {
            while sent.load(Ordering::SeqCst) - answered < IN_FLIGHT && to_send() {
                let next = sent.load(Ordering::SeqCst) + 1;
                mcp.send(&call(next));
                sent.store(next, Ordering::SeqCst);
            }
            let r = mcp.recv();
            let Some(n) = r["id"].as_i64() else {
                continue; // the manifest's change, announced
            };
            answered += 1;
            if n >= revoked_from.load(Ordering::SeqCst) && r["result"]["isError"] == false {
                served_after.push(n);
            }
        }
        assert!(
            served_after.is_empty(),
            "calls sent after the revocation returned were served: {served_after:?}"
        );
    });
    // The revocation came while calls were streaming, not after them.
    let from = revoked_from.load(Ordering::SeqCst);
    assert!(from > IN_FLIGHT, "revoked before the stream began ({from})");
}
