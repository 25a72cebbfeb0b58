//! A key's content scope against the permission-checked content API, on a
//! real database (SQLite, or PostgreSQL with `GATEHOUSE_TEST_PG_URL`). Each
//! test is an attack: a way an out-of-scope entry could leak (a redirect,
//! a search hit, a count or a page, a pending revision, a rename, media)
//! and the regression test is named after what it pins.

use crate::common::fresh_site;
use gatehouse_core::access::actor::Actor;
use gatehouse_core::access::keys;
use gatehouse_core::access::permissions::Role;
use gatehouse_core::access::restrictions::Restrictions;
use gatehouse_core::error::Code;
use gatehouse_core::mcp::server::reach::RestrictionChange;
use gatehouse_core::site::content::{self, DraftWrite};
use gatehouse_core::site::{Site, media};

fn editor() -> Actor {
    Actor::Synthetic {
        roles: vec![Role::Editor],
    }
}

fn scoped(roles: &[Role], change: RestrictionChange) -> Actor {
    Actor::ApiKey {
        key_id: "scopedkey001".into(),
        roles: roles.to_vec(),
        restrictions: change.apply(Restrictions::default()).unwrap(),
    }
}

fn blog_only(status: Option<&str>) -> Actor {
    scoped(
        &[Role::Editor],
        RestrictionChange {
            content: Some("blog-*".into()),
            content_status: status.map(str::to_string),
            ..Default::default()
        },
    )
}

async fn write(site: &Site, slug: &str, title: &str, body: &str) {
    content::write_draft(
        &site.store,
        &editor(),
        &DraftWrite {
            slug,
            title,
            body,
            new_slug: None,
        },
    )
    .await
    .unwrap();
}

/// In scope: blog-spring (published, with a pending revision), blog-notes
/// (draft). Out of scope: private-launch (draft), private-news (published),
/// private-moved (published, renamed from blog-old: the redirect's slug
/// matches the scope, the entry does not). Every body says "okapi".
async fn seeded(name: &str) -> (tempfile::TempDir, Site) {
    let (tmp, site) = fresh_site(name).await;
    let ed = editor();
    write(&site, "blog-spring", "Spring", "okapi spring sale").await;
    content::publish(&site.store, &ed, "blog-spring")
        .await
        .unwrap();
    write(&site, "blog-spring", "Spring v2", "okapi pending revision").await;
    write(&site, "blog-notes", "Notes", "okapi notes").await;
    // Out of scope, and ranked above the blog entries for "okapi".
    write(
        &site,
        "private-launch",
        "Okapi okapi",
        "okapi okapi okapi secret launch",
    )
    .await;
    write(&site, "private-news", "News", "okapi okapi okapi news").await;
    content::publish(&site.store, &ed, "private-news")
        .await
        .unwrap();
    write(&site, "blog-old", "Moved", "okapi okapi moved").await;
    content::publish(&site.store, &ed, "blog-old")
        .await
        .unwrap();
    content::write_draft(
        &site.store,
        &ed,
        &DraftWrite {
            slug: "blog-old",
            title: "Moved",
            body: "okapi okapi moved",
            new_slug: Some("private-moved"),
        },
    )
    .await
    .unwrap();
    content::publish(&site.store, &ed, "private-moved")
        .await
        .unwrap();
    (tmp, site)
}

fn slugs(list: &[content::ContentEntry]) -> Vec<String> {
    list.iter().map(|e| e.slug.clone()).collect()
}

#[tokio::test]
async fn scoped_list_counts_and_pages_only_in_scope_entries() {
    let (_tmp, site) = seeded("scope_list").await;
    let key = blog_only(None);
    let all = content::list(&site.store, &key, 500, 0).await.unwrap();
    let mut got = slugs(&all);
    got.sort();
    assert_eq!(got, ["blog-notes", "blog-spring"]);
    // Page by page: the offset counts in-scope entries only, so two pages
    // of one hold both and the third is empty (out-of-scope rows would
    // shift the pages and show as short or empty pages).
    let mut paged = Vec::new();
    for offset in 0..3 {
        let page = content::list(&site.store, &key, 1, offset).await.unwrap();
        assert_eq!(page.len(), usize::from(offset < 2), "page {offset}");
        paged.extend(slugs(&page));
    }
    paged.sort();
    assert_eq!(paged, got);
}

