//! A dropped PostgreSQL connection: reads are retried on a fresh connection,
//! a write whose connection dropped before commit is lost, never half-applied
//! and never replayed. (The pool does not ping before use, so without the
//! retry the first read after a drop would fail.)

use gatehouse_core::access::permissions::Role;
use gatehouse_core::access::users;
use gatehouse_core::access::{audit, keys};
use gatehouse_core::store::Store;
use gatehouse_test_pg::{base_url_or_skip, drop_connections, fresh_database, psql};

#[tokio::test]
async fn reads_survive_a_dropped_connection() {
    let Some(base) = base_url_or_skip() else {
        return;
    };
    let (url, db) = fresh_database(&base, "drop_read");
    let store = Store::open(&url).await.unwrap();
    users::create(&store, "test", "a@example.com", &[Role::Editor])
        .await
        .unwrap();
    assert_eq!(users::list(&store).await.unwrap().len(), 1);

    assert!(
        drop_connections(&base, &db) >= 1,
        "the pool held a connection"
    );
    // The idle connection is dead; the read notices and retries.
    assert_eq!(users::list(&store).await.unwrap().len(), 1);
    assert!(users::get(&store, "A@example.com").await.unwrap().is_some());

    // A write after a drop reopens its connection before sending anything.
    assert!(drop_connections(&base, &db) >= 1);
    let minted = keys::mint(&store, "test", "after drop", &[Role::Viewer], None)
        .await
        .unwrap();
    assert_eq!(
        keys::verify(&store, &minted.key).await.unwrap().id,
        minted.info.id
    );
    assert!(audit::verify(&store).await.unwrap().ok);
}

#[tokio::test]
async fn a_write_cut_off_before_commit_is_not_applied_or_replayed() {
    let Some(base) = base_url_or_skip() else {
        return;
    };
    let (url, db) = fresh_database(&base, "drop_write");
    let store = Store::open(&url).await.unwrap();
    users::create(&store, "test", "first@example.com", &[Role::Viewer])
        .await
        .unwrap();
    let head_before = psql(&url, "SELECT seq || ':' || hash FROM audit_head");

    let mut tx = store.begin_write().await.unwrap();
    gatehouse_core::store::users::insert(&mut tx, "lost@example.com", "viewer", 1)
        .await
        .unwrap();
    audit::append(
        &mut tx,
        audit::AuditEntry {
            actor: "test",
            action: gatehouse_core::access::audit::AuditAction::UserCreate,
            subject: "lost@example.com",
            detail: serde_json::json!({}),
        },
    )
    .await
    .unwrap();
    assert!(drop_connections(&base, &db) >= 1);
    assert!(
        tx.commit().await.is_err(),
        "a commit on a dead connection fails"
    );

    // Nothing of it landed, and nothing re-sent it behind our back.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let emails: Vec<String> = users::list(&store)
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.email)
        .collect();
    assert_eq!(emails, ["first@example.com"]);
    assert_eq!(
        psql(&url, "SELECT seq || ':' || hash FROM audit_head"),
        head_before
    );
    let report = audit::verify(&store).await.unwrap();
    assert!(report.ok && report.entries == 1, "{report:?}");
}
