//! Gatehouse's own MCP client (gatehouse-core's `client`) drives the real
//! `gatehouse mcp` binary through the sandbox, against a scratch site: it
//! negotiates the modern revision, lists the viewer's tools, reads an entry,
//! captures the server's tracing on stderr, and leaves no process and no
//! scratch directory behind. (Third-party servers from npm and PyPI:
//! crates/gatehouse-core/tests/it/client_interop.rs.)

use std::collections::BTreeSet;
use std::time::Duration;

use crate::util::{BIN, TestSite};
use gatehouse_core::mcp::client::{
    CallOptions, CallState, ConnectOptions, Connection, EffectClass, Era, MemoryRecorder, StreamEnd,
};
use gatehouse_core::sandbox::stderr::StderrBudget;
use gatehouse_core::sandbox::{self, ChildSpec, EnvValue, Grace, ProcessGroup, ScratchRoot};
use serde_json::json;

#[tokio::test]
async fn core_client_drives_gatehouse_mcp() {
    let site = TestSite::new("client_interop");
    sandbox::become_subreaper().expect("subreaper");
    let tmp = tempfile::tempdir().unwrap();
    let (root, _) = ScratchRoot::open(tmp.path().join("scratch")).unwrap();
    let recorder = MemoryRecorder::new();

    // Only what the server needs, listed: info-level tracing so stderr has
    // something to count. The site is an argument, no key: the actor is the
    // synthetic viewer of a scratch site.
    let spec = ChildSpec::new(BIN)
        .arg("--site")
        .arg(site.path().to_string_lossy())
        .arg("mcp")
        .arg("--role")
        .arg("viewer")
        .env(
            "GATEHOUSE_LOG",
            EnvValue::Plain {
                value: "info".into(),
            },
        );
    let mut o = ConnectOptions::new(spec, root.clone(), recorder.clone());
    // The server serves the site: the admin lists it in the profile.
    o.profile.read_write = vec![site.path().to_path_buf()];
    // On a PostgreSQL site it also needs TCP to the database (denied by default).
    o.profile.network = gatehouse_test_pg::base_url().is_some();
    o.limits.grace = Grace {
        after_stdin_close: Duration::from_secs(5),
        after_term: Duration::from_secs(2),
    };
    o.stderr_pool = StderrBudget::new(4 << 20);
    let conn = Connection::connect(o).await.expect("connects");
    let pgid = conn.pid();

    let server = conn.server();
    assert_eq!(server.era, Era::Modern);
    assert_eq!(server.protocol_version, "2026-07-28");
    assert_eq!(server.name.as_deref(), Some("gatehouse"));

    let tools = conn.list_tools().await.expect("tools/list");
    let names: BTreeSet<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        BTreeSet::from([
            "content_list",
            "content_read",
            "content_search",
            "http_fetch",
            "media_list",
            "media_read",
        ])
    );
    let read = tools.iter().find(|t| t.name == "content_read").unwrap();
    assert_eq!(read.effect, EffectClass::ReadOnly);

    let out = conn
        .call_tool(
            "content_read",
            json!({"slug": "welcome"}),
            CallOptions::default(),
        )
        .await;
    assert_eq!(out.state, CallState::Completed, "{:?}", out.error);
    let entry = &out.result.as_ref().unwrap()["structuredContent"];
    assert_eq!(entry["slug"], "welcome");
    assert_eq!(
        entry["title"],
        json!(site.sql("SELECT title FROM content WHERE slug = 'welcome'"))
    );
    assert_eq!(
        entry["body"],
        json!(site.sql("SELECT body FROM content WHERE slug = 'welcome'"))
    );
    assert_eq!(out.record.effect, Some(EffectClass::ReadOnly));
    assert_eq!(
        recorder.states(&out.call_id),
        vec![
            CallState::Received,
            CallState::Validated,
            CallState::Dispatched,
            CallState::Completed
        ]
    );

    let record = conn.close().await;
    assert_eq!(ProcessGroup { pgid }.members(), Vec::<i32>::new());
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    assert_eq!(record.era.map(|e| e.as_str()), Some("modern"));
    assert_eq!(record.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(record.end_reason.map(|e| e.as_str()), Some("closed"));
    assert_eq!(record.stdout_end, StreamEnd::Eof);
    assert_eq!(record.stderr_end, StreamEnd::Eof);
    assert_eq!(record.protocol_violations, 0);
    // It exits by itself when stdin closes.
    assert_eq!(record.exit.expect("exit observed").code, Some(0));
    // All of its tracing was kept (well under the budget) and counted exactly.
    let text = record.stderr_excerpt.clone().unwrap_or_default();
    assert!(!record.stderr.truncated);
    assert_eq!(record.stderr.bytes_seen, record.stderr.bytes_retained);
    assert_eq!(record.stderr.bytes_seen, text.len() as u64, "{text}");
    assert!(text.contains("MCP server ready on stdio"), "{text}");
    assert!(text.contains("MCP server stopped"), "{text}");
    assert!(!text.contains('\u{1b}'), "no ANSI escapes: {text}");
}