#[tokio::test]
async fn scoped_search_hits_and_limits_see_only_in_scope_entries() {
    let (_tmp, site) = seeded("scope_search").await;
    let key = blog_only(None);
    let hits = content::search(&site.store, &key, "okapi", 100)
        .await
        .unwrap();
    let mut got = slugs(&hits);
    got.sort();
    assert_eq!(got, ["blog-notes", "blog-spring"]);
    // limit 1: the best in-scope hit, though out-of-scope entries rank higher.
    let one = content::search(&site.store, &key, "okapi", 1)
        .await
        .unwrap();
    assert_eq!(one.len(), 1);
    assert!(one[0].slug.starts_with("blog-"), "{:?}", one[0].slug);
    // A word only an out-of-scope entry holds finds nothing.
    let secret = content::search(&site.store, &key, "secret launch", 10)
        .await
        .unwrap();
    assert!(secret.is_empty(), "{:?}", slugs(&secret));
}

#[tokio::test]
async fn redirect_slug_in_scope_to_an_out_of_scope_entry_reads_as_absent() {
    let (_tmp, site) = seeded("scope_redirect").await;
    let key = blog_only(None);
    // Unscoped, the old slug reaches the renamed entry.
    let (e, _) = content::read(&site.store, &editor(), "blog-old")
        .await
        .unwrap();
    assert_eq!(e.slug, "private-moved");
    let err = content::read(&site.store, &key, "blog-old")
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::CONTENT_NOT_FOUND, "{}", err.message);
    assert!(!err.message.contains("private"), "{}", err.message);
    // Asked by its own name, the refusal is the scope's, decided on the name.
    let err = content::read(&site.store, &key, "private-moved")
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::KEY_SCOPE_CONTENT);
    let err = content::read(&site.store, &key, "no-such-entry")
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::KEY_SCOPE_CONTENT);
}

/// A key that may publish but reads published entries only had published a
/// pending revision it could not read, putting unreviewed text live, and
/// read it back in the answer. Unless an approval showed the revision to
/// someone, the publish is refused and the entry stays as it was.
#[tokio::test]
async fn published_only_scope_never_publishes_a_revision_it_cannot_read() {
    let (_tmp, site) = seeded("scope_blind_publish").await;
    let key = blog_only(Some("published"));
    let err = content::publish(&site.store, &key, "blog-spring")
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::KEY_SCOPE_CONTENT, "{}", err.message);
    assert!(!err.message.contains("okapi"), "{}", err.message);
    let (entry, pending) = content::read(&site.store, &editor(), "blog-spring")
        .await
        .unwrap();
    assert_eq!(entry.body, "okapi spring sale");
    assert_eq!(pending.unwrap().body, "okapi pending revision");
    // An entry with no pending revision still publishes (again) for it.
    write(&site, "blog-summer", "Summer", "okapi summer").await;
    content::publish(&site.store, &editor(), "blog-summer")
        .await
        .unwrap();
    content::publish(&site.store, &key, "blog-summer")
        .await
        .unwrap();
}

#[tokio::test]
async fn published_only_scope_hides_pending_revisions_and_drafts() {
    let (_tmp, site) = seeded("scope_revision").await;
    let key = blog_only(Some("published"));
    let (entry, pending) = content::read(&site.store, &key, "blog-spring")
        .await
        .unwrap();
    assert_eq!(entry.body, "okapi spring sale");
    assert!(pending.is_none(), "a pending revision is unpublished text");
    // The revision's words are not searchable through the entry either.
    let hits = content::search(&site.store, &key, "pending revision", 10)
        .await
        .unwrap();
    assert!(hits.is_empty(), "{:?}", slugs(&hits));
    let err = content::read(&site.store, &key, "blog-notes")
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::CONTENT_NOT_FOUND);
    assert_eq!(
        slugs(&content::list(&site.store, &key, 500, 0).await.unwrap()),
        ["blog-spring"]
    );
    // Creating a draft and editing an existing (invisible) draft get the
    // same refusal, so a write does not tell which drafts exist.
    let w = |slug| DraftWrite {
        slug,
        title: "t",
        body: "b",
        new_slug: None,
    };
    let new = content::write_draft(&site.store, &key, &w("blog-new"))
        .await
        .unwrap_err();
    let old = content::write_draft(&site.store, &key, &w("blog-notes"))
        .await
        .unwrap_err();
    assert_eq!(new.code, Code::KEY_SCOPE_CONTENT);
    assert_eq!(
        new.message.replace("blog-new", "X"),
        old.message.replace("blog-notes", "X")
    );
    // Publish and delete of the invisible draft read as absent.
    let p = content::publish(&site.store, &key, "blog-notes")
        .await
        .unwrap_err();
    assert_eq!(p.code, Code::CONTENT_NOT_FOUND);
}

