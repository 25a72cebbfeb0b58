//! Server budgets and hostile text (decision "Policy") through the real
//! binary: slots and memory of the MCP server, durations that would overflow,
//! labels that lie about their text, terminal-safe output, media that is only
//! dressed as its type.

use serde_json::{Value, json};

use crate::mcp_util::{McpSite, modern, tool_error, wait_exit};
use crate::util::TestSite;

/// Peak resident memory of a process, from /proc (VmHWM), in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc status")
}

#[test]
fn listens_cannot_take_the_request_slots_and_end_of_input_still_ends_the_server() {
    let site = TestSite::new("listen_slots");
    let mut m = site.mcp(&[], &[]);
    // More long-lived listens than there are request slots (32).
    for id in 0..40 {
        m.send(
            &json!({"jsonrpc": "2.0", "id": 1000 + id, "method": "subscriptions/listen",
            "params": modern(json!({"notifications": {"toolsListChanged": true}}))}),
        );
    }
    // The reader still reads: calls are answered, extra listens are told "busy".
    let tools = m.request(1, "tools/list", modern(json!({})));
    assert!(tools["result"]["tools"].is_array(), "{tools}");
    let busy = m.response(&json!(1039));
    assert_eq!(busy["error"]["code"], -32000, "{busy}");
    assert!(busy["error"]["message"].as_str().unwrap().contains("busy"));
    // End of input ends the server even with listens open.
    m.close_stdin();
    let status = wait_exit(&mut m.child);
    assert!(status.success(), "{status:?}");
}

/// Every ordinary request slot (32) taken by calls held up (their writes
/// wait behind another process's write lock): the reader keeps reading, a
/// further request is told "busy" at once, and when the lock goes every held
/// call is answered and the chain verifies.
#[test]
fn a_full_request_slot_table_answers_busy_at_once_and_keeps_reading() {
    let site = TestSite::new("request_slots");
    if site.db_file().is_none() {
        return; // the lock that holds the calls is SQLite's
    }
    let mut m = site.mcp(&["--role", "editor"], &[]);
    m.initialize("2025-11-25");
    let locker = site.hold_audit_writes();

    let draft = |n: i64| {
        json!({"name": "content_write_draft",
            "arguments": {"slug": format!("held-{n}"), "title": "Held", "body": "held"}})
    };
    for id in 100..132 {
        m.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": draft(id)}));
    }
    // Answered while the 32 still wait: the reader never waits for a slot.
    let busy = m.request(200, "tools/call", draft(200));
    assert_eq!(busy["error"]["code"], -32000, "{busy}");
    assert!(
        busy["error"]["message"]
            .as_str()
            .unwrap()
            .contains("every request slot is taken"),
        "{busy}"
    );
    locker.release("");
    for id in 100..132 {
        let r = m.response(&json!(id));
        assert_eq!(r["result"]["isError"], false, "{r}");
    }
    assert!(
        m.tool_names(300, json!({}))
            .contains(&"content_write_draft".to_string())
    );
    assert!(m.finish().success());
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}

/// The memory bound over all requests together (256 MiB of parse cost):
/// calls each costing ~30 MiB once parsed (a large `_meta` beside valid
/// arguments, so each passes every check and is held by its audit write
/// behind another process's lock) are taken until the budget is full;
/// the next is told "busy" at once instead of being parsed, and every held
/// call is answered once the lock goes.
#[test]
fn requests_in_flight_together_stay_within_the_total_memory_budget() {
    held_calls_stay_within_the_budget("total_budget", Pad::Meta);
}

/// The same flood with the weight in the arguments, which a call's checks
/// and its pending audit entry read: a call waiting for its entry holds one
/// parsed copy of them, the one the budget counts, not a second for the
/// entry or the schema check (with those copies, eight held calls grew the
/// server by 499 MB where the budget is 256 MiB).
#[test]
fn a_call_waiting_for_its_audit_entry_holds_no_second_copy_of_its_arguments() {
    held_calls_stay_within_the_budget("budget_in_arguments", Pad::Arguments);
}

enum Pad {
    Meta,
    Arguments,
}

