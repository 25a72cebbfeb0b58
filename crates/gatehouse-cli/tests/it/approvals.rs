//! Held calls: the policy in gatehouse.toml, decided by the client's user
//! (elicitation) and by the owner's queue (`gatehouse approvals`), through
//! the official Python SDK client against the real server; every decision in
//! the audit chain.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::mcp_util::McpSite;
use crate::sdk::SdkClient;
use crate::serve_util::{PATIENCE, Serve, try_legacy};
use crate::util::TestSite;

fn mint(site: &TestSite, flags: &[&str]) -> (String, String) {
    let mut args = vec!["keys", "mint", "--label", "held", "--roles", "editor"];
    args.extend_from_slice(flags);
    args.push("--json");
    let v = site.ok_json(&args);
    (
        v["key"].as_str().unwrap().to_string(),
        v["id"].as_str().unwrap().to_string(),
    )
}

/// A bad `[approvals]` stops what would run calls under it (`gatehouse mcp`
/// and `serve` refuse to start: a policy never fails open) and nothing else:
/// keys can still be minted and revoked, and the queue read.
#[test]
fn approval_policy_refuses_unknown_effects_at_start() {
    let site = TestSite::new("approvals_bad_policy");
    site.append_to_site_file("[approvals]\neffects = [\"publsh\"]");
    for start in [&["mcp"][..], &["serve", "--listen", "127.0.0.1:0"]] {
        let f = site.fails(start);
        assert_eq!(f.code, "SITE_CONFIG_INVALID", "{start:?}: {}", f.stderr);
        assert!(f.stderr.contains("publsh"), "{}", f.stderr);
    }
    site.ok(&["approvals", "list"]);
    let (_, id) = site.mint("viewer");
    site.ok(&["keys", "revoke", &id]);
}

#[test]
fn key_approve_list_is_checked_shown_and_cleared() {
    let site = TestSite::new("approvals_key_flag");
    let f = site.fails(&[
        "keys",
        "mint",
        "--label",
        "x",
        "--roles",
        "editor",
        "--approve",
        "publsh",
    ]);
    assert_eq!(f.code, "KEY_RESTRICTION_INVALID", "{}", f.stderr);
    let (_, id) = mint(&site, &["--approve", "publish,media_write"]);
    let v = site.ok_json(&["keys", "restrict", &id, "--tools", "content_read", "--json"]);
    assert_eq!(
        v["restrictions"]["approve"],
        serde_json::json!(["publish", "media_write"])
    );
    assert!(
        v["reach"]["words"].as_array().unwrap().iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("waits for a person's yes: publish, media_write")),
        "{v}"
    );
    let v = site.ok_json(&["keys", "restrict", &id, "--clear", "approve", "--json"]);
    assert!(v["restrictions"].get("approve").is_none(), "{v}");
}

#[test]
fn unknown_held_call_is_not_found() {
    let site = TestSite::new("approvals_unknown");
    for cmd in ["approve", "deny"] {
        let f = site.fails(&["approvals", cmd, "hold_nothing"]);
        assert_eq!(f.code, "APPROVAL_NOT_FOUND", "{}", f.stderr);
    }
    assert_eq!(
        site.ok(&["approvals", "list"]).trim(),
        "no calls are waiting for a decision"
    );
}

#[test]
fn python_sdk_calls_wait_for_the_clients_user_and_the_owners_queue() {
    let site = TestSite::new("approvals_py");
    let Some(client) = SdkClient::python("python_approvals.py", &site) else {
        return;
    };
    let other = TestSite::new("approvals_py_other");
    let (editor_key, editor_id) = mint(&site, &[]);
    let (approve_key, approve_id) = mint(&site, &["--approve", "write"]);
    client
        .arg(other.path())
        .env("GATEHOUSE_SCRATCH_DIR", site.scratch_dir())
        .env("INTEROP_EDITOR_KEY", editor_key)
        .env("INTEROP_EDITOR_ID", &editor_id)
        .env("INTEROP_APPROVE_KEY", approve_key)
        .env("INTEROP_APPROVE_ID", &approve_id)
        .run();
    // Every ask and every end is in the chain, with who decided, and the chain holds.
    let log = site.ok_json(&["audit", "list", "--limit", "5000", "--json"]);
    let entries: Vec<(String, String, Value)> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"].as_str().unwrap().starts_with("approval."))
        .map(|e| {
            let d = match &e["detail"] {
                Value::String(s) => serde_json::from_str(s).unwrap(),
                other => other.clone(),
            };
            (
                e["action"].as_str().unwrap().to_string(),
                e["actor"].as_str().unwrap().to_string(),
                d,
            )
        })
        .collect();
    let count = |action: &str, actor: &str| {
        entries
            .iter()
            .filter(|(a, who, _)| a == action && who == actor)
            .count()
    };
    let editor = format!("key:{editor_id}");
    let asked_user = format!("{editor} (client's user)");
    // The client's user: by elicitation/create (handshake revisions) and by
    // the input_required round trip (2026-07-28).
    assert_eq!(count("approval.approved", &asked_user), 3, "{entries:?}");
    assert_eq!(count("approval.declined", &asked_user), 2, "{entries:?}");
    assert_eq!(count("approval.approved", "cli"), 2, "{entries:?}");
    assert_eq!(count("approval.denied", "cli"), 5, "{entries:?}");
    assert_eq!(count("approval.timeout", "gatehouse"), 4, "{entries:?}");
    assert_eq!(count("approval.abandoned", "gatehouse"), 2, "{entries:?}");
    let asked = entries
        .iter()
        .filter(|(a, _, _)| a == "approval.asked")
        .count();
    let ended = entries.len() - asked;
    assert_eq!(asked, ended, "every ask has exactly one end: {entries:?}");
    // Each end names the hold and the caller it decided.
    assert!(
        entries
            .iter()
            .filter(|(a, _, _)| a != "approval.asked")
            .all(
                |(_, _, d)| d["hold"].as_str().is_some_and(|h| h.starts_with("hold_"))
                    && d["caller"].is_string()
            ),
        "{entries:?}"
    );
    let verified = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(verified["ok"], true, "{verified}");
}

