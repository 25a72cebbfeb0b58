//! Call and connection records through the real store: a fresh SQLite site per
//! test, or a fresh PostgreSQL database when `GATEHOUSE_TEST_PG_URL` is set.

use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use gatehouse_core::mcp::client::recorder;
use gatehouse_core::mcp::client::{
    CallOptions, CallState, ConnectOptions, Connection, EffectClass, StoreRecorder,
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
    assert_eq!(run.end_reason.as_deref(), Some("crash"));
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
