//! What the desktop admin screens rely on, through the real store (SQLite, or
//! PostgreSQL when `GATEHOUSE_TEST_PG_URL` is set): disabled users, key use
//! counts, paged and filtered audit reads, and the audit export.

use gatehouse_core::access::actor::{self, ActorFlags};
use gatehouse_core::access::audit::AuditAction;
use gatehouse_core::access::audit::{self, AuditEntry, entry_hash};
use gatehouse_core::access::audit_view::{self, AuditFilter};
use gatehouse_core::access::key_overview::{self, ExpiryWarning, KeyFilter};
use gatehouse_core::access::keys;
use gatehouse_core::access::permissions::Role;
use gatehouse_core::access::users;
use gatehouse_core::error::codes;
use gatehouse_core::site::{portable, replay};

use crate::common::fresh_site;

fn as_email(email: &str) -> ActorFlags {
    ActorFlags {
        email: Some(email.to_string()),
        ..ActorFlags::default()
    }
}

/// Hostile first: before users could be disabled, nothing stopped a user an
/// admin wanted locked out. Now a disabled user resolves to no actor, in a
/// fresh resolve and in a running server's refresh, until enabled again.
#[tokio::test]
async fn a_disabled_user_no_longer_resolves_as_an_actor() {
    let (_tmp, site) = fresh_site("admin_disable").await;
    let email = "mallory@example.com";
    users::create(&site.store, "test", email, &[Role::Editor])
        .await
        .unwrap();
    let before = actor::resolve(&site.store, site.is_scratch(), &as_email(email))
        .await
        .unwrap();

    let user = users::disable(&site.store, "test", email).await.unwrap();
    assert!(user.is_disabled());
    let err = actor::resolve(&site.store, site.is_scratch(), &as_email(email))
        .await
        .unwrap_err();
    assert_eq!(err.code, codes::USER_DISABLED);
    assert!(err.hint.unwrap().contains("enable"));
    let err = actor::refresh(&site.store, &before).await.unwrap_err();
    assert_eq!(
        err.code,
        codes::USER_DISABLED,
        "a running server drops it too"
    );
    let again = users::disable(&site.store, "test", email)
        .await
        .unwrap_err();
    assert!(
        again.message.contains("already disabled"),
        "{}",
        again.message
    );

    users::enable(&site.store, "test", email).await.unwrap();
    actor::resolve(&site.store, site.is_scratch(), &as_email(email))
        .await
        .unwrap();
    let actions: Vec<String> = audit::list(&site.store, 3)
        .await
        .unwrap()
        .into_iter()
        .map(|r| format!("{} {}", r.action, r.subject))
        .collect();
    assert_eq!(
        actions[1..],
        [
            format!("user.disable {email}"),
            format!("user.enable {email}")
        ]
    );
    site.store.close().await;
}

/// An export keeps the disabled state, and an export edited to re-enable a
/// user is refused on import (the audit log says otherwise).
#[tokio::test]
async fn an_export_cannot_quietly_re_enable_a_user() {
    let (_tmp, site) = fresh_site("admin_disable_export").await;
    let email = "mallory@example.com";
    users::create(&site.store, "test", email, &[Role::Viewer])
        .await
        .unwrap();
    users::disable(&site.store, "test", email).await.unwrap();
    let mut dump = portable::export(&site).await.unwrap();
    replay::check(&dump).unwrap();
    let row = dump.users.iter_mut().find(|u| u.email == email).unwrap();
    assert!(row.disabled_at.is_some(), "the export keeps the state");
    row.disabled_at = None;
    let err = replay::check(&dump).unwrap_err();
    assert_eq!(err.code, codes::IMPORT_TAMPERED);
    assert!(
        err.message.contains("enabled in the export but disabled"),
        "{}",
        err.message
    );
    site.store.close().await;
}

/// Each call a key makes is audited as `key:<id>`; the Keys screen counts
/// those, and warns about a key that expires within 7 days.
#[tokio::test]
async fn key_uses_are_counted_from_its_audited_calls() {
    let (_tmp, site) = fresh_site("admin_key_uses").await;
    let store = &site.store;
    let day = 24 * 60 * 60 * 1000;
    let now = gatehouse_core::time::now_ms();
    let busy = keys::mint(store, "test", "busy", &[Role::Viewer], None)
        .await
        .unwrap();
    let soon = keys::mint(store, "test", "soon", &[Role::Viewer], Some(now + 2 * day))
        .await
        .unwrap();
    for tool in ["content_list", "content_get", "media_list"] {
        audit::record(
            store,
            AuditEntry {
                actor: &format!("key:{}", busy.info.id),
                action: AuditAction::McpToolCall,
                subject: tool,
                detail: serde_json::json!({}),
            },
        )
        .await
        .unwrap();
    }
    let all = key_overview::list(store, KeyFilter::All).await.unwrap();
    let find = |id: &str| all.iter().find(|k| k.info.id == id).unwrap();
    assert_eq!(find(&busy.info.id).uses, 3);
    assert!(find(&busy.info.id).info.last_used_at.is_some());
    assert_eq!(find(&soon.info.id).uses, 0, "minting is not a use");
    assert_eq!(
        find(&soon.info.id).warning,
        Some(ExpiryWarning::ExpiresSoon)
    );
    let soon_only = key_overview::list(store, KeyFilter::ExpiresSoon)
        .await
        .unwrap();
    assert_eq!(
        soon_only
            .iter()
            .map(|k| k.info.id.as_str())
            .collect::<Vec<_>>(),
        [soon.info.id.as_str()]
    );
    keys::revoke(store, "test", &busy.info.id).await.unwrap();
    let revoked = key_overview::list(store, KeyFilter::Revoked).await.unwrap();
    assert_eq!(revoked.len(), 1);
    assert_eq!(revoked[0].uses, 3, "history stays after a revoke");
    site.store.close().await;
}