#[test]
fn python_sdk_over_http_waits_in_the_owners_queue() {
    let site = TestSite::new("approvals_http");
    let Some(client) = SdkClient::python("python_approvals_http.py", &site) else {
        return;
    };
    site.append_to_site_file("[approvals]\neffects = [\"publish\"]\ntimeout_seconds = 30");
    let (key, id) = mint(&site, &[]);
    let serve = crate::serve_util::Serve::start(&site, &[]);
    client
        .arg(format!("http://{}/mcp", serve.addr))
        .env("INTEROP_EDITOR_KEY", &key)
        .env("INTEROP_EDITOR_ID", &id)
        .run_against(&serve);
    assert!(
        !serve.stderr().contains(&key),
        "a key reached the server log"
    );
    let verified = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(verified["ok"], true, "{verified}");
}

/// `[approvals]`: publishing waits for the owner's queue, for `seconds`.
fn owner_decides(site: &TestSite, seconds: u32) {
    site.append_to_site_file(&format!(
        "[approvals]\neffects = [\"publish\"]\ndecide = \"owner\"\ntimeout_seconds = {seconds}"
    ));
}

/// A handshake-era `tools/call` over HTTP on a connection of its own; `None`
/// when the server went away before answering.
fn call(addr: &str, key: &str, tool: &str, arguments: Value) -> Option<Value> {
    let r = try_legacy(
        addr,
        Some(key),
        1,
        "tools/call",
        serde_json::json!({"name": tool, "arguments": arguments}),
    )?;
    assert_eq!(r.status, 200, "{}", r.text());
    Some(r.json()["result"].clone())
}

fn write_draft(serve: &Serve, key: &str, slug: &str) {
    let r = call(
        &serve.addr,
        key,
        "content_write_draft",
        serde_json::json!({"slug": slug, "title": slug, "body": "x"}),
    )
    .expect("an answer");
    assert_eq!(r["isError"], false, "{r}");
}

/// The entry's status as an admin reads it (`draft` while nothing published it).
fn entry_status(site: &TestSite, slug: &str) -> String {
    let serve = Serve::start(site, &[]);
    let (admin, _) = site.mint("admin");
    let r = call(
        &serve.addr,
        &admin,
        "content_read",
        serde_json::json!({"slug": slug}),
    )
    .expect("an answer");
    r["structuredContent"]["status"]
        .as_str()
        .unwrap_or_else(|| panic!("no status: {r}"))
        .to_string()
}

/// The holds of `caller` waiting in the owner's queue, once there are `n`.
fn waiting_holds(site: &TestSite, caller: &str, n: usize) -> Vec<String> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let ids: Vec<String> = site
            .ok_json(&["approvals", "list", "--json"])
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| h["actor"] == caller)
            .map(|h| h["id"].as_str().unwrap().to_string())
            .collect();
        if ids.len() >= n {
            return ids;
        }
        assert!(Instant::now() < deadline, "{n} holds never showed: {ids:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn hold(site: &TestSite, id: &str) -> Value {
    site.ok_json(&["approvals", "show", id, "--json"])
}

/// The audit entries about hold `id`, as (action, actor, detail).
fn hold_entries(site: &TestSite, id: &str) -> Vec<(String, String, Value)> {
    site.audit()
        .into_iter()
        .filter_map(|e| {
            let detail: Value = match &e["detail"] {
                Value::String(s) => serde_json::from_str(s).ok()?,
                other => other.clone(),
            };
            (detail["hold"] == id).then(|| {
                (
                    e["action"].as_str().unwrap().to_string(),
                    e["actor"].as_str().unwrap().to_string(),
                    detail,
                )
            })
        })
        .collect()
}

/// After a hold ended without running: asked once, ended once as `end`, a
/// later yes changes nothing, the entry was never published.
fn settled_not_run(site: &TestSite, id: &str, end: &str, slug: &str) {
    let h = hold(site, id);
    assert_eq!(h["status"], end, "{h}");
    assert_eq!(h["decided_by"], "gatehouse", "{h}");
    let entries = hold_entries(site, id);
    let actions: Vec<&str> = entries.iter().map(|(a, _, _)| a.as_str()).collect();
    assert_eq!(
        actions,
        ["approval.asked", &format!("approval.{end}")],
        "{entries:?}"
    );
    let f = site.fails(&["approvals", "approve", id, "--json"]);
    assert_eq!(f.code, "APPROVAL_ALREADY_DECIDED", "{}", f.stderr);
    assert_eq!(hold(site, id)["status"], end);
    assert_eq!(entry_status(site, slug), "draft", "{slug} was published");
}

/// A `gatehouse serve` killed (SIGKILL) while three calls wait for the
/// owner: none ever runs; a yes at once is taken (nothing can tell a dead
/// server from a slow one yet), a yes once its renewals stopped finds it
/// gone, and the next start records the other two as not run, the approved
/// one included (it had stayed "approved" for good), each end in the audit chain.
#[test]
fn held_http_calls_of_a_killed_serve_are_recorded_not_run() {
    let site = TestSite::new("approvals_http_kill");
    owner_decides(&site, 120);
    let (key, key_id) = site.mint("editor");
    let caller = format!("key:{key_id}");
    let mut serve = Serve::start(&site, &[]);
    for slug in ["killed-a", "killed-b", "killed-c"] {
        write_draft(&serve, &key, slug);
    }
    let waiting: Vec<_> = ["killed-a", "killed-b", "killed-c"]
        .into_iter()
        .map(|slug| {
            let (addr, key) = (serve.addr.clone(), key.clone());
            std::thread::spawn(move || {
                call(
                    &addr,
                    &key,
                    "content_publish",
                    serde_json::json!({"slug": slug}),
                )
            })
        })
        .collect();
    let holds = waiting_holds(&site, &caller, 3);
    let by_slug = |slug: &str| {
        holds
            .iter()
            .find(|id| hold(&site, id)["arguments"]["slug"] == slug)
            .unwrap_or_else(|| panic!("no hold for {slug}"))
            .clone()
    };
    let (a, b, c) = (
        by_slug("killed-a"),
        by_slug("killed-b"),
        by_slug("killed-c"),
    );

    serve.child.kill().unwrap();
    serve.child.wait().unwrap();
    for t in waiting {
        assert_eq!(t.join().unwrap(), None, "a killed server answered");
    }
    // Nothing can tell a killed server from a slow one until its renewals
    // stop: a yes in the meantime is taken, and no server ever runs it.
    assert_eq!(hold(&site, &a)["status"], "waiting");
    site.ok(&["approvals", "approve", &c]);
    assert_eq!(hold(&site, &c)["status"], "approved");
    std::thread::sleep(Duration::from_millis(
        (gatehouse_core::access::approvals::STALE_AFTER_MS + 1_000) as u64,
    ));
    let f = site.fails(&["approvals", "approve", &a, "--json"]);
    assert_eq!(f.code, "APPROVAL_HOLDER_GONE", "{}", f.stderr);
    // The restarted server's start records the other two: the approved one
    // too, which had stayed "approved" for good.
    let restarted = Serve::start(&site, &[]);
    assert_eq!(hold(&site, &b)["status"], "abandoned");
    assert_eq!(hold(&site, &c)["status"], "abandoned");
    drop(restarted);
    let ends: Vec<(String, Value)> = hold_entries(&site, &c)
        .into_iter()
        .map(|(action, _, detail)| (action, detail))
        .collect();
    let actions: Vec<&str> = ends.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(
        actions,
        ["approval.asked", "approval.approved", "approval.abandoned"],
        "{ends:?}"
    );
    assert_eq!(ends[2].1["found_by"], "sweep", "{ends:?}");
    assert_eq!(
        entry_status(&site, "killed-c"),
        "draft",
        "killed-c was published"
    );
    settled_not_run(&site, &a, "abandoned", "killed-a");
    settled_not_run(&site, &b, "abandoned", "killed-b");
    assert_eq!(
        hold_entries(&site, &b)[1].2["found_by"],
        "server start",
        "{:?}",
        hold_entries(&site, &b)
    );
    let verified = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(verified["ok"], true, "{verified}");
}

