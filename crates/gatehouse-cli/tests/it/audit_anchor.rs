//! Rewritten audit chains: an attacker with write access to the database
//! removes the tail and moves the head back, or deletes an entry and
//! recomputes the whole chain after it. Both leave a chain that is internally
//! consistent, so only a checkpoint signed with a key kept outside the
//! database (in the user's config directory) can tell. These tests rewrite the
//! real database and expect `audit verify` to fail.

use gatehouse_core::access::audit::entry_hash;
use serde_json::Value;

use crate::util::{TestSite, failure, site_with_history};

/// Every stored entry, in chain order, as JSON objects.
fn rows(site: &TestSite) -> Vec<Value> {
    let sql = if site.database_url.is_some() {
        "SELECT json_build_object('seq', seq, 'ts', ts, 'actor', actor, 'action', action, 'subject', subject, 'detail', detail) FROM audit_log ORDER BY seq"
    } else {
        "SELECT json_object('seq', seq, 'ts', ts, 'actor', actor, 'action', action, 'subject', subject, 'detail', detail) FROM audit_log ORDER BY seq"
    };
    site.sql(sql)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect()
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Replaces the whole chain with `entries` (renumbered from 1 and rehashed)
/// and moves the head to its end: what an attacker who can write the
/// database but holds no key can do.
fn rewrite_chain(site: &TestSite, entries: &[Value]) {
    let mut sql = String::from("DELETE FROM audit_log;");
    let mut prev = gatehouse_core::access::audit::GENESIS.to_string();
    for (i, e) in entries.iter().enumerate() {
        let seq = i as i64 + 1;
        let ts = e["ts"].as_i64().unwrap();
        let (actor, action, subject, detail) = (
            e["actor"].as_str().unwrap(),
            e["action"].as_str().unwrap(),
            e["subject"].as_str().unwrap(),
            e["detail"].as_str().unwrap(),
        );
        let hash = entry_hash(seq, ts, actor, action, subject, detail, &prev);
        sql.push_str(&format!(
            "INSERT INTO audit_log (seq, ts, actor, action, subject, detail, prev_hash, hash) VALUES ({seq}, {ts}, {}, {}, {}, {}, '{prev}', '{hash}');",
            quote(actor),
            quote(action),
            quote(subject),
            quote(detail)
        ));
        prev = hash;
    }
    sql.push_str(&format!(
        "UPDATE audit_head SET seq = {}, hash = '{prev}' WHERE id = 1;",
        entries.len()
    ));
    site.sql(&sql);
}

fn verify_fails(site: &TestSite, extra: &[&str]) -> Value {
    let mut args = vec!["audit", "verify", "--json"];
    args.extend_from_slice(extra);
    let f = failure(site.run(&args), &args);
    assert_eq!(f.code, "AUDIT_CHAIN_BROKEN", "{}", f.stderr);
    let v: Value = serde_json::from_str(f.stderr.lines().last().unwrap()).unwrap();
    v["error"].clone()
}

#[test]
fn a_chain_cut_short_with_its_head_moved_back_fails_verify() {
    let site = site_with_history("anchor_rewind");
    let all = rows(&site);
    // The revocation (entry 4) and what followed are gone; the chain that is
    // left is a true prefix, so every hash and link in it is right.
    rewrite_chain(&site, &all[..3]);
    let e = verify_fails(&site, &[]);
    assert_eq!(e["detail"]["first_bad_seq"], 4, "{e}");
    assert!(e["message"].as_str().unwrap().contains("checkpoint"), "{e}");
}

#[test]
fn a_chain_recomputed_without_one_entry_fails_verify() {
    let site = site_with_history("anchor_recompute");
    let mut all = rows(&site);
    // Drop the revocation and recompute every later hash.
    let at = all
        .iter()
        .position(|e| e["action"] == "key.revoke")
        .unwrap();
    all.remove(at);
    rewrite_chain(&site, &all);
    let e = verify_fails(&site, &[]);
    assert!(e["message"].as_str().unwrap().contains("checkpoint"), "{e}");
}

#[test]
fn deleting_the_checkpoints_in_the_database_does_not_hide_a_rewound_chain() {
    let site = site_with_history("anchor_delete_checkpoints");
    let all = rows(&site);
    rewrite_chain(&site, &all[..3]);
    site.sql("DELETE FROM audit_checkpoints");
    // The copy kept in the user's config directory still knows entry 6.
    let e = verify_fails(&site, &[]);
    assert_eq!(e["detail"]["first_bad_seq"], 4, "{e}");
}

#[test]
fn a_forged_checkpoint_in_the_database_fails_verify() {
    let site = site_with_history("anchor_forged");
    // Claim the local key signed a checkpoint of entry 2 with another hash.
    site.sql(
        "UPDATE audit_checkpoints SET hash = 'ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff' WHERE seq = (SELECT MAX(seq) FROM audit_checkpoints)",
    );
    let e = verify_fails(&site, &[]);
    assert!(e["message"].as_str().unwrap().contains("signature"), "{e}");
}

#[test]
fn an_exported_checkpoint_catches_a_rewrite_another_machine_cannot_see() {
    let site = site_with_history("anchor_export");
    let exported = site.ok(&["audit", "checkpoint", "export"]);
    let cp: Value = serde_json::from_str(&exported).unwrap();
    assert_eq!(cp["seq"], 6, "{cp}");
    assert!(!exported.contains("secret"), "{exported}");
    let file = site.dir.parent().unwrap().join("checkpoint.json");
    std::fs::write(&file, &exported).unwrap();
    let all = rows(&site);
    rewrite_chain(&site, &all[..5]);
    site.sql("DELETE FROM audit_checkpoints");
    let exporter = site.ok(&["audit", "key"]).trim().to_string();
    // Another machine: a fresh config dir, so no local anchor and another key.
    std::fs::remove_dir_all(site.config_dir()).unwrap();
    let v = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(v["ok"], true);
    assert!(v["anchored_at"].is_null(), "{v}");
    let e = verify_fails(
        &site,
        &[
            "--checkpoint",
            file.to_str().unwrap(),
            "--trust-key",
            &exporter,
        ],
    );
    assert_eq!(e["detail"]["first_bad_seq"], 6, "{e}");
}

/// A checkpoint file is trusted only when signed by this machine's key or
/// one the admin names: any key signs a checkpoint of any chain, so one
/// exported by whoever rewrote the chain had made `verify --checkpoint` say
/// the rewritten chain matched it.
#[test]
fn a_checkpoint_file_signed_by_a_key_nobody_named_is_refused() {
    let site = site_with_history("anchor_export_foreign");
    let all = rows(&site);
    rewrite_chain(&site, &all[..5]);
    site.sql("DELETE FROM audit_checkpoints");
    // The rewriter's own machine signs the rewritten head.
    let rewriter = tempfile::tempdir().unwrap();
    let forged = site
        .command()
        .env("GATEHOUSE_CONFIG_DIR", rewriter.path())
        .args(["audit", "checkpoint", "export"])
        .output()
        .unwrap();
    assert!(
        forged.status.success(),
        "{}",
        String::from_utf8_lossy(&forged.stderr)
    );
    let file = site.dir.parent().unwrap().join("forged.json");
    std::fs::write(&file, &forged.stdout).unwrap();
    std::fs::remove_dir_all(site.config_dir()).unwrap();
    let args = ["audit", "verify", "--checkpoint", file.to_str().unwrap()];
    let f = failure(site.run(&args), &args);
    assert_eq!(f.code, "AUDIT_CHECKPOINT_INVALID", "{}", f.stderr);
    assert!(f.stderr.contains("does not trust"), "{}", f.stderr);
}

#[test]
fn a_checkpoint_file_with_a_bad_signature_is_refused() {
    let site = site_with_history("anchor_export_forged");
    let exported = site.ok(&["audit", "checkpoint", "export"]);
    let mut cp: Value = serde_json::from_str(&exported).unwrap();
    cp["seq"] = 2.into();
    let file = site.dir.parent().unwrap().join("checkpoint.json");
    std::fs::write(&file, cp.to_string()).unwrap();
    let args = ["audit", "verify", "--checkpoint", file.to_str().unwrap()];
    let f = failure(site.run(&args), &args);
    assert_eq!(f.code, "AUDIT_CHECKPOINT_INVALID", "{}", f.stderr);
}

#[test]
fn verify_reports_the_checkpoint_it_checked_against() {
    let site = site_with_history("anchor_report");
    let v = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(v["anchored_at"], 6, "{v}");
    let text = site.ok(&["audit", "verify"]);
    assert!(text.contains("signed checkpoint at entry 6"), "{text}");
}

#[cfg(unix)]
#[test]
fn the_signing_key_is_private_to_the_user() {
    use std::os::unix::fs::PermissionsExt;
    let site = site_with_history("anchor_key_mode");
    let key = site.config_dir().join("audit-signing-key");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dir_mode = std::fs::metadata(site.config_dir())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700);
}

