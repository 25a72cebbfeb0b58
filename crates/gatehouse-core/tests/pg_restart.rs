//! A long-lived store across a PostgreSQL restart: a read issued while the
//! server is down waits (with backoff) and succeeds once it is back.
//!
//! Restarts the server of `scripts/pg.sh`, so it runs only when
//! `GATEHOUSE_TEST_PG_URL` is that server. A test binary of its own: cargo
//! runs test binaries one after another, so the restart cuts off no other
//! test (inside the `it` binary it cut off whatever PostgreSQL test ran
//! beside it: "the database system is starting up").

use std::process::Command;
use std::time::Duration;

use gatehouse_core::access::permissions::Role;
use gatehouse_core::access::users;
use gatehouse_core::access::{audit, keys};
use gatehouse_core::store::Store;
use gatehouse_test_pg::{base_url_or_skip, fresh_database};

/// `scripts/pg.sh` of this repository.
fn pg_script() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg.sh")
}

fn pg(command: &str) -> String {
    let out = Command::new("bash")
        .arg(pg_script())
        .arg(command)
        .output()
        .expect("scripts/pg.sh runs");
    assert!(
        out.status.success() || command == "url",
        "pg.sh {command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test]
async fn reads_retry_across_a_server_restart() {
    let Some(base) = base_url_or_skip() else {
        return;
    };
    if pg("url") != base {
        eprintln!("skipped: GATEHOUSE_TEST_PG_URL is not the server of scripts/pg.sh");
        return;
    }
    let (url, _) = fresh_database(&base, "restart");
    let store = Store::open(&url).await.unwrap();
    let minted = keys::mint(&store, "test", "before restart", &[Role::Editor], None)
        .await
        .unwrap();
    users::create(&store, "test", "r@example.com", &[Role::Viewer])
        .await
        .unwrap();

    pg("stop");
    // Issued while the server is down; it must wait for it, not fail.
    let reader = {
        let store = store.clone();
        tokio::spawn(async move { users::list(&store).await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !reader.is_finished(),
        "the read gave up while the server was down"
    );
    pg("start");
    let listed = reader.await.unwrap().unwrap();
    assert_eq!(listed.len(), 1);

    // The same store goes on working: verification, writes, the chain.
    let verified = keys::verify(&store, &minted.key).await.unwrap();
    assert_eq!(verified.id, minted.info.id);
    keys::revoke(&store, "test", &minted.info.id).await.unwrap();
    assert!(keys::verify(&store, &minted.key).await.is_err());
    let report = audit::verify(&store).await.unwrap();
    assert!(report.ok && report.entries == 3, "{report:?}");
}