/// The answer a client gets for a call cut short by a stopping server: a
/// JSON-RPC error (the server error `-32000`) whose data carries the stable
/// code and says so; returns the data.
#[cfg(unix)]
fn stopping_error(reply: &Value, id: Value, code: &str) -> Value {
    assert_eq!(reply["id"], id, "{reply}");
    assert!(reply.get("result").is_none(), "{reply}");
    let error = &reply["error"];
    assert_eq!(error["code"], -32000, "{reply}");
    let data = error["data"].clone();
    assert_eq!(data["code"], code, "{reply}");
    assert_eq!(data["detail"]["reason"], "server_stopping", "{reply}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("shutting down"), "{reply}");
    assert_eq!(data["message"], message, "{reply}");
    data
}

/// A held call's answer when its server stops: the approval was abandoned,
/// nothing ran.
#[cfg(unix)]
fn stopped_while_held(reply: &Value, id: Value, hold: &str) {
    let data = stopping_error(reply, id, "APPROVAL_HOLDER_GONE");
    assert!(
        data["message"].as_str().unwrap().contains("abandoned"),
        "{reply}"
    );
    assert_eq!(data["detail"]["hold"], hold, "{reply}");
    assert_eq!(data["detail"]["ran"], false, "{reply}");
}

/// The `mcp.tool_call` entries of `caller`'s `tool`, as their details.
fn call_entries(site: &TestSite, caller: &str, tool: &str) -> Vec<Value> {
    site.audit()
        .into_iter()
        .filter(|e| e["action"] == "mcp.tool_call" && e["actor"] == caller && e["subject"] == tool)
        .map(|e| serde_json::from_str(e["detail"].as_str().unwrap()).unwrap())
        .collect()
}

/// After a held call was cut short by its server stopping: the hold ended
/// `abandoned` by the stopping server itself, the call has one entry
/// (`interrupted`, with the code its client was answered), the chain holds.
#[cfg(unix)]
fn held_call_settled_by_the_stop(site: &TestSite, hold: &str, caller: &str, slug: &str) {
    settled_not_run(site, hold, "abandoned", slug);
    assert_eq!(hold_entries(site, hold)[1].2["found_by"], "server stopping");
    let publish = call_entries(site, caller, "content_publish");
    assert_eq!(publish.len(), 1, "{publish:?}");
    assert_eq!(publish[0]["outcome"], "interrupted", "{publish:?}");
    assert_eq!(publish[0]["code"], "APPROVAL_HOLDER_GONE", "{publish:?}");
    let verified = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(verified["ok"], true, "{verified}");
}

/// SIGTERM while a call waits for the owner: the server stops within its
/// drain bound (not the hold's timeout), and the client that sent the call
/// over JSON is answered with a JSON-RPC error saying the server is shutting
/// down and the approval was abandoned, never left with a connection cut
/// under it. The stopping server ends the hold itself, so nothing waits in
/// the queue for a server that is gone.
#[cfg(unix)]
#[test]
fn a_held_json_call_cut_by_sigterm_is_answered_with_a_shutdown_error_not_a_cut_connection() {
    let site = TestSite::new("approvals_http_term_json");
    owner_decides(&site, 120);
    let (key, key_id) = site.mint("editor");
    let caller = format!("key:{key_id}");
    let serve = Serve::start(&site, &["--drain", "1"]);
    write_draft(&serve, &key, "json-cut");
    let (addr, k) = (serve.addr.clone(), key.clone());
    let waiting = std::thread::spawn(move || {
        try_legacy(
            &addr,
            Some(&k),
            41,
            "tools/call",
            serde_json::json!({"name": "content_publish", "arguments": {"slug": "json-cut"}}),
        )
    });
    let hold = waiting_holds(&site, &caller, 1).remove(0);
    let stopping = Instant::now();
    let status = serve.terminate();
    eprintln!(
        "SIGTERM with a held call: stopped in {:?} ({status})",
        stopping.elapsed()
    );
    assert!(status.success(), "{status}");
    let reply = waiting
        .join()
        .unwrap()
        .expect("the held call's client got an answer, not a cut connection");
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.header("content-type"), Some("application/json"));
    stopped_while_held(&reply.json(), serde_json::json!(41), &hold);
    held_call_settled_by_the_stop(&site, &hold, &caller, "json-cut");
}