/// A key that sees only published entries may not rename: a rename onto a
/// slug one of its hidden drafts holds had to fail (`SLUG_TAKEN`) where one
/// onto a free slug worked, which told the key which drafts exist. Both get
/// the same refusal now, and nothing moves.
#[tokio::test]
async fn a_published_only_key_cannot_rename_so_hidden_drafts_never_show_as_taken_slugs() {
    let (_tmp, site) = seeded("scope_rename_hidden").await;
    let key = blog_only(Some("published"));
    let rename = |new_slug| DraftWrite {
        slug: "blog-spring",
        title: "Spring v3",
        body: "b",
        new_slug: Some(new_slug),
    };
    let onto_draft = content::write_draft(&site.store, &key, &rename("blog-notes"))
        .await
        .unwrap_err();
    let onto_free = content::write_draft(&site.store, &key, &rename("blog-free"))
        .await
        .unwrap_err();
    assert_eq!(onto_draft.code, Code::KEY_SCOPE_CONTENT, "{onto_draft:?}");
    assert_eq!(
        onto_draft.message.replace("blog-notes", "X"),
        onto_free.message.replace("blog-free", "X")
    );
    let (spring, _) = content::read(&site.store, &editor(), "blog-spring")
        .await
        .unwrap();
    assert_eq!(spring.slug, "blog-spring");
}

#[tokio::test]
async fn scoped_writes_cannot_reach_out_by_slug_rename_or_publish() {
    let (_tmp, site) = seeded("scope_write").await;
    let key = blog_only(None);
    let w = |slug, new_slug| DraftWrite {
        slug,
        title: "t",
        body: "b",
        new_slug,
    };
    for (slug, new) in [
        ("private-launch", None),
        ("private-x", None),
        // A rename moves an in-scope entry out of its reach.
        ("blog-notes", Some("private-notes")),
    ] {
        let e = content::write_draft(&site.store, &key, &w(slug, new))
            .await
            .unwrap_err();
        assert_eq!(e.code, Code::KEY_SCOPE_CONTENT, "{slug} -> {new:?}");
    }
    for slug in ["private-launch", "private-news"] {
        let e = content::publish(&site.store, &key, slug).await.unwrap_err();
        assert_eq!(e.code, Code::KEY_SCOPE_CONTENT, "publish {slug}");
    }
    let admin_key = scoped(
        &[Role::Admin],
        RestrictionChange {
            content: Some("blog-*".into()),
            ..Default::default()
        },
    );
    let e = content::delete(&site.store, &admin_key, "private-news")
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::KEY_SCOPE_CONTENT);
    // Nothing changed out of scope.
    let (news, _) = content::read(&site.store, &editor(), "private-news")
        .await
        .unwrap();
    assert_eq!(news.status, "published");
    // In scope, writes work.
    content::write_draft(&site.store, &key, &w("blog-fresh", None))
        .await
        .unwrap();
    content::publish(&site.store, &key, "blog-fresh")
        .await
        .unwrap();
}

