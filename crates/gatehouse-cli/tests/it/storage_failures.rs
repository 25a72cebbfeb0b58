//! Storage failures a person can act on reach the caller with their own code
//! and hint, through real processes and real failures: a full filesystem and a
//! read-only one (SQLite, each in a mount namespace of the test's own), and a
//! PostgreSQL backend terminated in the middle of a write. None of them loses
//! or half-writes anything: the audit chain verifies afterwards.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mcp_util::{Mcp, McpSite, PATIENCE, tool_error};
use crate::util::{Locker, TestSite, failure, in_namespace};

/// Puts the site on a 4 MiB tmpfs filled to leave `$GH_FREE_KIB` free, runs
/// the command, then frees the space and copies the site back to where the
/// test (outside the namespace) can inspect what the command left.
const ON_FULL_DISK: &str = r#"set -e
mount -t tmpfs -o size=4m gatehouse-test "$GH_DISK"
mkdir "$GH_DISK/site"
cp -a "$GH_SITE/." "$GH_DISK/site/"
mount --bind "$GH_DISK/site" "$GH_SITE"
dd if=/dev/zero of="$GH_DISK/fill" bs=64k 2>/dev/null || true
truncate -s "-${GH_FREE_KIB}K" "$GH_DISK/fill"
set +e
"$@"
rc=$?
set -e
umount "$GH_SITE"
rm "$GH_DISK/fill"
find "$GH_SITE" -mindepth 1 -delete
cp -a "$GH_DISK/site/." "$GH_SITE/"
exit $rc
"#;

/// `cmd` with the site on a full disk leaving `free_kib` KiB (see [`ON_FULL_DISK`]).
fn on_full_disk(site: &TestSite, mut cmd: Command, free_kib: u32) -> Command {
    let disk = site.dir.parent().unwrap().join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    cmd.env("GH_DISK", &disk)
        .env("GH_SITE", &site.dir)
        .env("GH_FREE_KIB", free_kib.to_string());
    in_namespace(&cmd, ON_FULL_DISK)
}

/// Mounts the site folder read-only (a bind of itself), then runs the command.
const ON_READ_ONLY_FOLDER: &str = r#"set -e
mount --bind "$GH_SITE" "$GH_SITE"
mount -o remount,bind,ro "$GH_SITE"
exec "$@"
"#;

fn write_draft(mcp: &mut Mcp, id: i64, slug: &str, body: &str) -> Value {
    mcp.call(
        id,
        "content_write_draft",
        json!({"slug": slug, "title": "A title", "body": body}),
        None,
    )
}