/// The same over an event stream (a 2026-07-28 call with a progress token):
/// the stream carries the progress notifications, then the shutdown error as
/// its last message, and ends.
#[cfg(unix)]
#[test]
fn a_held_streamed_call_cut_by_sigterm_ends_its_stream_with_a_shutdown_error() {
    let site = TestSite::new("approvals_http_term_sse");
    owner_decides(&site, 120);
    let (key, key_id) = site.mint("editor");
    let caller = format!("key:{key_id}");
    let serve = Serve::start(&site, &["--drain", "1"]);
    write_draft(&serve, &key, "sse-cut");
    let mut events = serve.modern_stream(
        Some(&key),
        42,
        "tools/call",
        serde_json::json!({"name": "content_publish", "arguments": {"slug": "sse-cut"},
            "_meta": {"progressToken": "p-42"}}),
    );
    let hold = waiting_holds(&site, &caller, 1).remove(0);
    let first = events
        .next_message(PATIENCE)
        .expect("a progress notification");
    assert_eq!(first["method"], "notifications/progress", "{first}");
    let status = serve.terminate();
    assert!(status.success(), "{status}");
    let mut last = None;
    while let Some(m) = events.next_message(PATIENCE) {
        if m.get("id").is_some() {
            last = Some(m);
            break;
        }
        assert_eq!(m["method"], "notifications/progress", "{m}");
    }
    let last = last.expect("the stream ended with an answer, not a cut");
    stopped_while_held(&last, serde_json::json!(42), &hold);
    assert_eq!(
        events.next_message(Duration::from_secs(5)),
        None,
        "the stream ended"
    );
    held_call_settled_by_the_stop(&site, &hold, &caller, "sse-cut");
}

/// `gatehouse mcp` (stdio) with a call waiting for the owner, at the end of
/// input and at SIGTERM: past its drain bound the call is answered on stdout
/// with the shutdown error before the server exits.
#[cfg(unix)]
#[test]
fn a_held_stdio_call_at_eof_or_sigterm_is_answered_with_a_shutdown_error() {
    let site = TestSite::new("approvals_stdio_stop");
    owner_decides(&site, 120);
    let (key, key_id) = site.mint("editor");
    let caller = format!("key:{key_id}");
    for end in ["eof", "sigterm"] {
        let slug = format!("stdio-{end}");
        let mut mcp = site.mcp(&[], &[("GATEHOUSE_API_KEY", &key)]);
        mcp.initialize("2025-11-25");
        let draft = mcp.call(
            1,
            "content_write_draft",
            serde_json::json!({"slug": slug, "title": slug, "body": "x"}),
            None,
        );
        assert_eq!(draft["result"]["isError"], false, "{draft}");
        mcp.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "content_publish", "arguments": {"slug": slug}}}),
        );
        // The earlier round's hold ended: only this one waits.
        let held = waiting_holds(&site, &caller, 1).remove(0);
        assert_eq!(hold(&site, &held)["arguments"]["slug"], slug.as_str());
        match end {
            "eof" => mcp.close_stdin(),
            _ => nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(mcp.child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            )
            .unwrap(),
        }
        let reply = mcp.response(&serde_json::json!(2));
        stopped_while_held(&reply, serde_json::json!(2), &held);
        let status = crate::mcp_util::wait_exit(&mut mcp.child);
        assert!(status.success(), "{end}: {status}; {}", mcp.stderr());
        settled_not_run(&site, &held, "abandoned", &slug);
        assert_eq!(
            hold_entries(&site, &held)[1].2["found_by"],
            "server stopping"
        );
    }
    let publish = call_entries(&site, &caller, "content_publish");
    assert_eq!(publish.len(), 2, "{publish:?}");
    for p in &publish {
        assert_eq!(p["outcome"], "interrupted", "{publish:?}");
        assert_eq!(p["code"], "APPROVAL_HOLDER_GONE", "{publish:?}");
    }
    let verified = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(verified["ok"], true, "{verified}");
}