/// Pages are newest first, never overlap or skip, and filters by actor,
/// action and time select on the database side.
#[tokio::test]
async fn audit_pages_are_newest_first_and_filtered() {
    let (_tmp, site) = fresh_site("admin_audit_pages").await;
    let store = &site.store;
    for i in 0..25 {
        let actor = if i % 5 == 0 {
            "user:ada@example.com"
        } else {
            "key:abc"
        };
        audit::record(
            store,
            AuditEntry {
                actor,
                action: if i % 2 == 0 {
                    AuditAction::McpToolCall
                } else {
                    AuditAction::McpClientCall
                },
                subject: &format!("s{i}"),
                detail: serde_json::json!({"i": i}),
            },
        )
        .await
        .unwrap();
    }
    let everything = AuditFilter::default();
    let first = audit_view::page(store, &everything, None, 10)
        .await
        .unwrap();
    let total = first.total;
    assert!(total >= 25, "{total}");
    let mut seen = Vec::new();
    let mut page = first;
    loop {
        assert!(
            page.entries.windows(2).all(|w| w[0].seq > w[1].seq),
            "newest first"
        );
        assert_eq!(page.total, total, "the total does not depend on the page");
        seen.extend(page.entries.iter().map(|e| e.seq));
        let Some(cursor) = page.next_before else {
            break;
        };
        page = audit_view::page(store, &everything, Some(cursor), 10)
            .await
            .unwrap();
    }
    assert_eq!(seen.len() as i64, total);
    assert_eq!(
        seen,
        (1..=total).rev().collect::<Vec<_>>(),
        "no gap, no repeat"
    );

    let keys_only = AuditFilter {
        actor: "key:".into(),
        action: "mcp.tool_call".into(),
        ..AuditFilter::default()
    };
    let page = audit_view::page(store, &keys_only, None, 200)
        .await
        .unwrap();
    assert_eq!(page.total, 10, "i even and not a multiple of 5: 10 of 25");
    assert!(
        page.entries
            .iter()
            .all(|e| e.actor == "key:abc" && e.action == "mcp.tool_call")
    );
    assert_eq!(page.entries[0].detail["i"], 24, "detail arrives parsed");

    let later = AuditFilter {
        since: "2999-01-01T00:00:00Z".into(),
        ..AuditFilter::default()
    };
    let none = audit_view::page(store, &later, None, 10).await.unwrap();
    assert_eq!(
        (none.total, none.entries.len(), none.next_before),
        (0, 0, None)
    );
    let err = audit_view::page(store, &everything, None, 0)
        .await
        .unwrap_err();
    assert_eq!(err.code, codes::INPUT_INVALID);
    site.store.close().await;
}

/// The export holds the entries in chain order with everything their hashes
/// cover, so the chain can be recomputed from the file alone.
#[tokio::test]
async fn the_audit_export_recomputes_to_the_same_chain() {
    let (_tmp, site) = fresh_site("admin_audit_export").await;
    users::create(&site.store, "test", "ada@example.com", &[Role::Author])
        .await
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let done = audit_view::export_to(&site.store, &AuditFilter::default(), out.path())
        .await
        .unwrap();
    let text = std::fs::read_to_string(&done.path).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    let entries = file["entries"].as_array().unwrap();
    assert_eq!(entries.len(), done.entries);
    let mut prev = audit::GENESIS.to_string();
    for e in entries {
        let s = |k: &str| e[k].as_str().unwrap().to_string();
        assert_eq!(s("prev_hash"), prev);
        let hash = entry_hash(
            e["seq"].as_i64().unwrap(),
            e["ts"].as_i64().unwrap(),
            &s("actor"),
            &s("action"),
            &s("subject"),
            &s("detail"),
            &prev,
        );
        assert_eq!(hash, s("hash"), "entry {}", e["seq"]);
        prev = hash;
    }
    assert_eq!(entries.last().unwrap()["action"], "user.create");
    site.store.close().await;
}

/// A request with a key whose check another request started before the key
/// was revoked shares that check's argon2, not its answer: the row it read is
/// read again (a request sent after `keys revoke` returned had been served
/// on the first check's answer).
#[tokio::test]
async fn a_key_revoked_while_its_first_check_runs_is_refused_to_requests_after_the_revoke() {
    let (_tmp, site) = fresh_site("admin_verify_flight").await;
    let store = site.store.clone();
    let minted = keys::mint(&store, "test", "flight", &[Role::Viewer], None)
        .await
        .unwrap();
    let cache = std::sync::Arc::new(keys::VerifyCache::new(
        10,
        std::time::Duration::from_secs(60),
    ));
    let free = || Ok::<(), ()>(());
    let first = {
        let (cache, store, raw) = (cache.clone(), store.clone(), minted.key.clone());
        tokio::spawn(async move { cache.verify(&store, &raw, free).await.unwrap() })
    };
    // The first check is under way (argon2 takes far longer than this).
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    keys::revoke(&store, "test", &minted.info.id).await.unwrap();
    let after = cache.verify(&store, &minted.key, free).await.unwrap();
    assert_eq!(
        after.unwrap_err().code,
        gatehouse_core::error::Code::ACTOR_API_KEY_INVALID
    );
    // The first request, which began before the revoke, may have been served.
    let _ = first.await.unwrap();
    site.store.close().await;
}