/// The audit entries of `content_write_draft` calls in chain order, as
/// (outcome, code) pairs.
fn draft_calls(site: &TestSite) -> Vec<(String, Option<String>)> {
    let mut calls: Vec<_> = site
        .audit()
        .into_iter()
        .filter(|e| e["action"] == "mcp.tool_call" && e["subject"] == "content_write_draft")
        .collect();
    calls.sort_by_key(|e| e["seq"].as_i64());
    calls
        .iter()
        .map(|e| {
            let d: Value = serde_json::from_str(e["detail"].as_str().unwrap()).unwrap();
            (
                d["outcome"].as_str().unwrap_or_default().to_string(),
                d["code"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// Whether any audit entry names `subject` (a content write that landed would).
fn audited_subject(site: &TestSite, subject: &str) -> bool {
    site.audit().iter().any(|e| e["subject"] == subject)
}

/// The JSON error a `--json` command printed on stderr.
fn json_error(stderr: &str) -> Value {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("{\"error\""))
        .unwrap_or_else(|| panic!("no JSON error: {stderr}"));
    serde_json::from_str::<Value>(line).unwrap()["error"].clone()
}

/// A write that does not fit on the disk is `DISK_FULL` with its hint, the
/// server keeps serving, and nothing of the write lands. A disk with no room
/// at all fails earlier, when SQLite cannot grow its `-shm` file at open
/// (`SQLITE_IOERR_SHMSIZE`, "disk I/O error"): that is `DISK_FULL` too, not
/// a "damaged database" (it was, before).
#[test]
fn a_full_disk_is_disk_full_and_loses_nothing() {
    let site = TestSite::new("disk_full");
    if site.db_file().is_none() {
        return; // SQLite only: PostgreSQL's disk is the server's.
    }
    let cmd = site.mcp_command(&["--role", "editor"], &[]);
    let mut mcp = Mcp::spawn(on_full_disk(&site, cmd, 256));
    mcp.initialize("2025-11-25");
    let small = write_draft(&mut mcp, 1, "fits", "a short body");
    assert_eq!(small["result"]["isError"], false, "{small}");

    // About 900 KB: more than the 256 KiB left.
    let big = write_draft(&mut mcp, 2, "too-big", &"x".repeat(900_000));
    let err = tool_error(&big);
    assert_eq!(err["code"], "DISK_FULL", "{big}");
    assert!(
        err["hint"].as_str().unwrap().contains("free space"),
        "{big}"
    );

    // The server still answers, from the same full disk.
    let read = mcp.call(3, "content_read", json!({"slug": "fits"}), None);
    assert_eq!(read["result"]["structuredContent"]["body"], "a short body");
    assert!(mcp.finish().success());

    // Space freed: nothing of the big write, and the failed call is on record.
    assert_eq!(
        site.sql("SELECT count(*) FROM content WHERE slug = 'too-big'"),
        "0"
    );
    assert!(!audited_subject(&site, "too-big"));
    assert_eq!(
        draft_calls(&site),
        [
            ("ok".to_string(), None),
            ("error".to_string(), Some("DISK_FULL".to_string()))
        ]
    );
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);

    // The CLI on a disk with no room at all: the same code, as JSON.
    let args = [
        "keys",
        "mint",
        "--label",
        "on a full disk",
        "--roles",
        "viewer",
        "--json",
    ];
    let mut cmd = site.command();
    cmd.args(args);
    let f = failure(on_full_disk(&site, cmd, 0).output().unwrap(), &args);
    let err = json_error(&f.stderr);
    assert_eq!(err["code"], "DISK_FULL", "{}", f.stderr);
    assert!(err["hint"].as_str().unwrap().contains("free space"));
    let keys = site.ok_json(&["keys", "list", "--json"]).to_string();
    assert!(!keys.contains("on a full disk"), "{keys}");
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}

/// A site folder that cannot be written is `DATABASE_READONLY` with a hint
/// naming the folder, not a `STORAGE_ERROR` that calls the database damaged.
///
/// What really happens: SQLite opens the file read-only without a word, then
/// cannot create the `-shm` file WAL mode needs beside it and reports only
/// `SQLITE_CANTOPEN` ("unable to open database file"), so every command —
/// `gatehouse mcp` included — stops at open, before any read or write. A
/// folder cannot turn read-only under a running server instead: the kernel
/// refuses to remount a filesystem read-only while a file on it is open for
/// writing (`EBUSY`).
#[test]
fn a_read_only_site_folder_is_database_readonly_not_damaged() {
    let site = TestSite::new("read_only");
    if site.db_file().is_none() {
        return; // SQLite only: a read-only PostgreSQL server is another test.
    }
    let before = site.sql("SELECT seq || ':' || hash FROM audit_head");
    let in_read_only = |mut cmd: Command| {
        cmd.env("GH_SITE", &site.dir).stdin(Stdio::null());
        in_namespace(&cmd, ON_READ_ONLY_FOLDER).output().unwrap()
    };

    let mcp = in_read_only(site.mcp_command(&["--role", "editor"], &[]));
    let f = failure(mcp, &["mcp"]);
    assert_eq!(f.code, "DATABASE_READONLY", "{}", f.stderr);
    assert!(
        f.stderr.contains("hint: ") && f.stderr.contains("writable"),
        "{}",
        f.stderr
    );

    for args in [
        &["keys", "list", "--json"][..],
        &[
            "keys",
            "mint",
            "--label",
            "read-only",
            "--roles",
            "viewer",
            "--json",
        ],
    ] {
        let mut cmd = site.command();
        cmd.args(args);
        let f = failure(in_read_only(cmd), args);
        let err = json_error(&f.stderr);
        assert_eq!(err["code"], "DATABASE_READONLY", "{}", f.stderr);
        assert!(
            err["hint"].as_str().unwrap().contains("-shm"),
            "{}",
            f.stderr
        );
    }

    // Writable again: nothing changed.
    assert_eq!(
        site.sql("SELECT seq || ':' || hash FROM audit_head"),
        before
    );
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}

/// A PostgreSQL backend terminated while a write waits inside its transaction
/// (here for a table lock another session holds) is `DATABASE_UNREACHABLE`
/// with its hint, as a refused connection is; the write is not applied, the
/// failed call is on record, and the server reconnects for the next call.
#[test]
fn a_postgresql_connection_lost_mid_write_is_unreachable_and_not_applied() {
    let site = TestSite::new("pg_lost_mid_write");
    let Some(url) = site.database_url.clone() else {
        return; // PostgreSQL only.
    };
    let db = url.rsplit('/').next().unwrap().to_string();
    let mut mcp = site.mcp(&["--role", "editor"], &[]);
    mcp.initialize("2025-11-25");
    let first = write_draft(&mut mcp, 1, "before", "written before");
    assert_eq!(first["result"]["isError"], false, "{first}");

    let mut psql = Command::new("psql");
    psql.arg(&url).args(["-qAt", "-v", "ON_ERROR_STOP=1"]);
    let locker = Locker::hold(
        psql,
        "BEGIN; LOCK TABLE content IN ACCESS EXCLUSIVE MODE; SELECT 'locked';",
    );

    mcp.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "content_write_draft",
                   "arguments": {"slug": "lost", "title": "Lost", "body": "never applied"}}}));
    // The write has taken the audit head and waits for the content table.
    let waiting = format!(
        "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = '{db}'"
    );
    let started = Instant::now();
    let pid = loop {
        let pid = site.sql(&waiting);
        if !pid.is_empty() {
            break pid;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "the write never waited for the lock"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        site.sql(&format!("SELECT pg_terminate_backend({pid})")),
        "t"
    );
    assert!(locker.release("ROLLBACK;").success());

    let lost = mcp.response(&json!(2));
    let err = tool_error(&lost);
    assert_eq!(err["code"], "DATABASE_UNREACHABLE", "{lost}");
    assert!(
        err["hint"]
            .as_str()
            .unwrap()
            .contains("database server is running"),
        "{lost}"
    );

    // The next call gets a fresh connection.
    let after = write_draft(&mut mcp, 3, "after", "written after");
    assert_eq!(after["result"]["isError"], false, "{after}");
    let gone = mcp.call(4, "content_read", json!({"slug": "lost"}), None);
    assert_eq!(tool_error(&gone)["code"], "CONTENT_NOT_FOUND", "{gone}");
    assert!(mcp.finish().success());

    assert_eq!(
        site.sql("SELECT count(*) FROM content WHERE slug = 'lost'"),
        "0"
    );
    assert!(!audited_subject(&site, "lost"));
    assert_eq!(
        draft_calls(&site),
        [
            ("ok".to_string(), None),
            (
                "error".to_string(),
                Some("DATABASE_UNREACHABLE".to_string())
            ),
            ("ok".to_string(), None),
        ]
    );
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}

