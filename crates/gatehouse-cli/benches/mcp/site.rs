//! What both server benches share: the binary measured, a scratch site with
//! a key (SQLite or a fresh PostgreSQL database), and the audit check.

#![allow(dead_code)] // each bench uses its own part of this file

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The binary measured: this build's, or `BENCH_GATEHOUSE` (another build of
/// it, for a before/after pair on the same site and driver).
pub fn bin() -> String {
    std::env::var("BENCH_GATEHOUSE").unwrap_or_else(|_| env!("CARGO_BIN_EXE_gatehouse").into())
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// A fresh database on the PostgreSQL server at `base` for the bench `what`,
/// with `synchronous_commit = on`: scripts/pg.sh's cluster has it off, and
/// with it on a commit has written its WAL to the kernel before the answer,
/// as SQLite's WAL with synchronous=NORMAL does (neither fsyncs each commit).
pub fn pg_database(base: &str, what: &str) -> String {
    let (url, db) = gatehouse_test_pg::fresh_database(base, &format!("bench_{what}"));
    gatehouse_test_pg::psql(
        &format!("{base}/postgres"),
        &format!("ALTER DATABASE {db} SET synchronous_commit = on"),
    );
    url
}

pub fn verify(site: &Path, config: &Path) -> Value {
    let out = Command::new(bin())
        .arg("--site")
        .arg(site)
        .args(["audit", "verify", "--json"])
        .env("GATEHOUSE_CONFIG_DIR", config)
        .env_remove("GATEHOUSE_API_KEY")
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "audit verify: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })
}

/// A scratch site with an API key that may write drafts.
pub fn make_site(tmp: &Path, config: &Path, backend: &str, url: Option<&str>) -> (PathBuf, String) {
    let site = tmp.join(backend);
    let mut init = Command::new(bin());
    init.args(["site", "init"])
        .arg(&site)
        .arg("--scratch")
        .env("GATEHOUSE_CONFIG_DIR", config);
    if let Some(url) = url {
        init.arg("--database-url").arg(url);
    }
    let out = init.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(bin())
        .arg("--site")
        .arg(&site)
        .args(["keys", "mint", "--label", "bench"])
        .args(["--roles", "author", "--json"])
        .env("GATEHOUSE_CONFIG_DIR", config)
        .env_remove("GATEHOUSE_API_KEY")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (site, v["key"].as_str().unwrap().to_string())
}