/// `gatehouse mcp` asking the client's user (form elicitation) when SIGTERM
/// comes: the question is withdrawn (`notifications/cancelled` for it), then
/// the call is answered with the shutdown error, and the hold ends
/// `abandoned`, recorded by the stopping server.
#[cfg(unix)]
#[test]
fn a_call_waiting_on_the_clients_user_at_sigterm_withdraws_the_question_and_is_answered() {
    let site = TestSite::new("approvals_stdio_ask_stop");
    site.append_to_site_file(
        "[approvals]\neffects = [\"publish\"]\ndecide = \"client\"\ntimeout_seconds = 120",
    );
    let (key, key_id) = site.mint("editor");
    let caller = format!("key:{key_id}");
    let mut mcp = site.mcp(&[], &[("GATEHOUSE_API_KEY", &key)]);
    let init = mcp.request(
        0,
        "initialize",
        serde_json::json!({"protocolVersion": "2025-11-25", "clientInfo": {"name": "asker", "version": "1"},
            "capabilities": {"elicitation": {"form": {}}}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    mcp.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let draft = mcp.call(
        1,
        "content_write_draft",
        serde_json::json!({"slug": "asked", "title": "asked", "body": "x"}),
        None,
    );
    assert_eq!(draft["result"]["isError"], false, "{draft}");
    mcp.send(
        &serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "content_publish", "arguments": {"slug": "asked"}}}),
    );
    let question = mcp.recv();
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let text = question["params"]["message"].as_str().unwrap();
    let held: String = text[text.find("hold_").expect("the hold's id")..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    assert_eq!(hold(&site, &held)["status"], "waiting");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(mcp.child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let reply = mcp.response(&serde_json::json!(2));
    let withdrawn = mcp
        .notifications
        .iter()
        .find(|n| n["method"] == "notifications/cancelled")
        .unwrap_or_else(|| panic!("the question was not withdrawn: {:?}", mcp.notifications));
    assert_eq!(
        withdrawn["params"]["requestId"], question["id"],
        "{withdrawn}"
    );
    stopped_while_held(&reply, serde_json::json!(2), &held);
    let status = crate::mcp_util::wait_exit(&mut mcp.child);
    assert!(status.success(), "{status}; {}", mcp.stderr());
    let h = hold(&site, &held);
    assert_eq!(
        (&h["status"], &h["decided_by"]),
        (&"abandoned".into(), &"gatehouse".into()),
        "{h}"
    );
    let ends: Vec<_> = hold_entries(&site, &held)
        .into_iter()
        .map(|(a, _, d)| (a, d["found_by"].clone()))
        .collect();
    assert_eq!(
        ends,
        [
            ("approval.asked".to_string(), Value::Null),
            ("approval.abandoned".to_string(), "server stopping".into())
        ],
        "{ends:?}"
    );
    let publish = call_entries(&site, &caller, "content_publish");
    assert_eq!(publish.len(), 1, "{publish:?}");
    assert_eq!(publish[0]["outcome"], "interrupted", "{publish:?}");
    let verified = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(verified["ok"], true, "{verified}");
}

/// Publishing held for editors; an admin key sets entries up unheld.
fn editors_publish_held(site: &TestSite) -> String {
    site.append_to_site_file(
        "[approvals]\neffects = [\"publish\"]\nroles = [\"editor\"]\ndecide = \"owner\"\ntimeout_seconds = 120",
    );
    site.mint("admin").0
}

/// `call`, on a thread of its own: the answer once the hold ends.
fn held_call(
    serve: &Serve,
    key: &str,
    tool: &'static str,
    arguments: Value,
) -> std::thread::JoinHandle<Option<Value>> {
    let (addr, key) = (serve.addr.clone(), key.to_string());
    std::thread::spawn(move || call(&addr, &key, tool, arguments))
}

/// The stable code of a tool's error result (its text block is the error).
fn code_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .and_then(|e| e["error"]["code"].as_str().map(String::from))
        .unwrap_or_else(|| result.to_string())
}

/// A key that may publish but reads only published entries publishes the
/// pending revision it cannot read: the owner is shown that revision (it had
/// been shown an empty diff, the key's view), and one swapped in after the
/// yes is refused, never published.
#[test]
fn a_publish_held_for_a_key_blind_to_drafts_shows_the_revision_and_refuses_a_swapped_one() {
    let site = TestSite::new("approvals_blind_publish");
    let admin = editors_publish_held(&site);
    let (blind, blind_id) = mint(&site, &["--content-status", "published"]);
    let serve = Serve::start(&site, &[]);
    let draft = |body: &str| {
        let args = serde_json::json!({"slug": "swap", "title": "Swap", "body": body});
        let r = call(&serve.addr, &admin, "content_write_draft", args).expect("an answer");
        assert_eq!(r["isError"], false, "{r}");
    };
    draft("live v1");
    let r = call(
        &serve.addr,
        &admin,
        "content_publish",
        serde_json::json!({"slug": "swap"}),
    )
    .expect("an answer");
    assert_eq!(r["isError"], false, "{r}");
    draft("pending v2");

    let waiting = held_call(
        &serve,
        &blind,
        "content_publish",
        serde_json::json!({"slug": "swap"}),
    );
    let id = waiting_holds(&site, &format!("key:{blind_id}"), 1).remove(0);
    let shown = hold(&site, &id);
    let diff = shown["diff"].as_str().unwrap_or_default();
    assert!(
        diff.contains("-live v1") && diff.contains("+pending v2"),
        "{shown}"
    );
    draft("pending v3, swapped in after the yes");
    site.ok(&["approvals", "approve", &id]);
    let r = waiting.join().unwrap().expect("an answer");
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(code_of(&r), "APPROVAL_STALE", "{r}");
    let live = call(
        &serve.addr,
        &admin,
        "content_read",
        serde_json::json!({"slug": "swap"}),
    )
    .expect("an answer");
    assert_eq!(live["structuredContent"]["body"], "live v1", "{live}");
}

/// A hold takes its call from the key's rate, once: a key of two calls a
/// minute gets two holds, not a queue full of them, and an approved hold
/// runs without a second call taken.
#[test]
fn a_held_call_takes_its_call_from_the_keys_rate_once() {
    let site = TestSite::new("approvals_rate");
    let admin = editors_publish_held(&site);
    let (key, key_id) = mint(&site, &["--rate", "2/min"]);
    let serve = Serve::start(&site, &[]);
    for slug in ["rate-a", "rate-b", "rate-c"] {
        write_draft(&serve, &admin, slug);
    }
    let publish = |slug: &str| serde_json::json!({"slug": slug});
    let waiting: Vec<_> = ["rate-a", "rate-b"]
        .into_iter()
        .map(|slug| held_call(&serve, &key, "content_publish", publish(slug)))
        .collect();
    let holds = waiting_holds(&site, &format!("key:{key_id}"), 2);
    let third = call(&serve.addr, &key, "content_publish", publish("rate-c")).expect("an answer");
    assert_eq!(code_of(&third), "KEY_RATE_LIMITED", "{third}");
    assert_eq!(waiting_holds(&site, &format!("key:{key_id}"), 2).len(), 2);
    for id in &holds {
        site.ok(&["approvals", "approve", id]);
    }
    for t in waiting {
        let r = t.join().unwrap().expect("an answer");
        assert_eq!(r["isError"], false, "an approved hold ran: {r}");
    }
}

/// A key's own `--approve` list is an admin's restriction on the key: its
/// calls wait for the owner, never for the key holder's own client, whatever
/// `decide` says (the client's yes had published under the default,
/// `decide = "client"`). The site's own rule still asks the client.
#[test]
fn a_keys_own_approve_list_is_never_answered_by_the_keys_client() {
    let site = TestSite::new("approvals_key_list_owner");
    site.append_to_site_file(
        "[approvals]\ntools = [\"content_write_draft\"]\nroles = [\"editor\"]\ndecide = \"client\"\ntimeout_seconds = 120",
    );
    let (admin, _) = site.mint("admin");
    let (key, key_id) = mint(&site, &["--approve", "publish"]);
    let caller = format!("key:{key_id}");
    let mut mcp = site.mcp(&[], &[("GATEHOUSE_API_KEY", &admin)]);
    mcp.initialize("2025-11-25");
    let draft = mcp.call(
        1,
        "content_write_draft",
        serde_json::json!({"slug": "own-list", "title": "t", "body": "x"}),
        None,
    );
    assert_eq!(draft["result"]["isError"], false, "{draft}");
    assert!(mcp.finish().success());
    let mut mcp = site.mcp(&[], &[("GATEHOUSE_API_KEY", &key)]);
    let init = mcp.request(
        0,
        "initialize",
        serde_json::json!({"protocolVersion": "2025-11-25", "clientInfo": {"name": "holder", "version": "1"},
            "capabilities": {"elicitation": {"form": {}}}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    mcp.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    mcp.send(
        &serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "content_publish", "arguments": {"slug": "own-list"}}}),
    );
    let id = waiting_holds(&site, &caller, 1).remove(0);
    assert_eq!(hold(&site, &id)["decider"], "owner", "{}", hold(&site, &id));
    site.ok(&["approvals", "deny", &id]);
    let reply = mcp.response(&serde_json::json!(2));
    assert_eq!(code_of(&reply["result"]), "APPROVAL_DENIED", "{reply}");
    assert!(
        mcp.notifications
            .iter()
            .all(|n| n["method"] != "elicitation/create"),
        "the key's client was asked: {:?}",
        mcp.notifications
    );
    // The site's rule, though, asks the client as its table says.
    mcp.send(
        &serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "content_write_draft", "arguments": {"slug": "own-list", "title": "t", "body": "y"}}}),
    );
    let question = mcp.recv();
    assert_eq!(question["method"], "elicitation/create", "{question}");
}

