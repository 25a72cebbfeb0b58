//! `cargo bench -p gatehouse-cli --bench mcp`: how fast `gatehouse mcp`
//! answers, next to servers that do no database work, all driven by the same
//! raw pipe driver ([`driver`]) in the same run:
//!
//! - `gatehouse` on a scratch SQLite site (and on PostgreSQL when
//!   `GATEHOUSE_TEST_PG_URL` is set, `scripts/pg.sh start`), run with an API
//!   key (so each call pays the actor re-check): `content_read` and
//!   `content_write_draft`. After each figure the site's audit chain is
//!   verified and must hold exactly one entry per call answered (two per
//!   draft written): every answer had its entry committed first;
//! - the TypeScript SDK echo server (`tests/interop/echo_server.mjs`, when
//!   `scripts/interop-setup.sh` installed the SDK), a stdlib Python echo
//!   server (`tests/interop/stdlib_echo_server.py`) and a 20-line Rust echo
//!   server (this binary, re-run as one): `echo`. The Rust one is the floor
//!   the pipe and the driver set.
//!
//! For each: cold start (spawn to `initialize` answer, median of 10), then
//! sequential calls and calls with 16 in flight: calls/s, p50 and p99 in µs.
//! `BENCH_RUNS` rounds (default 3) run every target in turn, so background
//! noise spreads over all of them; it prints one JSON line per figure, then
//! per target the medians with the min–max over the rounds. `BENCH_CALLS`
//! sets the calls per figure (default 5000), `BENCH_ONLY` keeps the targets
//! whose name contains it (or one of its `|`-separated parts), `BENCH_GATEHOUSE` measures another build of the
//! binary. It asserts nothing about speed.

#[path = "mcp/driver.rs"]
mod driver;
#[path = "mcp/site.rs"]
mod site;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use driver::{Figures, Target};

fn main() {
    if let Ok(mode) = std::env::var(driver::ECHO_ENV) {
        return driver::rust_echo_server(mode.strip_prefix("commit:"));
    }
    let n = site::env_num("BENCH_CALLS", 5000);
    let runs = site::env_num("BENCH_RUNS", 3).max(1);
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let tmp = tempfile::tempdir().unwrap();
    // Checkpoint anchors and the signing key go to a scratch config dir.
    let config = tmp.path().join("config");

    let mut sites = vec![("sqlite", None)];
    if let Some(base) = gatehouse_test_pg::base_url() {
        sites.push(("postgres", Some(site::pg_database(&base, "mcp"))));
    }

    // `BENCH_OLD_AUDIT_LAYOUT=1`: also a SQLite site whose audit log has the
    // layout before migration 0017 (seq indexed beside the rowid), side by side.
    if std::env::var_os("BENCH_OLD_AUDIT_LAYOUT").is_some() {
        sites.push(("sqlite-pre0017", None));
    }
    let mut targets = Vec::new();
    for (backend, url) in sites {
        let (site, key) = site::make_site(tmp.path(), &config, backend, url.as_deref());
        if backend == "sqlite-pre0017" {
            old_audit_layout(&site);
        }
        for tool in ["content_read", "content_write_draft"] {
            targets.push(gatehouse_target(&site, Some(&key), &config, backend, tool));
        }
        // The anonymous actor every keyless HTTP client gets.
        targets.push(gatehouse_target(
            &site,
            None,
            &config,
            backend,
            "content_read",
        ));
    }
    targets.extend(echo_targets(tmp.path()));
    targets.extend(floor_target(tmp.path()));
    targets.retain(|t| only.split('|').any(|o| t.name.contains(o)));

    let mut rows: Vec<(String, Figures)> = Vec::new();
    for round in 1..=runs {
        for t in &targets {
            let f = driver::bench(t, n);
            println!("round {round}: {}", f.json(&t.name));
            rows.push((t.name.clone(), f));
        }
    }
    println!(
        "\n{n} calls per figure, 16 in flight; medians of {runs} round(s), (min-max) over rounds:"
    );
    driver::table(&targets, &rows);
}

fn gatehouse_target(
    site: &Path,
    key: Option<&str>,
    config: &Path,
    backend: &str,
    tool: &str,
) -> Target {
    let (site, key, config) = (
        site.to_path_buf(),
        key.map(str::to_string),
        config.to_path_buf(),
    );
    let who = if key.is_some() { "" } else { " public" };
    let write = tool == "content_write_draft";
    let params: Box<dyn Fn(u64) -> Value> = if write {
        Box::new(|i| {
            json!({"name": "content_write_draft", "arguments": {
                "slug": format!("bench-{}", i % 64), "title": "Bench", "body": format!("body {i}")}})
        })
    } else {
        Box::new(|_| json!({"name": "content_read", "arguments": {"slug": "welcome"}}))
    };
    let command = {
        let (site, config) = (site.clone(), config.clone());
        Box::new(move || {
            let mut c = Command::new(site::bin());
            c.arg("--site")
                .arg(&site)
                .arg("mcp")
                .env("GATEHOUSE_CONFIG_DIR", &config);
            match &key {
                Some(key) => c.env("GATEHOUSE_API_KEY", key),
                None => c.env_remove("GATEHOUSE_API_KEY"),
            };
            c
        })
    };
    // A draft write records the call and the write: two entries.
    let per_call = if write { 2 } else { 1 };
    let audit: driver::AuditCheck = Box::new(move |calls: u64| {
        let v = site::verify(&site, &config);
        assert_eq!(v["ok"], true, "the audit chain must verify: {v}");
        let entries = v["entries"].as_u64().unwrap();
        (entries, calls * per_call)
    });
    Target {
        name: format!("gatehouse {backend} {tool}{who}"),
        command,
        params,
        audit: Some(audit),
    }
}

