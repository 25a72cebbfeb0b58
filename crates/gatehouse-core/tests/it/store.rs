//! The store and the permission-checked content API on a real database: a
//! fresh SQLite file per test, or a fresh PostgreSQL database when
//! `GATEHOUSE_TEST_PG_URL` is set (the same tests, run twice by `.ci/run`).

use crate::common::fresh_site;
use gatehouse_core::access::actor::Actor;
use gatehouse_core::access::audit::{self, AuditEntry};
use gatehouse_core::access::permissions::Role;
use gatehouse_core::site::content::{self, DraftWrite};
use gatehouse_core::site::{self, Settings};
use gatehouse_core::store::{DatabaseKind, Store};

struct Db {
    site: site::Site,
    _tmp: tempfile::TempDir,
}

async fn fresh(name: &str) -> Db {
    let (_tmp, site) = fresh_site(name).await;
    Db { site, _tmp }
}

/// The same site opened again: a store with connections of its own, as
/// another process has.
async fn second_store(db: &Db) -> Store {
    let settings = Settings {
        dir: db.site.dir.clone(),
        database_url: db.site.file.database_url.clone(),
    };
    site::open(&settings).await.unwrap().store
}

fn actor(roles: &[Role]) -> Actor {
    Actor::Synthetic {
        roles: roles.to_vec(),
    }
}

/// An audit entry of these tests, told apart by `subject`.
fn test_entry(subject: &str) -> AuditEntry<'_> {
    AuditEntry {
        actor: "test",
        action: gatehouse_core::access::audit::AuditAction::SiteConfigSet,
        subject,
        detail: serde_json::json!({}),
    }
}

fn draft<'a>(slug: &'a str, title: &'a str, body: &'a str) -> DraftWrite<'a> {
    DraftWrite {
        slug,
        title,
        body,
        new_slug: None,
    }
}