/// A key's networks are checked on every call of an HTTP batch, as its
/// roles are: checked once per request, a call after a held one ran from a
/// network the key had been moved off while the first was held.
#[test]
fn a_batch_call_after_a_held_one_is_refused_once_the_key_left_the_network() {
    let site = TestSite::new("approvals_batch_network");
    let admin = editors_publish_held(&site);
    let (key, key_id) = mint(&site, &["--from", "127.0.0.1"]);
    let serve = Serve::start(&site, &[]);
    write_draft(&serve, &admin, "batch-a");
    let (addr, k) = (serve.addr.clone(), key.clone());
    let batch = std::thread::spawn(move || {
        let auth = format!("Bearer {k}");
        let body = serde_json::json!([
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
             "params": {"name": "content_publish", "arguments": {"slug": "batch-a"}}},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "content_write_draft",
                        "arguments": {"slug": "after-move", "title": "t", "body": "b"}}},
        ]);
        crate::serve_util::request(
            &addr,
            "POST",
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", "2025-03-26"),
                ("Authorization", &auth),
            ],
            &serde_json::to_vec(&body).unwrap(),
        )
    });
    let holds = waiting_holds(&site, &format!("key:{key_id}"), 1);
    site.ok(&["keys", "restrict", &key_id, "--from", "10.0.0.0/8"]);
    site.ok(&["approvals", "deny", &holds[0]]);
    let answers = batch.join().unwrap().json();
    let second = answers
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == 2)
        .unwrap();
    assert_eq!(
        code_of(&second["result"]),
        "KEY_NETWORK_NOT_ALLOWED",
        "{answers}"
    );
    let drafts = site.sql("SELECT COUNT(*) FROM content WHERE slug = 'after-move'");
    assert_eq!(drafts.trim(), "0");
}

/// Every call counts against a key's rate, the ones refused before they
/// reach a tool too: calls of a tool that does not exist, and answers to a
/// hold that does not exist, had all been served and audited without limit.
#[test]
fn calls_of_unknown_tools_and_answers_to_no_hold_count_against_the_keys_rate() {
    let site = TestSite::new("approvals_rate_refused");
    let (key, key_id) = mint(&site, &["--rate", "2/min", "--approve", "publish"]);
    let serve = Serve::start(&site, &[]);
    let unknown = |n: u64| {
        try_legacy(
            &serve.addr,
            Some(&key),
            n,
            "tools/call",
            serde_json::json!({"name": "no_such_tool", "arguments": {}}),
        )
        .unwrap()
        .json()
    };
    let first = unknown(1);
    assert!(
        first["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Unknown tool"),
        "{first}"
    );
    let made_up = serve.modern(
        Some(&key),
        "tools/call",
        serde_json::json!({"name": "content_publish", "arguments": {"slug": "welcome"},
                           "requestState": "hold_made_up"}),
    );
    assert_eq!(
        code_of(&made_up.json()["result"]),
        "APPROVAL_NOT_FOUND",
        "{}",
        made_up.text()
    );
    // Two calls taken: both kinds are refused by the rate from here on.
    assert_eq!(code_of(&unknown(3)["result"]), "KEY_RATE_LIMITED");
    let again = serve.modern(
        Some(&key),
        "tools/call",
        serde_json::json!({"name": "content_publish", "arguments": {"slug": "welcome"},
                           "requestState": "hold_made_up"}),
    );
    assert_eq!(
        code_of(&again.json()["result"]),
        "KEY_RATE_LIMITED",
        "{}",
        again.text()
    );
    let refused = call_entries(&site, &format!("key:{key_id}"), "<unknown>");
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert_eq!(refused[1]["code"], "KEY_RATE_LIMITED", "{refused:?}");
}

