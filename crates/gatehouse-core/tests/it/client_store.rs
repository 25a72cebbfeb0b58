//! Call and connection records through the real store: a fresh SQLite site per
//! test, or a fresh PostgreSQL database when `GATEHOUSE_TEST_PG_URL` is set.

use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use gatehouse_core::connections::recorder::{self, StoreRecorder};
use gatehouse_core::mcp::client::{
    CallOptions, CallState, ConnectOptions, Connection, EffectClass,
};
use gatehouse_core::sandbox::Grace;
use gatehouse_core::store::connections;
use serde_json::json;

#[tokio::test]
async fn records_reach_the_store_with_the_observed_exit() {
    let (_site_tmp, site) = fresh_site("client_records").await;
    let (_tmp, root) = scratch_root();
    let recorder = Arc::new(StoreRecorder::new(site.store.clone()));
    let mut o = ConnectOptions::new(python("mcp_server.py", &[]), root.clone(), recorder);
    o.name = Some("fixture".into());
    o.limits.grace = Grace {
        after_stdin_close: Duration::from_millis(500),
        after_term: Duration::from_millis(500),
    };
    let conn = Connection::connect(o).await.unwrap();
    let id = conn.id().to_string();
    let run = recorder::load_run(&site.store, &id).await.unwrap().unwrap();
    assert_eq!(run.name.as_deref(), Some("fixture"));
    assert_eq!(run.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(run.end_reason, None, "still running");

    let ok = conn
        .call_tool("echo", json!({"message": "stored"}), CallOptions::default())
        .await;
    let row = recorder::load_call(&site.store, &ok.call_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        row, ok.record,
        "the row is the final record, field for field"
    );
    assert_eq!(row.state, CallState::Completed);
    assert_eq!(row.effect, Some(EffectClass::ReadOnly));

    let crash = conn
        .call_tool("exit", json!({"code": 7}), CallOptions::default())
        .await;
    let row = recorder::load_call(&site.store, &crash.call_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.state, CallState::OutcomeUnknown);
    assert_eq!(row.exit.unwrap().code, Some(7));
    assert_eq!(row.error.unwrap().code, "SERVER_EXITED");

    let record = conn.close().await;
    let run = recorder::load_run(&site.store, &id).await.unwrap().unwrap();
    assert_eq!(run, record);
    assert_eq!(run.end_reason.map(|e| e.as_str()), Some("crash"));
    assert_eq!(run.exit.unwrap().code, Some(7));
    assert_eq!(
        run.stderr_excerpt.as_deref(),
        Some("fixture: exiting with 7 on request\n")
    );
    let all = recorder::load_calls(&site.store, &id).await.unwrap();
    assert_eq!(all.len(), 2);
    assert!(scratch_entries(&root).is_empty());
}

#[tokio::test]
async fn connection_definitions_are_stored_by_name() {
    let (_tmp, site) = fresh_site("client_definitions").await;
    let row = connections::DefinitionRow {
        name: "echo".into(),
        spec: r#"{"program":"python3","args":[],"env":{}}"#.into(),
        limits: "{}".into(),
        created_at: 1,
        updated_at: 1,
    };
    assert!(
        connections::insert_definition(&site.store, &row)
            .await
            .unwrap()
    );
    assert!(
        !connections::insert_definition(&site.store, &row)
            .await
            .unwrap(),
        "name taken"
    );
    assert_eq!(
        connections::get_definition(&site.store, "echo")
            .await
            .unwrap(),
        Some(row.clone())
    );
    assert_eq!(
        connections::list_definitions(&site.store).await.unwrap(),
        vec![row]
    );
    assert!(
        connections::delete_definition(&site.store, "echo")
            .await
            .unwrap()
    );
    assert!(
        !connections::delete_definition(&site.store, "echo")
            .await
            .unwrap()
    );
    assert!(
        connections::list_definitions(&site.store)
            .await
            .unwrap()
            .is_empty()
    );
}

/// `pin_server.py` stored as `name`, announcing a tool list change while it
/// answers its first call.
async fn add_late_changer(site: &gatehouse_core::site::Site, name: &str) {
    use gatehouse_core::connections::saved::{self, SavedConnection};
    let spec = python("pin_server.py", &[]).env(
        "PIN_LIST_CHANGED",
        gatehouse_core::sandbox::EnvValue::Plain {
            value: "call".into(),
        },
    );
    let conn = SavedConnection {
        name: name.into(),
        spec,
        limits: Default::default(),
        created_at: 0,
    };
    saved::add(&site.store, "test", &conn).await.unwrap();
}

/// An open connection whose server changes its tool list without announcing
/// it is held when its list is read again (the desktop's tool list): that
/// read had shown the new tools, unapproved, each with a call form, and
/// calls went on as if nothing changed.
#[tokio::test]
async fn a_list_changed_without_an_announcement_holds_the_open_connection() {
    use gatehouse_core::connections::pin::{self, PendingReason};
    use gatehouse_core::connections::saved::{self, SavedConnection};
    let (_tmp, site) = fresh_site("held_silent").await;
    let spec = python("pin_server.py", &[]).env(
        "PIN_LIST_CHANGED",
        gatehouse_core::sandbox::EnvValue::Plain {
            value: "silent".into(),
        },
    );
    let saved_conn = SavedConnection {
        name: "quiet".into(),
        spec,
        limits: Default::default(),
        created_at: 0,
    };
    saved::add(&site.store, "test", &saved_conn).await.unwrap();
    let conn = saved::open(&site, "quiet").await.unwrap();
    assert!(!conn.tools_list_changed(), "nothing announced");
    let err = saved::list_open(&site, "quiet", &conn).await.unwrap_err();
    assert_eq!(err.code.as_str(), "CONNECTION_TOOLS_CHANGED");
    assert!(
        err.message.contains("+ added exfiltrate"),
        "{}",
        err.message
    );
    assert!(conn.tools_list_changed(), "held like an announced change");
    let status = pin::status(&site.store, "quiet").await.unwrap().unwrap();
    assert_eq!(status.pending, Some(PendingReason::ListChanged));
    let refused = saved::call_open(
        &site,
        "quiet",
        &conn,
        "echo",
        json!({"message": "hi"}),
        CallOptions::default(),
    )
    .await;
    assert_eq!(refused.state, CallState::Failed);
    assert_eq!(refused.record.request_id, None, "never dispatched");
    // Approved, the same session lists and calls with the new list.
    saved::approve_live(&site, "test", "quiet", &conn)
        .await
        .unwrap();
    let listed = saved::list_open(&site, "quiet", &conn).await.unwrap();
    assert!(listed.iter().any(|t| t.name == "exfiltrate"));
    conn.close().await;
}

/// A connection a long-lived host (the desktop app) keeps open is held
/// mid-session: the hold is recorded as soon as the server announces it, a
/// refused call says what changed, and approving resumes the same session
/// with the new list (no reconnect: a restarted server may offer another).
#[tokio::test]
async fn a_held_open_connection_resumes_in_place_once_approved() {
    use gatehouse_core::connections::pin::{self, PendingReason};
    use gatehouse_core::connections::saved;
    let (_tmp, site) = fresh_site("held_open").await;
    add_late_changer(&site, "late").await;
    let conn = saved::open(&site, "late").await.unwrap();
    let call = |message: &str| {
        saved::call_open(
            &site,
            "late",
            &conn,
            "echo",
            json!({ "message": message }),
            CallOptions::default(),
        )
    };
    let first = call("one").await;
    assert_eq!(first.state, CallState::Completed);
    assert!(conn.tools_list_changed());
    let status = pin::status(&site.store, "late").await.unwrap().unwrap();
    assert_eq!(
        status.pending,
        Some(PendingReason::ListChanged),
        "recorded at once"
    );

    let refused = call("two").await;
    assert_eq!(refused.state, CallState::Failed);
    assert_eq!(refused.record.request_id, None, "never dispatched");
    let err = refused.error.unwrap();
    assert_eq!(err.code, "CONNECTION_TOOLS_CHANGED");
    assert!(
        err.message.contains("+ added exfiltrate"),
        "{}",
        err.message
    );
    let detail = err.detail.unwrap();
    assert_eq!(detail["reason"], "list_changed");
    assert_eq!(detail["diff"]["removed"][0], "read_notes", "{detail}");

    let approval = saved::approve_live(&site, "test", "late", &conn)
        .await
        .unwrap();
    assert_eq!(approval.diff.added[0].name, "exfiltrate");
    assert!(!conn.tools_list_changed(), "the hold is lifted in place");
    let after = call("three").await;
    assert_eq!(after.state, CallState::Completed, "{:?}", after.error);
    assert_eq!(after.result.unwrap()["content"][0]["text"], "three");
    let status = pin::status(&site.store, "late").await.unwrap().unwrap();
    assert_eq!(status.pending, None);
    assert_eq!(status.tools_sha256, approval.approved_sha256.unwrap());
    conn.close().await;
}

/// Approving a list other than the one the open connection's server offers
/// now (it moved on after the change was shown) keeps the connection on hold
/// and records the new difference; approving that one resumes it.
#[tokio::test]
async fn approving_a_list_the_server_no_longer_offers_keeps_the_hold() {
    use gatehouse_core::connections::pin::{self, PendingReason};
    use gatehouse_core::connections::saved;
    let (_tmp, site) = fresh_site("held_moved_on").await;
    add_late_changer(&site, "late").await;
    let conn = saved::open(&site, "late").await.unwrap();
    // A hold shown with the list as it was at connect; then the server moves on.
    let shown = conn.tools();
    pin::hold(&site.store, "test", "late", Some(&shown))
        .await
        .unwrap();
    let first = saved::call_open(
        &site,
        "late",
        &conn,
        "echo",
        json!({"message": "one"}),
        CallOptions::default(),
    )
    .await;
    assert_eq!(first.state, CallState::Completed);
    assert!(conn.tools_list_changed());

    let err = saved::approve_live(&site, "test", "late", &conn)
        .await
        .unwrap_err();
    assert_eq!(err.code.as_str(), "CONNECTION_TOOLS_CHANGED");
    assert!(
        err.message.contains("+ added exfiltrate"),
        "{}",
        err.message
    );
    assert!(conn.tools_list_changed(), "still on hold");
    let status = pin::status(&site.store, "late").await.unwrap().unwrap();
    assert_eq!(status.pending, Some(PendingReason::ListChanged));

    saved::approve_live(&site, "test", "late", &conn)
        .await
        .unwrap();
    assert!(!conn.tools_list_changed());
    conn.close().await;
}

/// A connection that sets no CPU budget of its own runs under the site's
/// default, read from `[limits]` in `gatehouse.toml`: a server spinning past
/// it is stopped, and the error names the ceiling (before site defaults, a
/// connection without `--max-cpu` could spin until the call timed out).
#[tokio::test]
async fn a_connection_without_ceilings_runs_under_the_site_defaults() {
    use gatehouse_core::connections::saved::{self, SavedConnection};
    let (_tmp, mut site) = fresh_site("client_site_defaults").await;
    let file = site.dir.join(gatehouse_core::site::SITE_FILE);
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("\n[limits]\nmax_cpu_seconds = 1\n");
    std::fs::write(&file, text).unwrap();
    site.file = gatehouse_core::site::read_site_file(&site.dir).unwrap();
    let conn = SavedConnection {
        name: "spinner".into(),
        spec: python("mcp_server.py", &[]),
        limits: Default::default(),
        created_at: 0,
    };
    saved::add(&site.store, "test", &conn).await.unwrap();
    let ceilings = saved::Ceilings::of(&site, &conn).unwrap();
    assert_eq!(ceilings.max_cpu_ms, 1000);
    assert!(ceilings.max_cpu_default);
    assert_eq!(ceilings.max_rss_bytes, 1 << 30, "the built-in 1 GiB");
    // Stopped by the budget (its own code and ceiling), not the call timeout:
    // no wall-clock bound, which a loaded machine would break.
    let e = saved::call(&site, "spinner", "spin", json!({"seconds": 30}))
        .await
        .expect_err("spinning past the site's CPU budget");
    assert_eq!(e.code.as_str(), "RESOURCE_LIMIT", "{e:?}");
    assert!(e.message.contains("max_cpu"), "{e:?}");
    // A connection's own budget wins, higher or lower.
    let own = SavedConnection {
        limits: saved::SavedLimits {
            max_cpu_ms: Some(90_000),
            ..Default::default()
        },
        ..conn
    };
    let ceilings = saved::Ceilings::of(&site, &own).unwrap();
    assert_eq!(
        (ceilings.max_cpu_ms, ceilings.max_cpu_default),
        (90_000, false)
    );
}