#[tokio::test]
async fn draft_only_scope_cannot_publish_or_edit_live_entries() {
    let (_tmp, site) = seeded("scope_drafts").await;
    let key = blog_only(Some("draft"));
    let e = content::publish(&site.store, &key, "blog-notes")
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::KEY_SCOPE_CONTENT);
    let e = content::write_draft(
        &site.store,
        &key,
        &DraftWrite {
            slug: "blog-spring",
            title: "t",
            body: "b",
            new_slug: None,
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, Code::KEY_SCOPE_CONTENT);
    assert_eq!(
        slugs(&content::list(&site.store, &key, 500, 0).await.unwrap()),
        ["blog-notes"]
    );
}

#[tokio::test]
async fn a_content_scoped_key_gets_no_media_a_body_might_reference() {
    let (_tmp, site) = seeded("scope_media").await;
    let key = blog_only(None);
    // The scratch site's sample media: pixel.png.
    let e = media::list(&site.store, &key).await.unwrap_err();
    assert_eq!(e.code, Code::KEY_SCOPE_CONTENT);
    let e = media::read(&site.store, &key, "pixel.png")
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::KEY_SCOPE_CONTENT);
    let unscoped = scoped(&[Role::Editor], RestrictionChange::default());
    assert!(
        media::read(&site.store, &unscoped, "pixel.png")
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn restrictions_survive_a_roll_and_every_change_is_audited() {
    let (_tmp, site) = fresh_site("scope_roll").await;
    let store = &site.store;
    let r = RestrictionChange {
        tools: Some("content_read".into()),
        content: Some("blog-*".into()),
        rate: Some("5/s".into()),
        ..Default::default()
    }
    .apply(Restrictions::default())
    .unwrap();
    let minted = keys::mint_restricted(store, "test", "k", &[Role::Editor], None, &r)
        .await
        .unwrap();
    assert_eq!(minted.info.restrictions, r);
    let rolled = keys::roll(store, "test", &minted.info.id, 0).await.unwrap();
    assert_eq!(
        rolled.info.restrictions, r,
        "a roll must not shed restrictions"
    );
    let actor = gatehouse_core::access::actor::refresh(
        store,
        &Actor::ApiKey {
            key_id: rolled.info.id.clone(),
            roles: vec![],
            restrictions: Restrictions::default(),
        },
    )
    .await
    .unwrap();
    assert_eq!(actor.restrictions(), Some(&r));
    let change = RestrictionChange {
        clear: vec!["tools".into()],
        ..Default::default()
    };
    let after =
        gatehouse_core::mcp::server::reach::restrict(store, "cli", &rolled.info.id, &change)
            .await
            .unwrap();
    assert!(after.restrictions.tools.is_none() && after.restrictions.content.is_some());
    let page = gatehouse_core::access::audit_view::page(
        store,
        &gatehouse_core::access::audit_view::AuditFilter::default(),
        None,
        100,
    )
    .await;
    let entries = serde_json::to_value(page.unwrap()).unwrap();
    let text = entries.to_string();
    assert!(text.contains("key.restrict"), "{text}");
}

/// An entry at a slug no write could make (imported before imports checked
/// slugs) can be renamed away from it, and nothing else is done at it: it
/// could neither be exported and imported again nor renamed.
#[tokio::test]
async fn an_entry_at_an_invalid_slug_can_be_renamed_away_and_nothing_else() {
    let (_tmp, site) = seeded("scope_invalid_slug").await;
    sqlx::query("UPDATE content SET slug = 'BLOG-Notes' WHERE slug = 'blog-notes'")
        .execute(site.store.pool())
        .await
        .unwrap();
    let w = |slug, new_slug| DraftWrite {
        slug,
        title: "Notes",
        body: "okapi notes",
        new_slug,
    };
    let edit = content::write_draft(&site.store, &editor(), &w("BLOG-Notes", None))
        .await
        .unwrap_err();
    assert_eq!(edit.code, Code::SLUG_INVALID, "{edit:?}");
    let create = content::write_draft(&site.store, &editor(), &w("NEW-One", Some("new-one")))
        .await
        .unwrap_err();
    assert_eq!(create.code, Code::SLUG_INVALID, "{create:?}");
    let moved = content::write_draft(&site.store, &editor(), &w("BLOG-Notes", Some("blog-notes")))
        .await
        .unwrap();
    assert_eq!(moved.slug, "blog-notes");
}
