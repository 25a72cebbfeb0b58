//! The store and the permission-checked content API on a real database: a
//! fresh SQLite file per test, or a fresh PostgreSQL database when
//! `GATEHOUSE_TEST_PG_URL` is set (the same tests, run twice by `.ci/run`).

use crate::common::fresh_site;
use gatehouse_core::access::actor::Actor;
use gatehouse_core::access::audit::{self, Entry};
use gatehouse_core::access::permissions::Role;
use gatehouse_core::site::content::{self, DraftWrite};
use gatehouse_core::site::{self, Settings};
use gatehouse_core::store::{Backend, Store};

struct Db {
    site: site::Site,
    _tmp: tempfile::TempDir,
}

async fn fresh(name: &str) -> Db {
    let (_tmp, site) = fresh_site(name).await;
    Db { site, _tmp }
}

fn actor(roles: &[Role]) -> Actor {
    Actor::Synthetic {
        roles: roles.to_vec(),
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
    let settings = Settings {
        dir: db.site.dir.clone(),
        database_url: db.site.file.database_url.clone(),
    };
    let other = site::open(&settings).await.unwrap().store;
    let stores: Vec<Store> = vec![db.site.store.clone(), other];
    let mut tasks = Vec::new();
    for i in 0..40 {
        let store = stores[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            audit::record(
                &store,
                Entry {
                    actor: "test",
                    action: "test.append",
                    subject: &i.to_string(),
                    detail: serde_json::json!({}),
                },
            )
            .await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let report = audit::verify(&db.site.store).await.unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.entries, 41, "40 appends and the seed entry");
}

#[tokio::test]
async fn the_backend_is_the_one_asked_for() {
    let db = fresh("backend").await;
    let expected = if std::env::var("GATEHOUSE_TEST_PG_URL").is_ok_and(|s| !s.is_empty()) {
        Backend::Postgres
    } else {
        Backend::Sqlite
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