#[tokio::test]
async fn a_written_draft_is_searchable_at_once() {
    let db = fresh("search_now").await;
    let store = &db.site.store;
    let author = actor(&[Role::Author]);
    content::write_draft(
        store,
        &author,
        &draft("zebra-notes", "Zebra notes", "stripes and savannah"),
    )
    .await
    .unwrap();
    let hits = content::search(store, &author, "savannah", 10)
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|e| e.slug.as_str()).collect::<Vec<_>>(),
        ["zebra-notes"]
    );
    // Anonymous readers do not find drafts; after publishing they do.
    assert!(
        content::search(store, &Actor::public(), "savannah", 10)
            .await
            .unwrap()
            .is_empty()
    );
    content::publish(store, &actor(&[Role::Editor]), "zebra-notes")
        .await
        .unwrap();
    assert_eq!(
        content::search(store, &Actor::public(), "savannah", 10)
            .await
            .unwrap()
            .len(),
        1
    );
    // An edit of a published entry waits as a pending revision: the published
    // text stays indexed until publishing applies the edit, which replaces it.
    content::write_draft(
        store,
        &author,
        &draft("zebra-notes", "Zebra notes", "now about okapi"),
    )
    .await
    .unwrap();
    assert_eq!(
        content::search(store, &author, "savannah", 10)
            .await
            .unwrap()
            .len(),
        1
    );
    content::publish(store, &actor(&[Role::Editor]), "zebra-notes")
        .await
        .unwrap();
    assert!(
        content::search(store, &author, "savannah", 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        content::search(store, &author, "okapi", 10)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn search_text_is_not_query_syntax() {
    let db = fresh("search_syntax").await;
    let store = &db.site.store;
    let viewer = actor(&[Role::Viewer]);
    for q in [
        "\"",
        "AND OR NOT",
        "title:welcome",
        "(",
        "*",
        "welcome\" OR \"x",
        "NEAR(a b)",
        "",
    ] {
        content::search(store, &viewer, q, 10)
            .await
            .unwrap_or_else(|e| panic!("{q:?}: {e}"));
    }
    assert_eq!(
        content::search(store, &viewer, "Welcome", 10)
            .await
            .unwrap()[0]
            .slug,
        "welcome"
    );
}

#[tokio::test]
async fn a_rename_leaves_a_redirect() {
    let db = fresh("rename").await;
    let store = &db.site.store;
    let author = actor(&[Role::Author]);
    content::write_draft(store, &author, &draft("old-name", "T", "b"))
        .await
        .unwrap();
    let renamed = content::write_draft(
        store,
        &author,
        &DraftWrite {
            new_slug: Some("new-name"),
            ..draft("old-name", "T", "b2")
        },
    )
    .await
    .unwrap();
    assert_eq!(renamed.slug, "new-name");
    assert_eq!(
        content::read(store, &author, "old-name")
            .await
            .unwrap()
            .0
            .slug,
        "new-name"
    );
    // The redirect holds the old slug: a new entry cannot take it.
    let err = content::write_draft(store, &author, &draft("old-name", "Other", "x"))
        .await
        .unwrap_err();
    assert_eq!(err.code, "SLUG_TAKEN");
    // Renaming back removes the redirect instead of pointing at itself.
    content::write_draft(
        store,
        &author,
        &DraftWrite {
            new_slug: Some("old-name"),
            ..draft("new-name", "T", "b3")
        },
    )
    .await
    .unwrap();
    assert_eq!(
        content::read(store, &author, "new-name")
            .await
            .unwrap()
            .0
            .slug,
        "old-name"
    );
    // Deleting removes its redirects too.
    content::delete(store, &actor(&[Role::Admin]), "old-name")
        .await
        .unwrap();
    assert_eq!(
        content::read(store, &author, "new-name")
            .await
            .unwrap_err()
            .code,
        "CONTENT_NOT_FOUND"
    );
    content::write_draft(store, &author, &draft("new-name", "Fresh", "x"))
        .await
        .unwrap();
}

#[tokio::test]
async fn permissions_are_checked_by_the_content_api() {
    let db = fresh("content_perms").await;
    let store = &db.site.store;
    let public = Actor::public();
    assert_eq!(
        content::read(store, &public, "roadmap-draft")
            .await
            .unwrap_err()
            .code,
        "CONTENT_NOT_FOUND"
    );
    assert_eq!(
        content::read(store, &actor(&[Role::Viewer]), "roadmap-draft")
            .await
            .unwrap()
            .0
            .status,
        "draft"
    );
    let listed = content::list(store, &public, 100, 0).await.unwrap();
    assert!(listed.iter().all(|e| e.status == "published") && listed.len() == 2);
    assert_eq!(
        content::write_draft(store, &actor(&[Role::Viewer]), &draft("x", "x", "x"))
            .await
            .unwrap_err()
            .code,
        "PERMISSION_DENIED"
    );
    assert_eq!(
        content::publish(store, &actor(&[Role::Author]), "roadmap-draft")
            .await
            .unwrap_err()
            .code,
        "PERMISSION_DENIED"
    );
    assert_eq!(
        content::delete(store, &actor(&[Role::Editor]), "welcome")
            .await
            .unwrap_err()
            .code,
        "PERMISSION_DENIED"
    );
    assert_eq!(
        content::write_draft(store, &actor(&[Role::Author]), &draft("Bad Slug", "x", "x"))
            .await
            .unwrap_err()
            .code,
        "SLUG_INVALID"
    );
}

#[tokio::test]
async fn concurrent_appends_from_two_pools_form_one_chain() {
    let db = fresh("audit_concurrent").await;
    let other = second_store(&db).await;
    let stores: Vec<Store> = vec![db.site.store.clone(), other];
    let mut tasks = Vec::new();
    for i in 0..40 {
        let store = stores[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            audit::record(&store, test_entry(&i.to_string())).await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let report = audit::verify(&db.site.store).await.unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.entries, 41, "40 appends and the seed entry");
}

/// A store's group commit chains onto the head its last commit left only
/// while no other connection has committed since: what another store (as
/// another process) appended in between comes first.
#[tokio::test]
async fn a_group_commit_chains_onto_what_another_store_appended_since() {
    let db = fresh("audit_alternating").await;
    let other = second_store(&db).await;
    for i in 0..6 {
        let store = if i % 2 == 0 { &db.site.store } else { &other };
        audit::record(store, test_entry(&i.to_string()))
            .await
            .unwrap();
    }
    let report = audit::verify(&db.site.store).await.unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.entries, 7, "6 appends and the seed entry");
}

#[tokio::test]
async fn the_backend_is_the_one_asked_for() {
    let db = fresh("backend").await;
    let expected = if gatehouse_test_pg::base_url().is_some() {
        DatabaseKind::Postgres
    } else {
        DatabaseKind::Sqlite
    };
    assert_eq!(db.site.store.backend(), expected);
}

/// `sqlite_url` must survive characters a URL gives meaning to: `%41` must not
/// come back as `A`, `#` must not start a fragment, `?` must not start a query.
#[tokio::test]
async fn sqlite_file_path_with_url_characters_opens_that_exact_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a b%41#c?d=é");
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join("site.db");
    let store = Store::open(&gatehouse_core::store::sqlite_url(&file))
        .await
        .unwrap();
    store.close().await;
    assert!(file.exists(), "the database is at the path given");
    let names: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("a b%41#c?d=é")]);
}