/// An audit group commit on PostgreSQL that fails halfway (here a trigger
/// refuses one tool's entry, after the head's lock was taken) leaves no
/// transaction open behind it, holding the head or poisoning the next commit;
/// sessions the server ends between calls (as a restart would) are replaced
/// before the next commit. Each call is answered as it should be, and the
/// chain verifies.
#[test]
fn a_failed_or_severed_audit_commit_on_postgresql_leaves_no_transaction_behind() {
    let site = TestSite::new("pg_committer");
    let Some(url) = site.database_url.clone() else {
        return; // PostgreSQL only.
    };
    let db = url.rsplit('/').next().unwrap().to_string();
    let mut mcp = site.mcp(&["--role", "editor"], &[]);
    mcp.initialize("2025-11-25");
    let read = |mcp: &mut Mcp, id: i64| {
        let answer = mcp.call(id, "content_read", json!({"slug": "welcome"}), None);
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    };
    read(&mut mcp, 1);

    site.sql(
        "CREATE FUNCTION refuse_search() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.subject = 'content_search' THEN RAISE EXCEPTION 'refused'; END IF; \
         RETURN NEW; END $$; \
         CREATE TRIGGER refuse_search BEFORE INSERT ON audit_log \
         FOR EACH ROW EXECUTE FUNCTION refuse_search()",
    );
    let refused = mcp.call(2, "content_search", json!({"query": "welcome"}), None);
    assert_eq!(
        tool_error(&refused)["detail"]["audit"],
        "not_written",
        "{refused}"
    );
    read(&mut mcp, 3);
    site.sql("DROP TRIGGER refuse_search ON audit_log; DROP FUNCTION refuse_search()");

    let ended = site.sql(&format!(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
         WHERE datname = '{db}' AND pid <> pg_backend_pid()"
    ));
    assert_ne!(ended, "0", "the server had no session to end");
    read(&mut mcp, 4);
    read(&mut mcp, 5);
    assert!(mcp.finish().success());

    let calls: Vec<String> = site
        .audit()
        .iter()
        .filter(|e| e["action"] == "mcp.tool_call")
        .map(|e| e["subject"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(calls, ["content_read"; 4]);
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}

/// Managed PostgreSQL servers and poolers end idle sessions
/// (`idle_session_timeout`, SQLSTATE 57P05): every pooled connection was then
/// dead, and the first call after a quiet spell failed with `STORAGE_ERROR`
/// although the server was up. Such a session is replaced, as after a
/// restart, and the call is answered.
#[test]
fn sessions_postgresql_ends_as_idle_are_replaced_without_failing_a_call() {
    let site = TestSite::new("pg_idle_sessions");
    let Some(url) = site.database_url.clone() else {
        return; // PostgreSQL only.
    };
    let db = url.rsplit('/').next().unwrap().to_string();
    site.sql(&format!(
        "ALTER DATABASE {db} SET idle_session_timeout = '1s'"
    ));
    let mut mcp = site.mcp(&["--role", "editor"], &[]);
    mcp.initialize("2025-11-25");
    for round in 0..3 {
        let r = write_draft(
            &mut mcp,
            10 + round,
            &format!("idle-{round}"),
            "after a quiet spell",
        );
        assert_eq!(r["result"]["isError"], false, "round {round}: {r}");
        std::thread::sleep(Duration::from_millis(2500));
    }
    assert!(mcp.finish().success());
    site.sql(&format!("ALTER DATABASE {db} RESET idle_session_timeout"));
    assert_eq!(site.ok_json(&["audit", "verify", "--json"])["ok"], true);
}

/// A lock held elsewhere on PostgreSQL (a long transaction, `LOCK TABLE` by
/// hand) had held a command, a key check or a call for as long as it stood:
/// a statement now waits for a lock as long as SQLite's busy handler would,
/// then fails `DATABASE_LOCKED`.
#[test]
fn a_lock_held_elsewhere_on_postgresql_ends_a_command_with_database_locked() {
    let site = TestSite::new("pg_lock_timeout");
    let Some(url) = site.database_url.clone() else {
        return; // PostgreSQL only.
    };
    let mut psql = Command::new("psql");
    psql.arg(&url).args(["-qAt", "-v", "ON_ERROR_STOP=1"]);
    let locker = Locker::hold(
        psql,
        "BEGIN; LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE; SELECT 'locked';",
    );
    let started = Instant::now();
    let f = site.fails(&["keys", "list", "--json"]);
    let took = started.elapsed();
    assert!(locker.release("ROLLBACK;").success());
    assert_eq!(f.code, "DATABASE_LOCKED", "{}", f.stderr);
    assert!(took < Duration::from_secs(40), "waited {took:?}");
    // Released, the same command works.
    site.ok(&["keys", "list", "--json"]);
}
