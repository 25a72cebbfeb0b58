//! Helpers for core integration tests that need a real PostgreSQL server.
//!
//! They run when `GATEHOUSE_TEST_PG_URL=postgres://user@127.0.0.1:PORT` is set
//! (`scripts/pg.sh start` prints one) and are skipped, saying so, otherwise.
#![allow(dead_code)]

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

pub fn pg_base_url() -> Option<String> {
    let url = std::env::var("GATEHOUSE_TEST_PG_URL")
        .ok()
        .filter(|s| !s.is_empty());
    if url.is_none() {
        eprintln!("skipped: set GATEHOUSE_TEST_PG_URL (scripts/pg.sh start) to run");
    }
    url
}

/// Runs SQL as the superuser with psql (tests only: app SQL lives in `store`).
pub fn psql(url: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .arg(url)
        .args(["-qAt", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .expect("psql runs");
    assert!(
        out.status.success(),
        "psql failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A fresh, empty database; returns its URL.
pub fn fresh_database(base: &str, name: &str) -> (String, String) {
    let db = format!(
        "ghc_{name}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    );
    psql(
        &format!("{base}/postgres"),
        &format!("CREATE DATABASE {db}"),
    );
    (format!("{base}/{db}"), db)
}

/// Drops every connection to `db` (as a server restart or a network cut would);
/// returns how many were dropped.
pub fn drop_connections(base: &str, db: &str) -> usize {
    psql(
        &format!("{base}/postgres"),
        &format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '{db}'"
        ),
    )
    .parse()
    .unwrap()
}

/// `scripts/pg.sh` of this repository.
pub fn pg_script() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg.sh")
}