/// Writes a signing key file as Gatehouse does: readable by its owner only.
fn write_key(path: &std::path::Path, key: &str) {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    std::io::Write::write_all(&mut options.open(path).unwrap(), key.as_bytes()).unwrap();
}

/// A signing key replaced or lost since it signed this machine's anchor is
/// named as what it is, with the way out: the log is whole, and verify had
/// blamed its anchored entry and said to restore the database from a backup.
/// Setting the anchor aside, as the hint says, verifies the chain again, and
/// the next write anchors the site with the new key.
#[test]
fn a_replaced_signing_key_is_named_and_the_log_not_blamed() {
    let site = site_with_history("anchor_key_replaced");
    let key = site.config_dir().join("audit-signing-key");
    let old = std::fs::read_to_string(&key).unwrap();
    let key_changed = |site: &TestSite| {
        let args = ["audit", "verify", "--json"];
        let f = failure(site.run(&args), &args);
        assert_eq!(f.code, "AUDIT_KEY_CHANGED", "{}", f.stderr);
        let e: Value = serde_json::from_str(f.stderr.lines().last().unwrap()).unwrap();
        let e = e["error"].clone();
        assert!(e["detail"]["first_bad_seq"].is_null(), "{e}");
        assert_eq!(e["detail"]["anchored_seq"], 6, "{e}");
        assert!(!e["hint"].as_str().unwrap().contains("backup"), "{e}");
        e
    };
    std::fs::remove_file(&key).unwrap();
    let lost = key_changed(&site);
    assert!(
        lost["message"]
            .as_str()
            .unwrap()
            .contains("holds no signing key"),
        "{lost}"
    );
    write_key(&key, &"11".repeat(32));
    let replaced = key_changed(&site);
    assert!(
        replaced["message"]
            .as_str()
            .unwrap()
            .contains("now signs with key"),
        "{replaced}"
    );
    assert!(
        !replaced.to_string().contains(&"11".repeat(32)),
        "a private key in the error: {replaced}"
    );
    // The old key back: anchored as before.
    write_key(&key, &old);
    assert_eq!(
        site.ok_json(&["audit", "verify", "--json"])["anchored_at"],
        6
    );
    // Lost for good: the anchor the hint names set aside.
    write_key(&key, &"11".repeat(32));
    let hint = key_changed(&site)["hint"].as_str().unwrap().to_string();
    let anchor = std::fs::read_dir(site.config_dir().join("audit-anchors"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    assert!(hint.contains(&anchor.display().to_string()), "{hint}");
    std::fs::rename(&anchor, anchor.with_extension("old")).unwrap();
    let v = site.ok_json(&["audit", "verify", "--json"]);
    assert!(v["anchored_at"].is_null(), "{v}");
    assert!(v["unverified_checkpoints"].as_u64().unwrap() >= 1, "{v}");
    site.mint("viewer");
    assert_eq!(
        site.ok_json(&["audit", "verify", "--json"])["anchored_at"],
        7
    );
}

/// After a key was lost or replaced, the next write's checkpoint no longer
/// re-signs the anchor with the new key: that had hidden the change from
/// every later verify (it passed, anchored by a key made a moment before).
/// The write itself is done; only the checkpoint waits for the admin.
#[test]
fn a_write_after_the_key_changed_leaves_the_anchor_for_verify_to_name() {
    let site = site_with_history("anchor_key_resigned");
    let key = site.config_dir().join("audit-signing-key");
    std::fs::remove_file(&key).unwrap();
    site.mint("viewer");
    let args = ["audit", "verify", "--json"];
    let f = failure(site.run(&args), &args);
    assert_eq!(f.code, "AUDIT_KEY_CHANGED", "{}", f.stderr);
}

/// This machine's anchor file damaged or edited is named as that file, not
/// blamed on the log: an edited one had been reported as entry N altered
/// ("restore the database from a backup"), and one with a byte appended had
/// been passed over (verify said ok) and then replaced.
#[test]
fn a_damaged_or_edited_anchor_file_is_named_not_blamed_on_the_log() {
    let site = site_with_history("anchor_file_edited");
    let anchor = std::fs::read_dir(site.config_dir().join("audit-anchors"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    let original = std::fs::read_to_string(&anchor).unwrap();
    let named = |why: &str| {
        let args = ["audit", "verify", "--json"];
        let f = failure(site.run(&args), &args);
        assert_eq!(f.code, "AUDIT_CHECKPOINT_INVALID", "{}", f.stderr);
        assert!(
            f.stderr.contains(&anchor.display().to_string()),
            "{}",
            f.stderr
        );
        assert!(f.stderr.contains(why), "{}", f.stderr);
        assert!(!f.stderr.contains("first_bad_seq"), "{}", f.stderr);
    };
    let mut edited: Value = serde_json::from_str(&original).unwrap();
    edited["ts"] = (edited["ts"].as_i64().unwrap() + 1).into();
    std::fs::write(&anchor, edited.to_string()).unwrap();
    named("does not match its signature");
    std::fs::write(&anchor, format!("{original}x")).unwrap();
    named("cannot be trusted");
    // Nor does a write replace it meanwhile.
    site.mint("viewer");
    assert_eq!(
        std::fs::read_to_string(&anchor).unwrap(),
        format!("{original}x")
    );
    std::fs::write(&anchor, &original).unwrap();
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}

/// A site made anew in a folder that held another starts its own chain;
/// the old site's anchor there had failed every verify of it as a cut chain
/// (and refused every checkpoint), with no way out the hint named. It is
/// set aside when the new site is made.
#[test]
fn a_site_made_anew_in_the_same_folder_is_not_held_to_the_old_ones_anchor() {
    let site = site_with_history("anchor_site_anew");
    if site.database_url.is_some() {
        return; // A PostgreSQL site's database outlives its folder.
    }
    std::fs::remove_dir_all(&site.dir).unwrap();
    let out = std::process::Command::new(crate::util::BIN)
        .args(["site", "init", site.dir.to_str().unwrap(), "--scratch"])
        .env("GATEHOUSE_CONFIG_DIR", site.config_dir())
        .env_remove("GATEHOUSE_API_KEY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("its audit anchor was set aside"),
        "{stderr}"
    );
    site.mint("viewer");
    let v = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(v["ok"], true, "{v}");
    assert!(v["anchored_at"].is_number(), "anchored again: {v}");
}

/// `audit key` prints the public half alone on stdout (scripts read it) and
/// says on stderr where the private half is kept: in a test's config
/// directory a file, never the developer's credential store. A setting that
/// names no store is refused.
#[test]
fn audit_key_says_where_the_private_half_is_kept() {
    let site = TestSite::new("anchor_key_place");
    let refused = site
        .command()
        .env("GATEHOUSE_SECRET_STORE", "vault")
        .args(["audit", "key"])
        .output()
        .unwrap();
    assert_eq!(failure(refused, &["audit", "key"]).code, "INPUT_INVALID");
    let file = site.config_dir().join("audit-signing-key");
    let out = site.run(&["audit", "key"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let public = String::from_utf8(out.stdout).unwrap();
    assert!(
        public.trim().len() == 64 && public.trim().bytes().all(|b| b.is_ascii_hexdigit()),
        "{public:?}"
    );
    assert!(
        stderr.contains(&format!("kept in the file {}", file.display())),
        "{stderr}"
    );
}

/// A long-running server signs a checkpoint every `checkpoint::EVERY` entries
/// while it runs, not only when it ends: a rewrite of an older part of the
/// log is caught even if the server is killed afterwards.
#[test]
fn a_running_server_signs_a_checkpoint_every_hundred_entries() {
    use crate::mcp_util::McpSite;
    let every = gatehouse_core::site::checkpoint::EVERY;
    let site = TestSite::new("anchor_every");
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    for id in 1..=every + 5 {
        let r = mcp.call(id, "content_list", serde_json::json!({}), None);
        assert_eq!(r["result"]["isError"], false, "{r}");
    }
    // Written after the answers, by a task of its own: wait for it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let anchored = loop {
        let v = site.ok_json(&["audit", "verify", "--json"]);
        match v["anchored_at"].as_u64() {
            Some(seq) if seq >= every as u64 => break seq,
            _ if std::time::Instant::now() > deadline => panic!("no checkpoint yet: {v}"),
            _ => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    };
    assert!(mcp.child.try_wait().unwrap().is_none(), "the server ended");
    // The anchor covers an entry the server wrote, so cutting it away fails.
    let entries = rows(&site);
    rewrite_chain(&site, &entries[..anchored as usize - 1]);
    verify_fails(&site, &[]);
}

/// Makes `n` `content_list` calls with ids after `last`, 16 in flight (the
/// server's in-flight limit is not what these tests are about); returns the
/// last id.
fn calls_after(mcp: &mut crate::mcp_util::Mcp, last: i64, n: i64) -> i64 {
    let mut done = last;
    while done < last + n {
        let window = done + 1..=(last + n).min(done + 16);
        for id in window.clone() {
            mcp.send(
                &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "content_list", "arguments": {}}}),
            );
        }
        for id in window {
            let r = mcp.response(&serde_json::json!(id));
            assert_eq!(r["result"]["isError"], false, "{r}");
            done = id;
        }
    }
    done
}

/// The one number `sql` selects.
fn number(site: &TestSite, sql: &str) -> i64 {
    site.sql(sql).trim().parse().unwrap()
}

/// The chain's last seq.
const HEAD: &str = "SELECT MAX(seq) FROM audit_log";

/// Cuts the last two entries, after checking that the recorded head had
/// reached the last one (`why` says what moved it there), and expects
/// verify to name the cut where it starts, with `problem`; returns the last
/// seq before the cut.
fn cut_the_tail_and_expect_it_named(site: &TestSite, why: &str, problem: &str) -> i64 {
    let last = number(site, HEAD);
    assert_eq!(
        number(site, "SELECT seq FROM audit_head WHERE id = 1"),
        last,
        "{why}"
    );
    site.sql(&format!("DELETE FROM audit_log WHERE seq > {}", last - 2));
    expect_named_at(
        site,
        last - 1,
        &problem.replace("{last}", &last.to_string()),
    );
    last
}

/// Verify fails at entry `seq`, with a message containing `problem`.
fn expect_named_at(site: &TestSite, seq: i64, problem: &str) {
    let e = verify_fails(site, &[]);
    assert_eq!(e["detail"]["first_bad_seq"], seq, "{e}");
    assert!(e["message"].as_str().unwrap().contains(problem), "{e}");
}

/// A server's appends leave the `audit_head` row behind (one WAL page fewer
/// per call on a SQLite file); it follows them within `HEAD_LAG` and when
/// the server ends, so a tail cut from a server's calls is named by the
/// chain check itself, where the recorded head is, as a cut from the CLI's
/// writes is. And writes after the cut go on after the recorded head, so
/// the gap stays named: appended after the last entry left, the CLI's next
/// write had moved the row back and a server's next checkpoint had moved it
/// past the cut, and the chain verified again wherever the anchor file was
/// not.
#[test]
fn a_tail_cut_from_a_servers_calls_is_noticed_at_the_recorded_head() {
    use crate::mcp_util::McpSite;
    let site = TestSite::new("anchor_server_tail");
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    calls_after(&mut mcp, 0, 40);
    assert!(mcp.finish().success());
    let last = cut_the_tail_and_expect_it_named(
        &site,
        "the server's end moved the recorded head to the last entry",
        "its head records entry {last}",
    );
    site.mint("viewer");
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    calls_after(&mut mcp, 0, 3);
    assert!(mcp.finish().success());
    expect_named_at(&site, last - 1, &format!("entry {} is missing", last - 1));
}

/// A server killed without its shutdown checkpoint has still moved the
/// recorded head to its last entry within `HEAD_LAG` of its calls (a
/// checkpoint is signed only every `EVERY` entries): a tail cut from it is
/// named. It had lagged by up to 99 entries, of any age, and the cut passed.
#[test]
fn a_tail_cut_from_a_killed_servers_calls_is_noticed() {
    use crate::mcp_util::McpSite;
    let site = TestSite::new("anchor_killed_tail");
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    // Fewer calls than a checkpoint's EVERY, after the first one's.
    calls_after(&mut mcp, 0, 40);
    std::thread::sleep(4 * gatehouse_core::site::checkpoint::SPACING);
    mcp.child.kill().unwrap();
    mcp.child.wait().unwrap();
    cut_the_tail_and_expect_it_named(
        &site,
        "the recorded head followed the killed server's calls",
        "its head records entry {last}",
    );
}

/// The most checkpoints one process may try in `elapsed`: one at once, one
/// per `checkpoint::SPACING`, and one of slack for timing.
fn allowed_in(elapsed: std::time::Duration) -> usize {
    let spacing = gatehouse_core::site::checkpoint::SPACING;
    2 + (elapsed.as_secs_f64() / spacing.as_secs_f64()) as usize
}

/// A busy server signs at most one checkpoint per `checkpoint::SPACING`,
/// however many hundreds of entries it commits meanwhile, and one that came
/// due within the spacing is signed once it has passed, covering every entry
/// before it: while the server keeps running, no more than `EVERY` entries
/// stay unanchored for longer than the spacing.
#[test]
fn a_busy_server_signs_one_checkpoint_per_spacing_and_still_anchors_its_tail() {
    use crate::mcp_util::McpSite;
    use gatehouse_core::site::checkpoint::{EVERY, SPACING};
    let site = TestSite::new("anchor_spacing");
    let count = |site: &TestSite| number(site, "SELECT COUNT(*) FROM audit_checkpoints");
    let before = count(&site);
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    let mut calls = 0i64;
    let mut burst = |mcp: &mut crate::mcp_util::Mcp, n: i64| {
        calls = calls_after(mcp, calls, n);
        calls
    };
    let started = std::time::Instant::now();
    // Calls until the entries are well past what one checkpoint per EVERY
    // entries would have signed in the time taken: four more than the spacing
    // allows (one at the start, one per spacing, one of slack).
    loop {
        let done = burst(&mut mcp, 16);
        if done >= EVERY * (allowed_in(started.elapsed()) as i64 + 4) {
            break;
        }
        assert!(
            done < 200 * EVERY,
            "the server is too slow for this test to tell"
        );
    }
    let elapsed = started.elapsed();
    let signed = (count(&site) - before) as usize;
    assert!(
        (1..=allowed_in(elapsed)).contains(&signed),
        "{signed} checkpoints in {elapsed:?}"
    );
    // Once the spacing has passed, a checkpoint is signed at once (EVERY
    // entries on); the next one comes due within the spacing, when nothing
    // follows it, and is still signed, of the head.
    for attempt in 1.. {
        std::thread::sleep(2 * SPACING);
        let (signed, head) = (count(&site), number(&site, HEAD));
        burst(&mut mcp, EVERY + 10);
        let started = std::time::Instant::now();
        while count(&site) == signed {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(10),
                "no checkpoint"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // One call per entry: enough more for the next to come due.
        let now = head + EVERY + 10;
        burst(
            &mut mcp,
            number(&site, "SELECT MAX(seq) FROM audit_checkpoints") + EVERY + 5 - now,
        );
        if started.elapsed() < SPACING {
            break;
        }
        assert!(attempt < 5, "the server is too slow for this test to tell");
    }
    let head = number(&site, HEAD);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let v = site.ok_json(&["audit", "verify", "--json"]);
        match v["anchored_at"].as_i64() {
            Some(seq) if seq == head => break,
            _ if std::time::Instant::now() > deadline => panic!("the head is not anchored: {v}"),
            _ => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
    assert!(mcp.child.try_wait().unwrap().is_none(), "the server ended");
}

/// A server that cannot sign (here: a config directory it cannot create)
/// tries again at most once per `checkpoint::SPACING`, not after every call:
/// each try loads the key and warns.
#[test]
fn a_server_that_cannot_sign_tries_once_per_spacing_not_per_call() {
    use crate::mcp_util::McpSite;
    use gatehouse_core::site::checkpoint::EVERY;
    let site = TestSite::new("anchor_cannot_sign");
    // A folder inside a file: no system can create it.
    let file = tempfile::NamedTempFile::new().unwrap();
    let config = file.path().join("config");
    let mut mcp = site.mcp(
        &["--role", "viewer"],
        &[("GATEHOUSE_CONFIG_DIR", config.to_str().unwrap())],
    );
    mcp.initialize("2025-11-25");
    let started = std::time::Instant::now();
    let mut calls = calls_after(&mut mcp, 0, EVERY);
    while calls < EVERY + 600 {
        calls = calls_after(&mut mcp, calls, 16);
    }
    let elapsed = started.elapsed();
    // The last try, due within the spacing, may still be running.
    std::thread::sleep(2 * gatehouse_core::site::checkpoint::SPACING);
    let stderr = mcp.stderr();
    let tries = stderr
        .matches("could not write an audit checkpoint")
        .count();
    assert!(
        (1..=allowed_in(elapsed + 2 * gatehouse_core::site::checkpoint::SPACING)).contains(&tries),
        "{tries} tries in {elapsed:?} for {calls} calls:\n{stderr}"
    );
}

/// A server that ends cleanly (end of input, or SIGTERM) with fewer than
/// `checkpoint::EVERY` entries signs a checkpoint of its head on the way out,
/// so none of its entries is left unanchored.
#[test]
fn a_server_that_ends_cleanly_signs_a_checkpoint_of_its_head() {
    use crate::mcp_util::McpSite;
    for how in ["end of input", "SIGTERM"] {
        let site = TestSite::new("anchor_shutdown");
        let mut mcp = site.mcp(&["--role", "viewer"], &[]);
        mcp.initialize("2025-11-25");
        for id in 1..=3 {
            let r = mcp.call(id, "content_list", serde_json::json!({}), None);
            assert_eq!(r["result"]["isError"], false, "{r}");
        }
        // Windows has no SIGTERM to send: end of input only there.
        #[cfg(not(unix))]
        if how == "SIGTERM" {
            continue;
        }
        #[cfg(unix)]
        let status = if how == "SIGTERM" {
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(mcp.child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            )
            .unwrap();
            mcp.finish()
        } else {
            mcp.finish()
        };
        #[cfg(not(unix))]
        let status = mcp.finish();
        assert!(status.success(), "{how}: {status:?}");
        let head = rows(&site).len();
        let v = site.ok_json(&["audit", "verify", "--json"]);
        assert_eq!(v["anchored_at"], head, "{how}: {v}");
    }
}

/// `site config set` ends cleanly, so it signs a checkpoint of its entry.
#[test]
fn site_config_changes_are_covered_by_a_checkpoint() {
    let site = site_with_history("anchor_config");
    site.ok(&[
        "site",
        "config",
        "set",
        "http_fetch.allowlist",
        "example.com",
    ]);
    let v = site.ok_json(&["audit", "verify", "--json"]);
    assert_eq!(v["anchored_at"], 7, "{v}");
}

/// A signed export vouches for its log: one that fails `audit verify` here
/// (the tail cut, the head moved back) is refused, not signed. It had been
/// exported, imported elsewhere without the checkpoints that show the cut,
/// and verified clean there.
#[test]
fn export_refuses_a_chain_that_fails_verify() {
    let site = site_with_history("anchor_export");
    let all = rows(&site);
    rewrite_chain(&site, &all[..3]);
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("site.json");
    let args = ["site", "export", "--out", file.to_str().unwrap(), "--json"];
    let f = failure(site.run(&args), &args);
    assert_eq!(f.code, "AUDIT_CHAIN_BROKEN", "{}", f.stderr);
    assert!(!file.exists(), "a dump was written");
}

/// A row outside the chain (a seq below 1, or past its end) fails verify:
/// a walk from entry 1 to the head had never read it, while `audit list`
/// showed it.
#[test]
fn a_row_outside_the_chain_fails_verify() {
    let site = site_with_history("anchor_outside");
    let last = number(&site, "SELECT MAX(seq) FROM audit_log");
    for (seq, bad) in [(0, 0), (-1, -1), (last + 3, last + 1), (last + 1, last + 1)] {
        site.sql(&format!(
            "INSERT INTO audit_log (seq, ts, actor, action, subject, detail, prev_hash, hash) VALUES ({seq}, 1, 'user:ceo@example.com', 'key.mint', 'FORGED', '{{}}', 'x', 'y')"
        ));
        let e = verify_fails(&site, &[]);
        assert_eq!(e["detail"]["first_bad_seq"], bad, "{seq}: {e}");
        site.sql(&format!("DELETE FROM audit_log WHERE seq = {seq}"));
    }
    site.ok(&["audit", "verify"]);
}

/// `audit verify` beside a server that keeps writing reads the chain up to
/// the head it read first: every run passes (each had reported entries
/// removed, and told the operator to restore a backup).
#[test]
fn verify_during_writes_is_ok() {
    use crate::mcp_util::McpSite;
    let site = TestSite::new("anchor_live_verify");
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let mut last = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                last = calls_after(&mut mcp, last, 32);
            }
            last
        });
        // Every run first, then the writer stopped, then the checks: a
        // failed check must not leave the writer calling for ever.
        let runs: Vec<_> = (0..5)
            .map(|_| site.run(&["audit", "verify", "--json"]))
            .collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(writer.join().unwrap() > 0);
        for (run, out) in runs.iter().enumerate() {
            assert!(
                out.status.success(),
                "run {run}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    });
}

/// A server whose log is cut from under it (the tail it wrote, short of a
/// checkpoint, deleted and the head moved back) does not sign the shortened
/// log at its clean shutdown: it had signed it, and verify then said ok.
#[test]
fn a_server_refuses_to_sign_a_head_below_its_own_commits() {
    use crate::mcp_util::McpSite;
    let site = TestSite::new("anchor_cut_live");
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    for id in 1..=20 {
        let r = mcp.call(id, "content_list", serde_json::json!({}), None);
        assert_eq!(r["result"]["isError"], false, "{r}");
    }
    let all = rows(&site);
    let keep = all.len() - 15;
    rewrite_chain(&site, &all[..keep]);
    mcp.close_stdin();
    let status = crate::mcp_util::wait_exit(&mut mcp.child);
    // The stderr reader may trail the exit by a moment.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !mcp.stderr().contains("wrote audit entries up to")
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let stderr = mcp.stderr();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("wrote audit entries up to"), "{stderr}");
    let signed = number(
        &site,
        &format!("SELECT COUNT(*) FROM audit_checkpoints WHERE seq = {keep}"),
    );
    assert_eq!(signed, 0, "the cut log was signed");
}