fn echo_targets(tmp: &Path) -> Vec<Target> {
    let echo = |i: u64| json!({"name": "echo", "arguments": {"message": format!("hello {i}")}});
    let mut out = Vec::new();
    let ts = site::repo().join("tests/interop/echo_server.mjs");
    if site::repo()
        .join("tests/interop/node_modules/@modelcontextprotocol/sdk")
        .exists()
    {
        out.push(Target {
            name: "ts-sdk echo".into(),
            command: Box::new(move || {
                let mut c = Command::new("node");
                c.arg(&ts)
                    .env_clear()
                    .env("PATH", std::env::var("PATH").unwrap_or_default());
                c
            }),
            params: Box::new(echo),
            audit: None,
        });
    } else {
        println!("(ts-sdk echo skipped: run scripts/interop-setup.sh)");
    }
    let py = site::repo().join("tests/interop/stdlib_echo_server.py");
    out.push(Target {
        name: "python stdlib echo".into(),
        command: Box::new(move || {
            let mut c = Command::new("python3");
            c.arg(&py);
            c
        }),
        params: Box::new(echo),
        audit: None,
    });
    out.push(Target {
        name: "rust echo".into(),
        command: Box::new(|| {
            let mut c = Command::new(std::env::current_exe().unwrap());
            c.env(driver::ECHO_ENV, "1");
            c
        }),
        params: Box::new(echo),
        audit: None,
    });
    // The floor for a server that commits each call before answering it.
    let db = tmp.join("floor.db");
    let counted = db.clone();
    out.push(Target {
        name: "rust echo + sqlite commit".into(),
        command: Box::new(move || {
            let mut c = Command::new(std::env::current_exe().unwrap());
            c.env(driver::ECHO_ENV, format!("commit:{}", db.display()));
            c
        }),
        params: Box::new(echo),
        audit: Some(Box::new(move |calls| {
            let conn = rusqlite::Connection::open(&counted).unwrap();
            // No table yet before the first start.
            let rows: i64 = conn
                .query_row("SELECT count(*) FROM log", [], |r| r.get(0))
                .unwrap_or(0);
            (rows as u64, calls)
        })),
    });
    out
}

/// `BENCH_FLOOR_BIN`: an outside server to measure beside the others, run
/// as `BIN DB_FILE` and answering `tools/call` on stdio (the commit-per-call
/// floor: one SQLite row committed per call, no group commit). Its rows are
/// counted like gatehouse's entries.
fn floor_target(tmp: &Path) -> Option<Target> {
    let bin = std::env::var_os("BENCH_FLOOR_BIN")?;
    let db = tmp.join("commit-floor.db");
    let counted = db.clone();
    Some(Target {
        name: "commit floor (a commit per call)".into(),
        command: Box::new(move || {
            let mut c = Command::new(&bin);
            c.arg(&db);
            c
        }),
        params: Box::new(|_| json!({"name": "content_read", "arguments": {"slug": "welcome"}})),
        audit: Some(Box::new(move |calls| {
            let conn = rusqlite::Connection::open(&counted).unwrap();
            let rows: i64 = conn
                .query_row("SELECT count(*) FROM audit", [], |r| r.get(0))
                .unwrap_or(0);
            (rows as u64, calls)
        })),
    })
}

/// Rebuilds the site's audit log as it was before migration 0017: `seq
/// BIGINT PRIMARY KEY` (a unique index beside the rowid).
fn old_audit_layout(site: &Path) {
    let sql = "BEGIN;
        CREATE TABLE old_log (seq BIGINT PRIMARY KEY, ts BIGINT NOT NULL, actor TEXT NOT NULL,
            action TEXT NOT NULL, subject TEXT NOT NULL, detail TEXT NOT NULL,
            prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
        INSERT INTO old_log SELECT * FROM audit_log ORDER BY seq;
        DROP TABLE audit_log;
        ALTER TABLE old_log RENAME TO audit_log;
        CREATE INDEX audit_log_actor ON audit_log (actor, seq);
        CREATE INDEX audit_log_action ON audit_log (action, seq);
        COMMIT;";
    let out = Command::new("sqlite3")
        .arg(site.join("gatehouse.db"))
        .arg(sql)
        .output()
        .expect("sqlite3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