/// The two floods take turns: each parses ~4 million values on the server's
/// one reader, which must be done before SQLite's 15 s lock wait runs out
/// for the first held call, and two at once on a loaded machine came near it.
static ONE_FLOOD_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn held_calls_stay_within_the_budget(name: &str, at: Pad) {
    let _turn = ONE_FLOOD_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let site = TestSite::new(name);
    let mut m = site.mcp(&["--role", "editor"], &[]);
    m.initialize("2025-11-25");
    let before = peak_rss_kib(m.child.id());
    let locker = site.hold_audit_writes();

    // ~462,000 one-letter strings: 1.8 MiB of text, ~30 MiB by the server's
    // estimate (under the 32 MiB bound for one message).
    let pad = format!("[{}\"a\"]", "\"a\",".repeat(462_000));
    let params = match at {
        Pad::Meta => format!(
            r#"{{"name":"content_read","arguments":{{"slug":"welcome"}},"_meta":{{"pad":{pad}}}}}"#
        ),
        Pad::Arguments => {
            format!(r#"{{"name":"content_read","arguments":{{"slug":"welcome","pad":{pad}}}}}"#)
        }
    };
    let line = |id: i64| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#)
    };
    // Eight fit in 256 MiB; the rest must be refused without being held.
    let sent = std::time::Instant::now();
    for id in 100..110 {
        m.send_raw(line(id).as_bytes());
    }
    // The refusals come at once, while the held calls still wait.
    let mut busy = Vec::new();
    for _ in 0..2 {
        let r = m.recv();
        assert_eq!(r["error"]["code"], -32000, "{r}");
        let message = r["error"]["message"].as_str().unwrap();
        assert!(message.contains("memory budget"), "{message}");
        busy.push(r["id"].as_i64().unwrap());
    }
    println!(
        "{name}: eight held and two refused {:?} after the first line",
        sent.elapsed()
    );
    locker.release("");
    let held: Vec<i64> = (100..110).filter(|id| !busy.contains(id)).collect();
    for id in &held {
        let r = m.response(&json!(id));
        match at {
            Pad::Meta => assert_eq!(r["result"]["isError"], false, "{r}"),
            // An argument the schema does not know: refused, after its entry.
            Pad::Arguments => assert_eq!(tool_error(&r)["code"], "TOOL_ARGUMENTS_INVALID"),
        }
    }
    assert_eq!(held.len(), 8, "held {held:?}, busy {busy:?}");
    // Eight parsed calls take ~235 MiB here; all ten would take 60 MiB more.
    // One message's bound of slack for the reader's own buffers.
    let grown = peak_rss_kib(m.child.id()) - before;
    println!("{name}: peak memory grew by {grown} KiB with eight calls held");
    assert!(
        grown < (256 + 32) * 1024,
        "peak memory grew by {grown} KiB, past the budget"
    );
    assert!(m.finish().success());
    let verify = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(verify["ok"], true, "{verify}");
    let calls = site.ok_json(&["audit", "list", "--limit", "5000", "--json"]);
    let entries = calls.as_array().unwrap().iter();
    let held_entries = entries.filter(|e| e["action"] == "mcp.tool_call").count();
    assert_eq!(held_entries, 8, "{calls}");
}

