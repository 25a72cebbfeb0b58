//! The Keys screen's rows on a real database (SQLite, or PostgreSQL with
//! `GATEHOUSE_TEST_PG_URL`): a key minted from the form carries its
//! restrictions, its reach in the words `whoami` uses, and calls recorded
//! as the server records them counted by tool, refusal and day.

use gatehouse_core::access::key_overview::KeyFilter;
use gatehouse_core::access::key_usage::DAY_MS;
use gatehouse_core::access::permissions::Role;
use gatehouse_core::access::restrictions::StatusScope;
use gatehouse_core::access::usage_days;
use gatehouse_core::error::Code;
use gatehouse_core::mcp::server::call_record::{CallAudit, Late};
use gatehouse_core::mcp::server::key_form::{self, RestrictionForm};
use gatehouse_core::mcp::server::key_report;
use gatehouse_core::mcp::server::reach;
use gatehouse_core::time::now_ms;

use crate::common::fresh_site;

#[tokio::test]
async fn key_rows_carry_reach_form_and_calls_by_tool_and_day() {
    let (_tmp, site) = fresh_site("key_report").await;
    let form = RestrictionForm {
        tools: Some(vec!["content_read".into(), "content_list".into()]),
        read_only: true,
        content: "blog-*".into(),
        content_status: StatusScope::Draft,
        rate: "60/min".into(),
        from: String::new(),
    };
    let minted = key_form::mint(
        &site.store,
        "desktop",
        "narrow",
        &[Role::Editor],
        None,
        &form,
    )
    .await
    .unwrap();
    let id = minted.info.id.clone();
    key_form::mint(
        &site.store,
        "desktop",
        "idle",
        &[Role::Viewer],
        None,
        &RestrictionForm::default(),
    )
    .await
    .unwrap();

    let label = format!("key:{id}");
    let args = serde_json::json!({});
    for (tool, code) in [
        ("content_read", None),
        ("content_read", Some(Code::CONTENT_NOT_FOUND)),
        ("content_list", None),
        ("content_search", Some(Code::KEY_TOOL_NOT_ALLOWED)),
    ] {
        CallAudit::new(&site, &label, tool, &args, Late::default())
            .from("stdio e2e".into(), None)
            .finish(code)
            .await
            .unwrap();
    }

    let rows = key_report::list(&site.store, KeyFilter::All).await.unwrap();
    assert_eq!(rows.len(), 2);
    let row = rows.iter().find(|r| r.key.info.id == id).unwrap();
    // The form comes back as given, tools in manifest order.
    let mut expected = form.clone();
    expected.tools = Some(vec!["content_list".into(), "content_read".into()]);
    assert_eq!(row.form, expected);
    assert_eq!(row.reach, reach::describe_key(&row.key.info));
    assert!(row.reach.restricted);
    assert!(
        row.reach
            .words
            .iter()
            .any(|w| w == "content: only drafts with slugs matching blog-*"),
        "{:?}",
        row.reach.words
    );
    let u = &row.usage;
    assert_eq!(
        (u.calls_day, u.calls_week, u.refused_day, u.refused_week),
        (4, 4, 1, 1)
    );
    assert_eq!(u.last_from.as_deref(), Some("stdio e2e"));
    assert_eq!(u.by_tool[0].tool, "content_read");
    assert_eq!(u.by_tool[0].week, 2);
    assert_eq!(row.days.len(), usage_days::DAYS);
    let calls: Vec<i64> = row.days.iter().map(|d| d.calls).collect();
    assert_eq!(calls, [0, 0, 0, 0, 0, 0, 4]);
    assert_eq!(row.days[6].refused, 1);
    let idle = rows.iter().find(|r| r.key.info.id != id).unwrap();
    assert!(!idle.reach.restricted);
    assert_eq!(idle.usage.calls_week, 0);
    assert!(idle.days.iter().all(|d| d.calls == 0) && idle.days.len() == 7);

    // Three days on, the same calls sit in the fourth bucket of the week.
    let later = usage_days::by_key(&site.store, now_ms() + 3 * DAY_MS)
        .await
        .unwrap();
    let calls: Vec<i64> = later[&id].iter().map(|d| d.calls).collect();
    assert_eq!(calls, [0, 0, 0, 4, 0, 0, 0]);

    // Editing the form replaces the restrictions; a bad field changes nothing.
    let bad = RestrictionForm {
        rate: "1/week".into(),
        ..RestrictionForm::default()
    };
    let e = key_form::restrict(&site.store, "desktop", &id, &bad)
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::KEY_RESTRICTION_INVALID);
    let wider = RestrictionForm {
        content: "blog-*, news-*".into(),
        ..RestrictionForm::default()
    };
    let info = key_form::restrict(&site.store, "desktop", &id, &wider)
        .await
        .unwrap();
    assert_eq!(RestrictionForm::of(&info.restrictions), wider);
    site.store.close().await;
}
