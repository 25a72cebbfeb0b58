//! The MCP client against real fixture servers (tests/fixtures/mcp_server.py):
//! negotiation in both eras, framing, concurrency, timeouts, cancellation,
//! crashes, floods and resource ceilings. Every test also checks the process
//! group and the scratch directory are gone afterwards.

use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use gatehouse_core::mcp::client::{
    CallOptions, CallState, CancellationToken, ConnectOptions, Connection, EffectClass, Era,
    MemoryRecorder,
};
use gatehouse_core::sandbox::stderr::StderrBudget;
use gatehouse_core::sandbox::{ChildSpec, Grace, ScratchRoot};
use serde_json::{Value, json};

struct Fixture {
    _tmp: tempfile::TempDir,
    root: ScratchRoot,
    recorder: Arc<MemoryRecorder>,
}

impl Fixture {
    fn new() -> Self {
        let (tmp, root) = scratch_root();
        Self {
            _tmp: tmp,
            root,
            recorder: MemoryRecorder::new(),
        }
    }

    fn options(&self, spec: ChildSpec) -> ConnectOptions {
        let mut o = ConnectOptions::new(spec, self.root.clone(), self.recorder.clone());
        o.limits.grace = Grace {
            after_stdin_close: Duration::from_millis(500),
            after_term: Duration::from_millis(500),
        };
        o.stderr_pool = StderrBudget::new(4 << 20);
        o
    }

    async fn connect(&self, args: &[&str]) -> Connection {
        Connection::connect(self.options(python("mcp_server.py", args)))
            .await
            .expect("connects")
    }

    /// The record of the connection that ended last.
    fn last_record(&self) -> gatehouse_core::mcp::client::ConnectionRun {
        let records = self.recorder.connections.lock().unwrap();
        records.last().cloned().expect("a connection record")
    }

    /// Closes and asserts nothing is left: no group member, no scratch dir.
    async fn close(&self, conn: Connection) -> gatehouse_core::mcp::client::ConnectionRun {
        let pgid = conn.pid();
        let record = conn.close().await;
        assert_eq!(group_members(pgid), Vec::<i32>::new(), "process group gone");
        assert!(scratch_entries(&self.root).is_empty(), "scratch dir gone");
        record
    }
}

