//! PostgreSQL for the tests of `gatehouse-core` and `gatehouse-cli`.
//!
//! The server is the one `GATEHOUSE_TEST_PG_URL=postgres://user@127.0.0.1:PORT`
//! names (`scripts/pg.sh start` prints one; `scripts/test.sh` runs the suites
//! with it). Each test gets a fresh database there, and SQL the tests run
//! behind the product's back goes through `psql`, as an administrator would.
//! Tests that need PostgreSQL are skipped, saying so, when the variable is unset.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The environment variable naming the server.
pub const ENV: &str = "GATEHOUSE_TEST_PG_URL";

/// The server's URL without a database, or `None` when [`ENV`] is unset or empty.
pub fn base_url() -> Option<String> {
    std::env::var(ENV).ok().filter(|s| !s.is_empty())
}

/// [`base_url`], saying on stderr that the calling test is skipped when there is none.
pub fn base_url_or_skip() -> Option<String> {
    let url = base_url();
    if url.is_none() {
        eprintln!("skipped: set {ENV} (scripts/pg.sh start) to run");
    }
    url
}

/// Runs SQL with `psql` (stopping at the first error) and returns its
/// unaligned, tuples-only output, trimmed: columns joined by `|`, a row a line.
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

/// Creates a fresh, empty database for one test; returns its URL and its name.
///
/// The name joins `name` (cut short, as PostgreSQL would cut it silently past
/// 63 bytes), this process and a counter, so parallel tests and test binaries
/// never share one.
pub fn fresh_database(base: &str, name: &str) -> (String, String) {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(32)
        .collect();
    let db = format!(
        "gh_{name}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    );
    psql(
        &format!("{base}/postgres"),
        &format!("CREATE DATABASE {db}"),
    );
    (format!("{base}/{db}"), db)
}

/// Ends every session on database `db` (as a server restart or a cut network
/// would); returns how many there were.
pub fn drop_connections(base: &str, db: &str) -> usize {
    psql(
        &format!("{base}/postgres"),
        &format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '{db}'"
        ),
    )
    .parse()
    .expect("a count")
}