#[test]
fn a_message_that_would_expand_in_memory_is_refused_before_it_is_parsed() {
    let site = TestSite::new("cost_bound");
    let mut m = site.mcp(&[], &[]);
    m.initialize("2025-06-18");
    let before = peak_rss_kib(m.child.id());
    // ~4 MiB of tiny values: about 2 million JSON values once parsed.
    let mut line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"content_list","arguments":{"x":["#.to_vec();
    while line.len() < 4 * 1024 * 1024 - 64 {
        line.extend_from_slice(b"0,");
    }
    line.extend_from_slice(b"0]}}}");
    for _ in 0..3 {
        m.send_raw(&line);
        let r = m.response(&json!(7));
        assert_eq!(r["error"]["data"]["reason"], "too_costly", "{r}");
    }
    let after = peak_rss_kib(m.child.id());
    assert!(
        after < before + 48 * 1024,
        "peak memory grew from {before} KiB to {after} KiB"
    );
    // Still serving.
    let r = m.call(8, "content_list", json!({}), None);
    assert!(
        r["result"]["structuredContent"]["entries"].is_array(),
        "{r}"
    );
}

#[test]
fn overflowing_durations_are_refused_with_a_clear_error() {
    let site = TestSite::new("durations");
    let f = site.fails(&[
        "keys",
        "mint",
        "--label",
        "x",
        "--roles",
        "viewer",
        "--expires-in",
        "106751991167d",
    ]);
    assert_eq!(f.code, "EXPIRY_INVALID", "{}", f.stderr);
    assert!(f.stderr.contains("too long"), "{}", f.stderr);
    assert!(!f.stderr.contains("panicked"), "{}", f.stderr);
    let (_, id) = site.mint("viewer");
    for grace in ["106751991167d", "18446744073709551615s", "36501d"] {
        let f = site.fails(&["keys", "roll", &id, "--grace", grace]);
        assert_eq!(f.code, "DURATION_INVALID", "{grace}: {}", f.stderr);
        assert!(!f.stderr.contains("panicked"), "{}", f.stderr);
    }
    // Sane values still work.
    site.ok(&[
        "keys",
        "mint",
        "--label",
        "y",
        "--roles",
        "viewer",
        "--expires-in",
        "3650d",
    ]);
}

#[test]
fn labels_with_bidirectional_overrides_are_refused() {
    let site = TestSite::new("bidi_labels");
    let f = site.fails(&[
        "keys",
        "mint",
        "--label",
        "ci-bot\u{202e}nimda",
        "--roles",
        "viewer",
    ]);
    assert_eq!(f.code, "LABEL_INVALID");
    assert!(f.stderr.contains("U+202E"), "{}", f.stderr);
    let f = site.fails(&[
        "users",
        "create",
        "--email",
        "eve\u{2067}@example.com",
        "--roles",
        "viewer",
    ]);
    assert_eq!(f.code, "EMAIL_INVALID");
    let f = site.fails(&[
        "users",
        "update",
        "--email",
        "viewer@example.com",
        "--display-name",
        "Ada\u{202d}L",
    ]);
    assert_eq!(f.code, "DISPLAY_NAME_INVALID");
}

/// An invisible character makes a label look like another: a user
/// `admin\u{200b}@example.com` was listed, audited and shown as the author
/// of entries exactly as the admin. Refused in emails, display names and key
/// labels, naming the character.
#[test]
fn labels_with_invisible_characters_are_refused() {
    let site = TestSite::new("robust_invisible");
    for (email, c) in [
        ("admin\u{200b}@example.com", "U+200B"),
        ("admin@example.com\u{00ad}", "U+00AD"),
        ("\u{feff}admin@example.com", "U+FEFF"),
    ] {
        let f = site.fails(&["users", "create", "--email", email, "--roles", "viewer"]);
        assert_eq!(f.code, "EMAIL_INVALID", "{email:?}");
        assert!(f.stderr.contains(c), "{}", f.stderr);
    }
    let f = site.fails(&[
        "users",
        "update",
        "--email",
        "viewer@example.com",
        "--display-name",
        "Site\u{2060}Admin",
    ]);
    assert_eq!(f.code, "DISPLAY_NAME_INVALID");
    let f = site.fails(&[
        "keys",
        "mint",
        "--label",
        "ci\u{200c}bot",
        "--roles",
        "viewer",
    ]);
    assert_eq!(f.code, "LABEL_INVALID");
}

#[test]
fn cli_text_output_escapes_control_and_bidi_characters() {
    let site = TestSite::new("escape_output");
    let (_, id) = site.mint("viewer");
    // A label written straight into the database (an old row, an import, a
    // tampered site) with an OSC 52 clipboard write and a bidi override.
    site.sql(&format!(
        "UPDATE api_keys SET label = 'x' || char(27) || ']52;c;cm0gLXJmIH4=' || char(7) || 'y' || char(8238) || 'z' WHERE id = '{id}'"
    )
    .replace(
        "char(",
        if site.database_url.is_some() { "chr(" } else { "char(" },
    ));
    let out = site.run(&["keys", "list"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    assert!(!text.contains('\u{202e}'), "{text:?}");
    assert!(
        text.contains("x\\u001b]52;c;cm0gLXJmIH4=\\u0007y\\u202ez"),
        "{text}"
    );
    // JSON output stays JSON and keeps the label exact.
    let list = site.ok_json(&["keys", "list", "--json"]);
    let label = list.as_array().unwrap()[0]["label"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(label.contains('\u{202e}') && label.contains('\u{1b}'));
}

fn upload(m: &mut crate::mcp_util::Mcp, id: i64, name: &str, mime: &str, bytes: &[u8]) -> Value {
    m.call(
        id,
        "media_write",
        json!({"filename": name, "mime_type": mime,
               "data_base64": gatehouse_core::site::media::encode_base64(bytes)}),
        None,
    )
}

/// A GIF that is also a page, stored as `g.html`, opens as a page wherever
/// it is saved by its name; JSON strings can carry a page; `A.txt` beside
/// `a.txt`, or a `CON`, are one file or a device on other disks. Each was
/// accepted.
#[test]
fn media_names_fit_their_type_and_every_disk() {
    let site = TestSite::new("media_names");
    let mut m = site.mcp(&["--email", "author@example.com"], &[]);
    m.initialize("2025-06-18");
    let gif = b"GIF89a=0;alert(1);<script>alert(1)</script>;";
    let e = tool_error(&upload(&mut m, 1, "g.html", "image/gif", gif));
    assert_eq!(e["code"], "MEDIA_FILENAME_INVALID", "{e}");
    assert!(e["hint"].as_str().unwrap().contains("g.gif"), "{e}");
    let e = tool_error(&upload(
        &mut m,
        2,
        "x.svg",
        "application/json",
        br#""<svg onload=alert(1)></svg>""#,
    ));
    assert_eq!(e["code"], "MEDIA_FILENAME_INVALID", "{e}");
    let e = tool_error(&upload(
        &mut m,
        3,
        "x.json",
        "application/json",
        br#"{"a": "<svg onload=alert(1)></svg>"}"#,
    ));
    assert_eq!(e["code"], "MEDIA_TYPE_MISMATCH", "{e}");
    for name in ["CON", "aux.txt", "com1.txt", "LPT9.txt"] {
        let e = tool_error(&upload(&mut m, 4, name, "text/plain", b"x"));
        assert_eq!(e["code"], "MEDIA_FILENAME_INVALID", "{name}: {e}");
    }
    let r = upload(&mut m, 5, "a.txt", "text/plain", b"first");
    assert_ne!(r["result"]["isError"], true, "{r}");
    let e = tool_error(&upload(&mut m, 6, "A.txt", "text/plain", b"second"));
    assert!(e["message"].as_str().unwrap().contains("a.txt"), "{e}");
    // Names that fit still go in: either JPEG extension, any letter case.
    for (id, name) in [(7, "photo.JPG"), (8, "photo2.jpeg")] {
        let r = upload(&mut m, id, name, "image/jpeg", &[0xFF, 0xD8, 0xFF, 0xD9]);
        assert_ne!(r["result"]["isError"], true, "{name}: {r}");
    }
}

#[test]
fn media_must_be_its_declared_type_throughout() {
    let site = TestSite::new("media_sniff");
    let mut m = site.mcp(&["--email", "author@example.com"], &[]);
    m.initialize("2025-06-18");
    let svg = b"<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"alert(document.domain)\"/>";
    let e = tool_error(&upload(&mut m, 1, "note.txt", "text/plain", svg));
    assert_eq!(e["code"], "MEDIA_TYPE_MISMATCH", "{e}");
    let e = tool_error(&upload(
        &mut m,
        2,
        "page.md",
        "text/markdown",
        b"# Hi\n<script>fetch('//x')</script>",
    ));
    assert_eq!(e["code"], "MEDIA_TYPE_MISMATCH", "{e}");
    // A real PNG header with a page appended: the magic bytes alone passed.
    let mut polyglot = PIXEL.to_vec();
    polyglot.extend_from_slice(b"<html><script>alert(1)</script></html>");
    let e = tool_error(&upload(&mut m, 3, "x.png", "image/png", &polyglot));
    assert_eq!(e["code"], "MEDIA_TYPE_MISMATCH", "{e}");
    // Honest files still go in; non-images are marked as downloads.
    let r = upload(&mut m, 4, "notes.txt", "text/plain", b"a < b, and b > c");
    assert_ne!(r["result"]["isError"], true, "{r}");
    let r = upload(&mut m, 5, "dot.png", "image/png", PIXEL);
    assert_ne!(r["result"]["isError"], true, "{r}");
    let read = m.call(6, "media_read", json!({"filename": "notes.txt"}), None);
    assert_eq!(
        read["result"]["structuredContent"]["content_disposition"],
        "attachment; filename=\"notes.txt\""
    );
    let read = m.call(7, "media_read", json!({"filename": "dot.png"}), None);
    assert!(
        read["result"]["structuredContent"]["content_disposition"]
            .as_str()
            .unwrap()
            .starts_with("inline")
    );
}

/// A valid 1×1 PNG (the scratch site's sample).
const PIXEL: &[u8] = gatehouse_core::site::seed::SAMPLE_PNG;