/// `keys mint --approve publish` on a site without an `[approvals]` table
/// holds the key's publishing for the default timeout (it had been refused
/// at once, with a timeout of zero).
#[test]
fn a_keys_own_approve_list_holds_without_an_approvals_table() {
    let site = TestSite::new("approvals_key_only");
    let (admin, _) = site.mint("admin");
    let (key, key_id) = mint(&site, &["--approve", "publish"]);
    let serve = Serve::start(&site, &[]);
    write_draft(&serve, &admin, "own-list");
    let waiting = held_call(
        &serve,
        &key,
        "content_publish",
        serde_json::json!({"slug": "own-list"}),
    );
    let id = waiting_holds(&site, &format!("key:{key_id}"), 1).remove(0);
    let h = hold(&site, &id);
    let waits = h["expires_at"].as_i64().unwrap() - h["created_at"].as_i64().unwrap();
    assert_eq!(waits, 300_000, "{h}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(hold(&site, &id)["status"], "waiting");
    site.ok(&["approvals", "approve", &id]);
    let r = waiting.join().unwrap().expect("an answer");
    assert_eq!(r["isError"], false, "{r}");
}

/// Moving a published entry to another slug changes its live address, which
/// takes the publish permission: a policy holding publishing holds it too.
#[test]
fn renaming_a_published_entry_waits_as_publishing_does() {
    let site = TestSite::new("approvals_rename");
    let admin = editors_publish_held(&site);
    let (editor, editor_id) = mint(&site, &[]);
    let serve = Serve::start(&site, &[]);
    write_draft(&serve, &admin, "moving");
    let r = call(
        &serve.addr,
        &admin,
        "content_publish",
        serde_json::json!({"slug": "moving"}),
    )
    .expect("an answer");
    assert_eq!(r["isError"], false, "{r}");
    // A draft's rename changes no live address: not held.
    write_draft(&serve, &admin, "draft-only");
    let r = call(
        &serve.addr,
        &editor,
        "content_write_draft",
        serde_json::json!({"slug": "draft-only", "title": "d", "body": "x", "new_slug": "draft-moved"}),
    )
    .expect("an answer");
    assert_eq!(r["isError"], false, "{r}");

    let waiting = held_call(
        &serve,
        &editor,
        "content_write_draft",
        serde_json::json!({"slug": "moving", "title": "Moving", "body": "x", "new_slug": "moved"}),
    );
    let id = waiting_holds(&site, &format!("key:{editor_id}"), 1).remove(0);
    let summary = hold(&site, &id)["summary"].as_str().unwrap().to_string();
    assert!(
        summary.contains("move it from moving to moved"),
        "{summary}"
    );
    site.ok(&["approvals", "deny", &id]);
    let r = waiting.join().unwrap().expect("an answer");
    assert_eq!(code_of(&r), "APPROVAL_DENIED", "{r}");
    let read = |slug: &str| {
        call(
            &serve.addr,
            &admin,
            "content_read",
            serde_json::json!({"slug": slug}),
        )
        .expect("an answer")
    };
    assert_eq!(read("moving")["isError"], false);
    assert_eq!(read("moved")["isError"], true);
}

/// Over HTTP a held call waits as long as the policy says, past the
/// request timeout (40 s), which had ended every hold `abandoned`.
#[test]
fn an_http_call_held_past_the_request_timeout_still_runs_once_approved() {
    let site = TestSite::new("approvals_http_long");
    owner_decides(&site, 120);
    let (key, key_id) = site.mint("editor");
    let serve = Serve::start(&site, &[]);
    write_draft(&serve, &key, "long-wait");
    write_draft(&serve, &key, "long-batch");
    let publish = |id: u32, slug: &str| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "content_publish", "arguments": {"slug": slug}}})
    };
    // The tests' own client gives up after 30 s: this one waits longer.
    let send = |body: Value| {
        use std::io::{Read, Write};
        let (addr, key) = (serve.addr.clone(), key.clone());
        std::thread::spawn(move || {
            let body = body.to_string();
            let mut s = std::net::TcpStream::connect(&addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
            write!(s, "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json\r\nMCP-Protocol-Version: 2025-03-26\r\nAuthorization: Bearer {key}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).unwrap();
            let mut raw = String::new();
            let _ = s.read_to_string(&mut raw);
            raw
        })
    };
    // Alone, and inside a batch (its own deadline).
    let alone = send(publish(1, "long-wait"));
    let batch = send(serde_json::json!([publish(2, "long-batch")]));
    let ids = waiting_holds(&site, &format!("key:{key_id}"), 2);
    std::thread::sleep(Duration::from_secs(45));
    for id in &ids {
        assert_eq!(hold(&site, id)["status"], "waiting");
        site.ok(&["approvals", "approve", id]);
    }
    for raw in [alone.join().unwrap(), batch.join().unwrap()] {
        assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
        assert!(raw.contains("\"isError\":false"), "{raw}");
    }
    assert_eq!(entry_status(&site, "long-wait"), "published");
    assert_eq!(entry_status(&site, "long-batch"), "published");
}

/// At most 16 of one caller's calls wait at once: each holds a request slot
/// for the policy's timeout, and one key from four networks had held all 256
/// (and filled the owner's queue).
#[test]
fn one_caller_has_at_most_sixteen_calls_waiting() {
    let site = TestSite::new("approvals_queue_full");
    owner_decides(&site, 120);
    let (key, key_id) = site.mint("editor");
    let serve = Serve::start(&site, &[]);
    write_draft(&serve, &key, "many");
    let waiting: Vec<_> = (0..16)
        .map(|_| {
            held_call(
                &serve,
                &key,
                "content_publish",
                serde_json::json!({"slug": "many"}),
            )
        })
        .collect();
    let ids = waiting_holds(&site, &format!("key:{key_id}"), 16);
    let r = call(
        &serve.addr,
        &key,
        "content_publish",
        serde_json::json!({"slug": "many"}),
    )
    .expect("an answer");
    assert_eq!(code_of(&r), "APPROVAL_QUEUE_FULL", "{r}");
    assert_eq!(waiting_holds(&site, &format!("key:{key_id}"), 16).len(), 16);
    for id in &ids {
        site.ok(&["approvals", "deny", id]);
    }
    for t in waiting {
        assert_eq!(
            code_of(&t.join().unwrap().expect("an answer")),
            "APPROVAL_DENIED"
        );
    }
}

/// Calls waiting for the owner hold their request slots: one client network
/// may hold a quarter of them, never all (256 held calls from one network had
/// left everyone else "every request slot is taken"). Client addresses come
/// through a trusted proxy here, as they would from many machines.
#[test]
fn one_network_of_held_calls_keeps_a_share_of_the_request_slots_not_all() {
    let site = TestSite::new("approvals_slot_share");
    owner_decides(&site, 120);
    let (key, key_id) = site.mint("editor");
    let serve = Serve::start(
        &site,
        &["--max-in-flight", "8", "--behind-proxy", "127.0.0.1"],
    );
    let post = |from: &str, method: &str, params: Value| {
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let auth = format!("Bearer {key}");
        crate::serve_util::request(
            &serve.addr,
            "POST",
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("MCP-Protocol-Version", crate::serve_util::LEGACY),
                ("Authorization", &auth),
                ("X-Forwarded-For", from),
            ],
            body.to_string().as_bytes(),
        )
    };
    for slug in ["share-a", "share-b"] {
        write_draft(&serve, &key, slug);
    }
    std::thread::scope(|scope| {
        for (i, slug) in ["share-a", "share-b"].into_iter().enumerate() {
            let post = &post;
            scope.spawn(move || {
                let args =
                    serde_json::json!({"name": "content_publish", "arguments": {"slug": slug}});
                post(&format!("192.0.2.{}", i + 1), "tools/call", args)
            });
        }
        let holds = waiting_holds(&site, &format!("key:{key_id}"), 2);
        let same = post("192.0.2.3", "tools/list", serde_json::json!({}));
        assert_eq!(same.status, 503, "{}", same.text());
        assert!(same.text().contains("share"), "{}", same.text());
        let other = post("198.51.100.1", "tools/list", serde_json::json!({}));
        assert_eq!(other.status, 200, "another network: {}", other.text());
        for id in &holds {
            site.ok(&["approvals", "deny", id]);
        }
    });
    assert_eq!(
        post("192.0.2.3", "tools/list", serde_json::json!({})).status,
        200,
        "the slots came back with the answers"
    );
}