fn text_of(result: &Option<Value>) -> String {
    result.as_ref().unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

fn opts() -> CallOptions {
    CallOptions::default()
}

#[tokio::test]
async fn modern_server_negotiates_2026_07_28_and_answers() {
    let f = Fixture::new();
    let conn = f.connect(&["--era", "modern"]).await;
    let server = conn.server();
    assert_eq!(server.era, Era::Modern);
    assert_eq!(server.protocol_version, "2026-07-28");
    assert_eq!(server.name.as_deref(), Some("gatehouse-fixture"));
    assert_eq!(server.version.as_deref(), Some("1.2.3"));
    let out = conn
        .call_tool("echo", json!({"message": "hello"}), opts())
        .await;
    assert_eq!(out.state, CallState::Completed, "{:?}", out.error);
    assert_eq!(text_of(&out.result), "hello");
    assert_eq!(out.result.as_ref().unwrap()["resultType"], "complete");
    assert_eq!(
        f.recorder.states(&out.call_id),
        vec![
            CallState::Received,
            CallState::Validated,
            CallState::Dispatched,
            CallState::Completed
        ]
    );
    assert_eq!(out.record.effect, Some(EffectClass::ReadOnly));
    assert_eq!(out.record.exit, None, "no exit observed while running");
    let record = f.close(conn).await;
    assert_eq!(record.era.map(|e| e.as_str()), Some("modern"));
    assert_eq!(record.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(record.end_reason.map(|e| e.as_str()), Some("closed"));
    // It exits by itself when stdin closes.
    assert_eq!(record.exit.unwrap().code, Some(0));
}

#[tokio::test]
async fn legacy_server_falls_back_to_initialize() {
    let f = Fixture::new();
    let conn = f.connect(&["--era", "legacy"]).await;
    assert_eq!(conn.server().era, Era::Legacy);
    assert_eq!(conn.server().protocol_version, "2025-11-25");
    let out = conn
        .call_tool("echo", json!({"message": "old"}), opts())
        .await;
    assert_eq!(text_of(&out.result), "old");
    let record = f.close(conn).await;
    assert_eq!(record.era.map(|e| e.as_str()), Some("legacy"));
}

#[tokio::test]
async fn silent_legacy_server_falls_back_after_the_probe_timeout() {
    let f = Fixture::new();
    let mut o = f.options(python("mcp_server.py", &["--era", "legacy", "--silent"]));
    o.limits.probe_timeout = Duration::from_millis(300);
    let conn = Connection::connect(o).await.unwrap();
    assert_eq!(conn.server().era, Era::Legacy);
    f.close(conn).await;
}

/// A modern server slower to start than the probe timeout (the Python SDK
/// importing on a loaded machine) answers `server/discover` late and then
/// refuses `initialize`: it is probed again and connected as modern.
#[tokio::test]
async fn modern_server_answering_the_probe_late_is_still_connected() {
    let f = Fixture::new();
    let mut o = f.options(python(
        "mcp_server.py",
        &["--era", "modern", "--discover-delay", "1"],
    ));
    o.limits.probe_timeout = Duration::from_millis(300);
    let conn = Connection::connect(o).await.unwrap();
    assert_eq!(conn.server().era, Era::Modern);
    assert!(!conn.tools().is_empty());
    f.close(conn).await;
}

#[tokio::test]
async fn dual_era_server_stays_modern() {
    let f = Fixture::new();
    let conn = f.connect(&["--era", "dual"]).await;
    assert_eq!(conn.server().era, Era::Modern);
    f.close(conn).await;
}

#[tokio::test]
async fn modern_server_without_our_version_is_refused_not_initialized() {
    let f = Fixture::new();
    let err = Connection::connect(f.options(python(
        "mcp_server.py",
        &["--era", "modern", "--versions", "2099-01-01"],
    )))
    .await
    .unwrap_err();
    assert_eq!(err.code, "PROTOCOL_UNSUPPORTED");
    assert!(err.message.contains("2099-01-01"), "{}", err.message);
    assert!(scratch_entries(&f.root).is_empty());
}

#[tokio::test]
async fn concurrent_calls_get_their_own_answers() {
    let f = Fixture::new();
    let conn = f.connect(&[]).await;
    let mut tasks = Vec::new();
    for i in 0..64 {
        let conn = conn.clone();
        tasks.push(tokio::spawn(async move {
            let out = conn
                .call_tool("echo", json!({"message": format!("m{i}")}), opts())
                .await;
            (i, out)
        }));
    }
    for t in tasks {
        let (i, out) = t.await.unwrap();
        assert_eq!(out.state, CallState::Completed);
        assert_eq!(text_of(&out.result), format!("m{i}"));
    }
    f.close(conn).await;
}

#[tokio::test]
async fn server_ping_is_answered_and_other_requests_refused() {
    let f = Fixture::new();
    let conn = f.connect(&["--era", "legacy"]).await;
    let out = conn
        .call_tool("ask_client", json!({"method": "ping"}), opts())
        .await;
    let answer: Value = serde_json::from_str(&text_of(&out.result)).unwrap();
    assert_eq!(answer["result"], json!({}));
    let out = conn
        .call_tool(
            "ask_client",
            json!({"method": "sampling/createMessage"}),
            opts(),
        )
        .await;
    let answer: Value = serde_json::from_str(&text_of(&out.result)).unwrap();
    assert_eq!(answer["error"]["code"], -32601);
    f.close(conn).await;
}

#[tokio::test]
async fn non_json_stdout_lines_are_counted_and_survived() {
    let f = Fixture::new();
    let conn = f.connect(&[]).await;
    assert_eq!(conn.protocol_violations(), 0);
    let out = conn.call_tool("noise", json!({}), opts()).await;
    assert_eq!(out.state, CallState::Completed);
    let out = conn.call_tool("noise", json!({}), opts()).await;
    assert_eq!(out.state, CallState::Completed);
    assert_eq!(conn.protocol_violations(), 2);
    let record = f.close(conn).await;
    assert_eq!(record.protocol_violations, 2);
}

#[tokio::test]
async fn endless_stdout_line_is_an_error_not_an_allocation() {
    let f = Fixture::new();
    let mut o = f.options(python("mcp_server.py", &[]));
    o.limits.max_frame = 1 << 20;
    let conn = Connection::connect(o).await.unwrap();
    let pgid = conn.pid();
    let out = conn.call_tool("endless", json!({}), opts()).await;
    // Read-only, so a lost answer is a plain failure.
    assert_eq!(out.state, CallState::Failed);
    assert_eq!(out.error.as_ref().unwrap().code, "PROTOCOL_VIOLATION");
    let record = conn.close().await;
    assert_eq!(record.end_reason.map(|e| e.as_str()), Some("protocol"));
    assert_eq!(
        record.stdout_end,
        gatehouse_core::mcp::client::StreamEnd::FrameTooLarge
    );
    // The exit actually observed: the group kill (SIGKILL) usually lands first,
    // but the child may already have died of the pipe the client stopped reading.
    let exit = record.exit.expect("an exit was observed");
    assert!(
        exit.signal == Some(9) || exit.code.is_some_and(|c| c != 0),
        "{exit:?}"
    );
    assert!(group_members(pgid).is_empty());
    assert!(scratch_entries(&f.root).is_empty());
}

#[tokio::test]
async fn a_deadline_kills_the_group_and_fails_every_pending_call() {
    let f = Fixture::new();
    let conn = f.connect(&[]).await;
    let pgid = conn.pid();
    let writer = tokio::spawn({
        let conn = conn.clone();
        async move {
            conn.call_tool("write", json!({"key": "k", "sleep": 30}), opts())
                .await
        }
    });
    let reader = tokio::spawn({
        let conn = conn.clone();
        async move { conn.call_tool("slow", json!({"seconds": 30}), opts()).await }
    });
    // Both are on the wire before the short call starts.
    wait_until(|| {
        f.recorder
            .calls
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.state == CallState::Dispatched)
            .count()
            == 2
    })
    .await;
    let hung = conn
        .call_tool(
            "hang",
            json!({}),
            CallOptions {
                timeout: Some(Duration::from_millis(300)),
                ..opts()
            },
        )
        .await;
    assert_eq!(hung.state, CallState::TimedOut);
    assert_eq!(hung.error.as_ref().unwrap().code, "CALL_TIMEOUT");
    let writer = writer.await.unwrap();
    assert_eq!(
        writer.state,
        CallState::OutcomeUnknown,
        "a may-write call whose answer was lost"
    );
    assert_eq!(writer.record.effect, Some(EffectClass::MayWrite));
    assert_eq!(writer.error.as_ref().unwrap().code, "CALL_TIMEOUT");
    let reader = reader.await.unwrap();
    assert_eq!(reader.state, CallState::Failed);
    assert_eq!(reader.error.as_ref().unwrap().code, "CALL_TIMEOUT");
    let record = conn.close().await;
    assert_eq!(record.end_reason.map(|e| e.as_str()), Some("timeout"));
    assert_eq!(record.exit.unwrap().signal, Some(9), "observed SIGKILL");
    assert!(group_members(pgid).is_empty());
    assert!(scratch_entries(&f.root).is_empty());
    // The final record of the lost write carries the exit actually observed.
    let last = f.recorder.last(&writer.call_id).unwrap();
    assert_eq!(last.state, CallState::OutcomeUnknown);
}

/// The real server's progress notifications reach the call's inactivity clock,
/// and its silence trips it. Each part has one limit in play (or margins of
/// 10x and more), so no window depends on the machine's speed; which limit
/// wins when both could is `call::Deadlines`' unit test.
#[tokio::test]
async fn a_real_servers_progress_keeps_a_call_alive_and_its_silence_ends_it() {
    let f = Fixture::new();
    let conn = f.connect(&[]).await;
    let out = conn
        .call_tool(
            "slow",
            json!({"seconds": 1.5, "every": 0.05}),
            CallOptions {
                timeout: Some(Duration::from_secs(60)),
                inactivity: Some(Duration::from_millis(1_000)),
                ..opts()
            },
        )
        .await;
    assert_eq!(
        out.state,
        CallState::Completed,
        "progress kept it alive past its inactivity limit: {:?}",
        out.error
    );
    f.close(conn).await;

    let conn = f.connect(&[]).await;
    let out = conn
        .call_tool(
            "slow",
            json!({"seconds": 30, "every": 0.05}),
            CallOptions {
                timeout: Some(Duration::from_millis(800)),
                inactivity: None,
                ..opts()
            },
        )
        .await;
    assert_eq!(out.state, CallState::TimedOut);
    assert!(
        out.error
            .as_ref()
            .unwrap()
            .message
            .contains("total deadline"),
        "{:?}",
        out.error
    );
    f.close(conn).await;

    let conn = f.connect(&[]).await;
    let out = conn
        .call_tool(
            "slow",
            json!({"seconds": 30}),
            CallOptions {
                timeout: Some(Duration::from_secs(60)),
                inactivity: Some(Duration::from_millis(300)),
                ..opts()
            },
        )
        .await;
    assert_eq!(out.state, CallState::TimedOut);
    assert!(out.error.as_ref().unwrap().message.contains("inactivity"));
    f.close(conn).await;
}

#[tokio::test]
async fn cancellation_before_and_after_dispatch() {
    let f = Fixture::new();
    let conn = f.connect(&[]).await;
    let token = CancellationToken::new();
    token.cancel();
    let out = conn
        .call_tool(
            "write",
            json!({"key": "a"}),
            CallOptions {
                cancel: Some(token),
                ..opts()
            },
        )
        .await;
    assert_eq!(out.state, CallState::CancelledBeforeDispatch);
    assert_eq!(out.record.request_id, None, "never sent");

    let token = CancellationToken::new();
    let call = tokio::spawn({
        let conn = conn.clone();
        let token = token.clone();
        async move {
            conn.call_tool(
                "write",
                json!({"key": "b", "sleep": 2}),
                CallOptions {
                    cancel: Some(token),
                    ..opts()
                },
            )
            .await
        }
    });
    wait_until(|| {
        f.recorder
            .calls
            .lock()
            .unwrap()
            .iter()
            .any(|r| r.state == CallState::Dispatched)
    })
    .await;
    token.cancel();
    let out = call.await.unwrap();
    assert_eq!(out.state, CallState::CancelledAfterDispatch);
    assert_eq!(out.error.as_ref().unwrap().code, "CALL_CANCELLED");
    // The connection is still good.
    let out = conn
        .call_tool("echo", json!({"message": "still here"}), opts())
        .await;
    assert_eq!(text_of(&out.result), "still here");
    f.close(conn).await;
}

#[tokio::test]
async fn a_crash_fails_pending_calls_with_the_exit_and_stderr() {
    let f = Fixture::new();
    let conn = f.connect(&[]).await;
    let pgid = conn.pid();
    let out = conn.call_tool("exit", json!({"code": 3}), opts()).await;
    assert_eq!(out.state, CallState::OutcomeUnknown, "exit may write");
    let err = out.error.unwrap();
    assert_eq!(err.code, "SERVER_EXITED");
    let detail = err.detail.unwrap();
    assert_eq!(detail["exit"]["code"], 3);
    assert_eq!(detail["stderr"], "fixture: exiting with 3 on request\n");
    assert_eq!(
        out.record.exit.unwrap().code,
        Some(3),
        "final call record holds the exit"
    );
    // Later calls fail at once.
    let later = conn
        .call_tool("echo", json!({"message": "x"}), opts())
        .await;
    assert_eq!(later.state, CallState::Failed);
    assert_eq!(later.record.request_id, None);
    let record = conn.close().await;
    assert_eq!(record.end_reason.map(|e| e.as_str()), Some("crash"));
    assert_eq!(record.exit.unwrap().code, Some(3));
    assert_eq!(
        f.recorder.last_connection(&record.connection_id).unwrap(),
        record
    );
    assert!(group_members(pgid).is_empty());
    assert!(scratch_entries(&f.root).is_empty());
}

#[tokio::test]
async fn a_server_dying_during_negotiation_reports_its_stderr() {
    let f = Fixture::new();
    let err = Connection::connect(f.options(python("crash.py", &[])))
        .await
        .unwrap_err();
    assert_eq!(err.code, "SERVER_EXITED");
    let detail = err.detail.unwrap();
    assert_eq!(
        detail["stderr"],
        "crash: fatal error: database is on fire\n"
    );
    assert_eq!(detail["exit"]["code"], 3);
    assert!(scratch_entries(&f.root).is_empty());
}

#[tokio::test]
async fn calls_keep_answering_during_a_200_mib_stderr_flood() {
    let f = Fixture::new();
    let conn = f.connect(&["--flood-mb", "200"]).await;
    let total: u64 = 200 * 1024 * 1024;
    let mut answered_during_flood = 0;
    for i in 0..500 {
        let out = conn
            .call_tool("echo", json!({"message": format!("f{i}")}), opts())
            .await;
        assert_eq!(out.state, CallState::Completed);
        assert_eq!(text_of(&out.result), format!("f{i}"));
        if conn.stderr().bytes_seen() < total {
            answered_during_flood += 1;
        }
    }
    assert!(
        answered_during_flood > 0,
        "the flood was still running during calls"
    );
    wait_until(|| conn.stderr().bytes_seen() == total).await;
    let snap = conn.stderr().snapshot();
    assert_eq!(snap.bytes_seen, total);
    assert_eq!(snap.bytes_retained, 2048 + 63488);
    assert!(snap.truncated);
    assert!(
        snap.text
            .contains("\n[stderr truncated: kept first 2048 and last 63488 of 209715200 bytes]\n")
    );
    let record = f.close(conn).await;
    assert_eq!(record.stderr.bytes_seen, total);
    assert_eq!(record.stderr.bytes_retained, 65536);
    let excerpt = record.stderr_excerpt.unwrap();
    assert!(excerpt.len() <= 4096);
    assert!(excerpt.contains("of 209715200 bytes]"));
}

#[tokio::test]
async fn rss_ceiling_kills_the_group_naming_the_ceiling() {
    let f = Fixture::new();
    let mut o = f.options(python("mcp_server.py", &[]));
    o.limits.max_rss_bytes = Some(64 << 20);
    // The poll, not RLIMIT_DATA (which defaults to the RSS ceiling and would
    // refuse the allocation inside the child; see isolation.rs).
    o.profile.max_memory_bytes = Some(1 << 30);
    let conn = Connection::connect(o).await.unwrap();
    let out = conn
        .call_tool("alloc", json!({"mb": 256, "seconds": 20}), opts())
        .await;
    assert_eq!(out.state, CallState::Failed, "read-only call, answer lost");
    let err = out.error.unwrap();
    assert_eq!(err.code, "RESOURCE_LIMIT");
    assert_eq!(err.detail.unwrap()["ceiling"], "max_rss");
    let record = f.close(conn).await;
    assert_eq!(record.end_reason.map(|e| e.as_str()), Some("memory"));
}

#[tokio::test]
async fn cpu_ceiling_kills_the_group_naming_the_ceiling() {
    let f = Fixture::new();
    let mut o = f.options(python("mcp_server.py", &[]));
    o.limits.max_cpu = Some(Duration::from_millis(500));
    let conn = Connection::connect(o).await.unwrap();
    let out = conn.call_tool("spin", json!({"seconds": 30}), opts()).await;
    let err = out.error.unwrap();
    assert_eq!(err.code, "RESOURCE_LIMIT");
    assert_eq!(err.detail.unwrap()["ceiling"], "max_cpu");
    let record = f.close(conn).await;
    assert_eq!(record.end_reason.map(|e| e.as_str()), Some("cpu"));
}

/// A server that ends by itself with status 0 ended its input, not crashed.
#[tokio::test]
async fn a_clean_exit_is_recorded_as_end_of_input() {
    let f = Fixture::new();
    let conn = f.connect(&[]).await;
    let out = conn.call_tool("exit", json!({"code": 0}), opts()).await;
    assert_eq!(out.error.unwrap().code, "SERVER_EXITED");
    let record = f.close(conn).await;
    assert_eq!(record.end_reason.map(|e| e.as_str()), Some("end_of_input"));
    assert_eq!(record.exit.unwrap().code, Some(0));
}

#[tokio::test]
async fn input_required_results_fail_cleanly() {
    let f = Fixture::new();
    let conn = f.connect(&["--era", "modern"]).await;
    let out = conn.call_tool("input_required", json!({}), opts()).await;
    assert_eq!(out.state, CallState::Failed);
    assert_eq!(out.error.unwrap().code, "INPUT_REQUIRED_UNSUPPORTED");
    f.close(conn).await;
}

#[tokio::test]
async fn unknown_tools_are_remote_errors_and_treated_as_may_write() {
    let f = Fixture::new();
    let conn = f.connect(&[]).await;
    let out = conn.call_tool("nope", json!({}), opts()).await;
    assert_eq!(out.state, CallState::Failed);
    assert_eq!(out.error.unwrap().code, "REMOTE_ERROR");
    assert_eq!(out.record.effect, Some(EffectClass::MayWrite));
    let bad = conn.call_tool("echo", json!([1, 2]), opts()).await;
    assert_eq!(bad.state, CallState::Failed);
    assert_eq!(bad.error.unwrap().code, "CALL_INVALID");
    f.close(conn).await;
}

#[tokio::test]
async fn dropping_the_connection_kills_the_group() {
    let f = Fixture::new();
    let conn = f.connect(&[]).await;
    let pgid = conn.pid();
    drop(conn);
    // The record is written by the teardown the drop starts: wait for it too.
    wait_until(|| {
        group_members(pgid).is_empty()
            && scratch_entries(&f.root).is_empty()
            && !f.recorder.connections.lock().unwrap().is_empty()
    })
    .await;
    let rec = f.last_record();
    assert_eq!(rec.end_reason.map(|e| e.as_str()), Some("dropped"));
}

/// Polls `cond` until true (up to 30 s; the assertion is the condition, not the time).
async fn wait_until(mut cond: impl FnMut() -> bool) {
    for _ in 0..3000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached in 30 s");
}

#[tokio::test]
async fn a_secret_the_child_prints_is_redacted_in_errors_and_records() {
    let f = Fixture::new();
    let spec = ChildSpec::new("/bin/sh")
        .arg("-c")
        .arg("echo \"token is $API_TOKEN\" >&2; exit 5")
        .env(
            "API_TOKEN",
            gatehouse_core::sandbox::EnvValue::Secret {
                value: gatehouse_core::sandbox::SecretValue::new("tok-12345-secret"),
            },
        );
    let err = Connection::connect(f.options(spec)).await.unwrap_err();
    assert_eq!(err.code, "SERVER_EXITED");
    let detail = err.detail.unwrap();
    assert_eq!(detail["stderr"], "token is <redacted>\n");
    let rec = f.last_record();
    assert_eq!(rec.stderr_excerpt.as_deref(), Some("token is <redacted>\n"));
    assert_eq!(
        rec.stderr.bytes_seen,
        "token is tok-12345-secret\n".len() as u64
    );
    assert_eq!(rec.exit.unwrap().code, Some(5));
}

/// The same encodings written to stderr by a real child: none reaches the
/// excerpt in the error or in the record.
#[tokio::test]
async fn a_secret_the_child_prints_encoded_is_redacted_from_its_stderr() {
    use base64::Engine as _;
    const SECRET: &str = "tok-12345-secret";
    let f = Fixture::new();
    let b64 = base64::engine::general_purpose::STANDARD;
    let lines = [
        SECRET.to_uppercase(),
        hex::encode(SECRET),
        hex::encode(SECRET).to_uppercase(),
        format!(
            "Authorization: Basic {}",
            b64.encode(format!("me:{SECRET}"))
        ),
    ];
    // printf, not echo: the text goes out byte for byte.
    let script = format!(
        "printf '%s\\n' {} >&2; exit 5",
        lines
            .iter()
            .map(|l| format!("'{l}'"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let spec = ChildSpec::new("/bin/sh").arg("-c").arg(script).env(
        "API_TOKEN",
        gatehouse_core::sandbox::EnvValue::Secret {
            value: gatehouse_core::sandbox::SecretValue::new(SECRET),
        },
    );
    let err = Connection::connect(f.options(spec)).await.unwrap_err();
    assert_eq!(err.code, "SERVER_EXITED");
    let excerpt = err.detail.unwrap()["stderr"].as_str().unwrap().to_string();
    let rec = f.last_record();
    assert_eq!(rec.stderr_excerpt.as_deref(), Some(excerpt.as_str()));
    assert_eq!(
        excerpt.matches("<redacted>").count(),
        lines.len(),
        "{excerpt}"
    );
    for form in [
        SECRET.to_string(),
        hex::encode(SECRET),
        b64.encode(format!("me:{SECRET}")),
    ] {
        assert!(
            !excerpt.to_lowercase().contains(&form.to_lowercase()),
            "{excerpt}"
        );
    }
}

/// A server that repeats a secret it was given, as it is, in capitals, hex
/// or inside base64 (an `Authorization: Basic` value), in a tool result or
/// an error: none of it reaches the caller.
#[tokio::test]
async fn a_secret_in_any_common_encoding_is_redacted_from_tool_results() {
    use base64::Engine as _;
    const SECRET: &str = "tok-12345-secret";
    let f = Fixture::new();
    let spec = python("mcp_server.py", &[]).env(
        "API_TOKEN",
        gatehouse_core::sandbox::EnvValue::Secret {
            value: gatehouse_core::sandbox::SecretValue::new(SECRET),
        },
    );
    let conn = Connection::connect(f.options(spec)).await.unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    for said in [
        SECRET.to_string(),
        SECRET.to_uppercase(),
        hex::encode(SECRET),
        format!(
            "Authorization: Basic {}",
            b64.encode(format!("me:{SECRET}"))
        ),
    ] {
        let out = conn
            .call_tool("echo", json!({"message": said}), opts())
            .await;
        let text = text_of(&out.result);
        assert!(text.contains("<redacted>"), "{said} came back as {text}");
        for form in [SECRET.to_lowercase(), hex::encode(SECRET)] {
            assert!(!text.to_lowercase().contains(&form), "{text}");
        }
    }
    f.close(conn).await;
}

#[tokio::test]
async fn the_registry_reuses_a_running_connection_and_keeps_the_final_record() {
    use gatehouse_core::connections::registry::{LiveState, Registry};
    let f = Fixture::new();
    let registry = Registry::default();
    let first = registry
        .open("echo", async { Ok(f.connect(&["--era", "modern"]).await) })
        .await
        .unwrap();
    assert_eq!(first.state(), LiveState::Connected);
    // Still running: `connect` is not awaited again.
    let again = registry
        .open("echo", async { panic!("a running connection is reused") })
        .await
        .unwrap();
    assert_eq!(again.conn.id(), first.conn.id());
    let pgid = first.conn.pid();
    drop((first, again));
    let closed = registry.close("echo").await.unwrap();
    assert_eq!(closed.state(), LiveState::Closed);
    let record = closed.record.clone().unwrap();
    assert_eq!(record.end_reason.map(|e| e.as_str()), Some("closed"));
    assert_eq!(group_members(pgid), Vec::<i32>::new(), "process group gone");
    // Closing again returns the same record; an unknown name is `None`.
    let twice = registry.close("echo").await.unwrap();
    assert_eq!(twice.record.unwrap().connection_id, record.connection_id);
    assert!(registry.close("nope").await.is_none());
    registry.clear();
    assert!(registry.get("echo").is_none());
}

/// A `notifications/tools/list_changed` mid-session puts the connection on
/// hold: the call it came with completes, every later one is refused before
/// dispatch with CONNECTION_TOOLS_CHANGED (the server never sees it).
#[tokio::test]
async fn tools_list_changed_puts_the_connection_on_hold() {
    let f = Fixture::new();
    let spec = python("pin_server.py", &[]).env(
        "PIN_LIST_CHANGED",
        gatehouse_core::sandbox::EnvValue::Plain {
            value: "call".into(),
        },
    );
    // A stored connection (it has a name, so a pinned list to hold against).
    let mut opts = f.options(spec);
    opts.name = Some("pinned".into());
    let conn = Connection::connect(opts).await.expect("connects");
    assert!(!conn.tools_list_changed());
    let tools: Vec<String> = conn.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(tools, ["echo", "read_notes"]);
    assert_eq!(
        conn.tools()[0].description.as_deref(),
        Some("Echoes a message.")
    );
    let first = conn
        .call_tool("echo", json!({"message": "one"}), CallOptions::default())
        .await;
    assert_eq!(first.state, CallState::Completed);
    assert!(conn.tools_list_changed());
    let second = conn
        .call_tool("echo", json!({"message": "two"}), CallOptions::default())
        .await;
    assert_eq!(second.state, CallState::Failed);
    assert_eq!(second.error.unwrap().code, "CONNECTION_TOOLS_CHANGED");
    assert_eq!(second.record.request_id, None, "never dispatched");
    f.close(conn).await;
}