fn is_sqlite(db: &Db) -> bool {
    db.site.store.backend() == DatabaseKind::Sqlite
}

/// Writers of one process share a write gate: group commits, write
/// transactions, checkpoint rows and a second store on the same file never wait for each
/// other at SQLite's lock (which would show as a lock wait), and the chain
/// comes out whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_of_one_process_never_wait_at_the_sqlite_lock() {
    let db = fresh("one_process_writers").await;
    let other = second_store(&db).await;
    let stores: Vec<Store> = vec![db.site.store.clone(), other];
    // A write transaction of one store is open while the other store's group
    // commit runs: the commit waits at the gate, not at SQLite's lock.
    let tx = stores[1].begin_write().await.unwrap();
    let store = stores[0].clone();
    let behind = tokio::spawn(async move {
        let entry = test_entry("behind a write transaction");
        audit::record(&store, entry).await
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(
        !behind.is_finished(),
        "committed inside another write transaction"
    );
    tx.commit().await.unwrap();
    behind.await.unwrap().unwrap();
    // Then a mixed load from both stores.
    let mut tasks = Vec::new();
    for i in 0..120 {
        let store = stores[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            if i % 4 == 1 {
                // A signed checkpoint's row: a write like any other.
                let row = gatehouse_core::store::checkpoints::CheckpointRow {
                    seq: i as i64,
                    hash: format!("{i:064}"),
                    ts: 0,
                    public_key: "00".repeat(32),
                    signature: "00".repeat(64),
                };
                gatehouse_core::store::checkpoints::insert(&store, &row).await
            } else if i % 2 == 0 {
                let author = actor(&[Role::Author]);
                let slug = format!("gate-{i}");
                content::write_draft(&store, &author, &draft(&slug, "Gate", "body"))
                    .await
                    .map(|_| ())
            } else {
                audit::record(&store, test_entry(&i.to_string()))
                    .await
                    .map(|_| ())
            }
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let report = audit::verify(&db.site.store).await.unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(stores[0].lock_waits() + stores[1].lock_waits(), 0);
}

/// A group commit that finds the file locked by another process waits for
/// it off the runtime and commits once the lock is released; meanwhile the
/// runtime keeps running other work.
#[tokio::test]
async fn a_group_commit_waits_for_another_process_lock_then_commits() {
    use sqlx::{Connection, Executor};
    let db = fresh("other_process_lock").await;
    if !is_sqlite(&db) {
        return;
    }
    let path = db.site.dir.join("gatehouse.db");
    let mut holder = sqlx::SqliteConnection::connect(&gatehouse_core::store::sqlite_url(&path))
        .await
        .unwrap();
    holder.execute("BEGIN IMMEDIATE").await.unwrap();
    let store = db.site.store.clone();
    let mut pending =
        tokio::spawn(async move { audit::record(&store, test_entry("behind a lock")).await });
    // The runtime is free while the commit waits: this timer fires first.
    tokio::select! {
        _ = &mut pending => panic!("committed while another connection held the write lock"),
        _ = tokio::time::sleep(std::time::Duration::from_millis(300)) => {}
    }
    assert_eq!(db.site.store.lock_waits(), 1);
    holder.execute("COMMIT").await.unwrap();
    let seq = pending.await.unwrap().unwrap();
    let report = audit::verify(&db.site.store).await.unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.entries, seq);
}

/// An anonymous `content_read` gets the author's display name from the
/// entry's own statement (one read): for every kind of author label it must
/// name exactly whom the separate lookup names, including labels the SQL
/// join cannot fold (non-ASCII, surrounding spaces: those fall back to the
/// lookup), and a renamed author is shown by the next read.
#[tokio::test]
async fn an_anonymous_read_names_the_author_as_the_lookup_does() {
    use gatehouse_core::access::users::{self, ANONYMOUS_AUTHOR};
    let db = fresh("author_name_joined").await;
    let store = &db.site.store;
    let editor = actor(&[Role::Editor]);
    content::write_draft(store, &editor, &draft("named", "Named", "body"))
        .await
        .unwrap();
    content::publish(store, &editor, "named").await.unwrap();
    users::create(store, "test", "Ada@Example.com", &[Role::Author])
        .await
        .unwrap();
    users::set_display_name(store, "test", "ada@example.com", Some("Ada L."))
        .await
        .unwrap();
    users::create(store, "test", "bob@example.com", &[Role::Author])
        .await
        .unwrap();
    users::create(store, "test", "zoë@example.com", &[Role::Author])
        .await
        .unwrap();
    users::set_display_name(store, "test", "zoë@example.com", Some("Zoë"))
        .await
        .unwrap();

    let sqlite = is_sqlite(&db);
    let shown = |label: &'static str| async move {
        sqlx::query("UPDATE content SET author = $1 WHERE slug = 'named'")
            .bind(label)
            .execute(store.pool())
            .await
            .unwrap();
        let (entry, _, joined) = content::read_named(store, &Actor::Public, "named")
            .await
            .unwrap();
        assert_eq!(entry.author, label);
        // On SQLite the statement joined the name; PostgreSQL looks it up.
        assert_eq!(joined.is_some(), sqlite, "{label}");
        let lookup = users::public_name(store, label).await.unwrap();
        let from_join = joined.and_then(|j| users::public_name_joined(label, j));
        if let Some(name) = &from_join {
            assert_eq!(name, &lookup, "the join names {label} differently");
        }
        (from_join.is_some(), lookup)
    };
    let anon = ANONYMOUS_AUTHOR.to_string();
    assert_eq!(
        shown("user:Ada@Example.com").await,
        (sqlite, "Ada L.".into())
    );
    assert_eq!(shown("ada@EXAMPLE.com").await, (sqlite, "Ada L.".into()));
    assert_eq!(shown("user:bob@example.com").await, (sqlite, anon.clone()));
    assert_eq!(
        shown("user:nobody@example.com").await,
        (sqlite, anon.clone())
    );
    assert_eq!(shown("key:abc123").await, (sqlite, anon.clone()));
    assert_eq!(shown("public").await, (sqlite, anon.clone()));
    // SQL's lower() leaves Ë alone and trims nothing: these take the lookup.
    assert_eq!(shown("user:ZOË@example.com").await, (false, "Zoë".into()));
    assert_eq!(
        shown("user: ada@example.com ").await,
        (false, "Ada L.".into())
    );

    // Renamed: the very next read shows the new name.
    users::set_display_name(store, "test", "ada@example.com", Some("Ada Lovelace"))
        .await
        .unwrap();
    assert_eq!(shown("user:Ada@Example.com").await.1, "Ada Lovelace");
}

/// An approved write checks, in its own transaction, that the entry is what
/// the approval was shown: an edit landing between the approval step's check
/// and the write (40 approved publishes raced against edits let one swapped
/// revision go live) is refused, and nothing is written.
#[tokio::test]
async fn an_approved_write_is_refused_when_the_entry_changed_since_it_was_shown() {
    let db = fresh("approved_base").await;
    let store = &db.site.store;
    let editor = actor(&[Role::Admin]);
    content::write_draft(store, &editor, &draft("raced", "Raced", "live v1"))
        .await
        .unwrap();
    content::publish(store, &editor, "raced").await.unwrap();
    content::write_draft(store, &editor, &draft("raced", "Raced", "pending v2"))
        .await
        .unwrap();
    let shown = content::read(store, &editor, "raced").await.unwrap();
    let approved = content::base_digest(Some((&shown.0, shown.1.as_ref())));
    // The edit after the approval's check.
    content::write_draft(store, &editor, &draft("raced", "Raced", "swapped v3"))
        .await
        .unwrap();
    for write in ["publish", "delete", "write_draft"] {
        let result = content::APPROVED_BASE
            .scope(approved.clone(), async {
                match write {
                    "publish" => content::publish(store, &editor, "raced").await.map(drop),
                    "delete" => content::delete(store, &editor, "raced").await,
                    _ => content::write_draft(store, &editor, &draft("raced", "Raced", "v4"))
                        .await
                        .map(drop),
                }
            })
            .await;
        assert_eq!(
            result.unwrap_err().code,
            gatehouse_core::error::Code::APPROVAL_STALE,
            "{write}"
        );
    }
    let (live, pending) = content::read(store, &editor, "raced").await.unwrap();
    assert_eq!(live.body, "live v1");
    assert_eq!(pending.unwrap().body, "swapped v3");
    // What was shown, unchanged, is written.
    let now = content::base_digest(Some((
        &live,
        content::read(store, &editor, "raced")
            .await
            .unwrap()
            .1
            .as_ref(),
    )));
    content::APPROVED_BASE
        .scope(now, content::publish(store, &editor, "raced"))
        .await
        .unwrap();
}