/// A request refused for want of a request slot was never served, so it
/// spends none of its key's rate: a client retrying through a spell of 503s
/// had found its whole burst gone once slots were free again, and was
/// refused 429.
#[test]
fn a_refusal_for_want_of_a_slot_spends_none_of_the_keys_rate() {
    let site = TestSite::new("approvals_busy_rate");
    owner_decides(&site, 120);
    let (writer, _) = site.mint("editor");
    let (holder, holder_id) = site.mint("editor");
    let (limited, _) = site.mint("viewer");
    // Four slots: loopback's share is one, which the held call takes. A
    // request every ten seconds per key, a burst of one.
    let serve = Serve::start(&site, &["--max-in-flight", "4", "--rate", "0.1"]);
    write_draft(&serve, &writer, "busy");
    let held = held_call(
        &serve,
        &holder,
        "content_publish",
        serde_json::json!({"slug": "busy"}),
    );
    let holds = waiting_holds(&site, &format!("key:{holder_id}"), 1);
    for _ in 0..3 {
        let r = serve.legacy(Some(&limited), "tools/list", serde_json::json!({}));
        assert_eq!(r.status, 503, "{}", r.text());
    }
    site.ok(&["approvals", "deny", &holds[0]]);
    assert_eq!(
        code_of(&held.join().unwrap().expect("an answer")),
        "APPROVAL_DENIED"
    );
    let served = serve.legacy(Some(&limited), "tools/list", serde_json::json!({}));
    assert_eq!(served.status, 200, "the burst is whole: {}", served.text());
    let over = serve.legacy(Some(&limited), "tools/list", serde_json::json!({}));
    assert_eq!(over.status, 429, "and it is one: {}", over.text());
}

/// A call the caller's content scope refuses is refused as usual, never held
/// (its question would have named an entry outside the scope); a rename of a
/// published entry waits under a policy naming `content_publish` as under
/// one naming the effect.
#[test]
fn out_of_scope_calls_are_refused_not_held_and_renames_wait_under_the_tools_name() {
    let site = TestSite::new("approvals_scope");
    let (admin, _) = site.mint("admin");
    let (scoped, scoped_id) = mint(&site, &["--content", "blog-*", "--approve", "publish"]);
    let (by_name, by_name_id) = mint(&site, &["--approve", "content_publish"]);
    let serve = Serve::start(&site, &[]);
    write_draft(&serve, &admin, "outside");
    let r = call(
        &serve.addr,
        &scoped,
        "content_publish",
        serde_json::json!({"slug": "outside"}),
    )
    .expect("an answer");
    assert_eq!(r["isError"], true, "{r}");
    assert_ne!(code_of(&r), "APPROVAL_QUEUE_FULL", "{r}");
    let held = site.ok_json(&["approvals", "list", "--json"]);
    assert!(
        held.as_array()
            .unwrap()
            .iter()
            .all(|h| h["actor"] != format!("key:{scoped_id}")),
        "{held}"
    );

    write_draft(&serve, &admin, "named-move");
    let r = call(
        &serve.addr,
        &admin,
        "content_publish",
        serde_json::json!({"slug": "named-move"}),
    )
    .expect("an answer");
    assert_eq!(r["isError"], false, "{r}");
    let waiting = held_call(
        &serve,
        &by_name,
        "content_write_draft",
        serde_json::json!({"slug": "named-move", "title": "M", "body": "x", "new_slug": "named-moved"}),
    );
    let id = waiting_holds(&site, &format!("key:{by_name_id}"), 1).remove(0);
    site.ok(&["approvals", "deny", &id]);
    assert_eq!(
        code_of(&waiting.join().unwrap().expect("an answer")),
        "APPROVAL_DENIED"
    );
}

/// A held call runs as its key is when the yes comes, not as it was when the
/// call arrived: a key revoked, narrowed to other entries or moved off the
/// caller's network while its publish waits is refused after the yes, and
/// nothing is published (the call had run with the key it came with).
#[cfg(unix)]
#[test]
fn a_held_call_of_a_key_revoked_narrowed_or_moved_off_its_network_while_it_waits_never_runs() {
    let site = TestSite::new("approvals_key_changed");
    let admin = editors_publish_held(&site);
    let serve = Serve::start(&site, &[]);
    let changes: [(&str, &[&str], &str); 3] = [
        ("held-revoked", &["revoke"], "ACTOR_API_KEY_INVALID"),
        (
            "held-narrowed",
            &["restrict", "--content", "other-*"],
            "KEY_SCOPE_CONTENT",
        ),
        (
            "held-moved",
            &["restrict", "--from", "10.0.0.0/8"],
            "KEY_NETWORK_NOT_ALLOWED",
        ),
    ];
    for (slug, change, code) in changes {
        write_draft(&serve, &admin, slug);
        let (key, key_id) = mint(&site, &[]);
        let waiting = held_call(
            &serve,
            &key,
            "content_publish",
            serde_json::json!({"slug": slug}),
        );
        let id = waiting_holds(&site, &format!("key:{key_id}"), 1).remove(0);
        let mut args = vec!["keys"];
        args.extend_from_slice(&change[..1]);
        args.push(&key_id);
        args.extend_from_slice(&change[1..]);
        site.ok(&args);
        site.ok(&["approvals", "approve", &id]);
        let r = waiting.join().unwrap().expect("an answer");
        assert_eq!(r["isError"], true, "{slug}: {r}");
        assert_eq!(code_of(&r), code, "{slug}: {r}");
        let recorded = call_entries(&site, &format!("key:{key_id}"), "content_publish");
        assert_eq!(recorded.len(), 1, "{slug}: {recorded:?}");
        assert_eq!(recorded[0]["code"], code, "{slug}: {recorded:?}");
    }
    drop(serve);
    for (slug, _, _) in changes {
        assert_eq!(entry_status(&site, slug), "draft", "{slug} was published");
    }
}

/// A rename onto a slug outside the key's content scope is refused at once,
/// as a write there is, never held first: the owner was asked about a move
/// the write then refused after the yes.
#[test]
fn an_out_of_scope_new_slug_is_refused_not_held() {
    let site = TestSite::new("approvals_scope_rename");
    site.append_to_site_file(
        "[approvals]\neffects = [\"write\"]\nroles = [\"editor\"]\ndecide = \"owner\"\ntimeout_seconds = 3",
    );
    let (admin, _) = site.mint("admin");
    let (scoped, scoped_id) = mint(&site, &["--content", "blog-*"]);
    let serve = Serve::start(&site, &[]);
    write_draft(&serve, &admin, "blog-six");
    let r = call(
        &serve.addr,
        &scoped,
        "content_write_draft",
        serde_json::json!({"slug": "blog-six", "title": "Six", "body": "x", "new_slug": "secret-six"}),
    )
    .expect("an answer");
    assert_eq!(code_of(&r), "KEY_SCOPE_CONTENT", "{r}");
    let asked = site
        .audit()
        .into_iter()
        .filter(|e| e["action"] == "approval.asked" && e["actor"] == format!("key:{scoped_id}"))
        .count();
    assert_eq!(asked, 0, "the owner was asked about an out-of-scope rename");
}
