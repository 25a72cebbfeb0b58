//! The MCP client against real third-party servers from the registries:
//! `@modelcontextprotocol/server-everything` (npm, TypeScript SDK) and a small
//! server on the official Python SDK (`mcp` on PyPI, tests/interop/python_server.py).
//! Each negotiates, lists tools, answers a call exactly, has its stderr counted,
//! and leaves no process and no scratch directory behind. (`gatehouse mcp`
//! itself: crates/gatehouse-cli/tests/it/client_interop.rs.)
//!
//! Both are installed, pinned, by scripts/interop-setup.sh. Without them the
//! tests skip with a message, except under `CI`, where a missing install is a
//! failure rather than a silent pass.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use gatehouse_core::mcp::client::{
    CallOptions, CallState, ConnectOptions, Connection, ConnectionRun, EffectClass, Era,
    MemoryRecorder, StreamEnd,
};
use gatehouse_core::sandbox::stderr::StderrBudget;
use gatehouse_core::sandbox::{ChildSpec, EnvValue, Grace, ScratchRoot};
use serde_json::{Value, json};

#[path = "../../../../tests/interop/interop.rs"]
mod interop;
use interop::{interop_dir, missing};

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

    async fn connect(&self, spec: ChildSpec) -> Connection {
        let mut o = ConnectOptions::new(spec, self.root.clone(), self.recorder.clone());
        // Patience, not a bound: each server must exit by itself once its
        // stdin closes (the tests assert exit code 0), and the Python SDK's
        // server took over 2 s to do so on a loaded machine.
        o.limits.grace = Grace {
            after_stdin_close: Duration::from_secs(10),
            after_term: Duration::from_secs(2),
        };
        o.stderr_pool = StderrBudget::new(4 << 20);
        Connection::connect(o).await.expect("connects")
    }

    /// Closes and asserts nothing is left: no group member, no scratch dir.
    async fn close(&self, conn: Connection) -> ConnectionRun {
        let pgid = conn.pid();
        let record = conn.close().await;
        assert_eq!(group_members(pgid), Vec::<i32>::new(), "process group gone");
        assert!(scratch_entries(&self.root).is_empty(), "scratch dir gone");
        assert_eq!(record.end_reason.map(|e| e.as_str()), Some("closed"));
        assert_eq!(record.stdout_end, StreamEnd::Eof);
        assert_eq!(record.stderr_end, StreamEnd::Eof);
        assert_eq!(record.protocol_violations, 0);
        record
    }
}

fn text_of(result: &Option<Value>) -> &str {
    result.as_ref().expect("a result")["content"][0]["text"]
        .as_str()
        .expect("text content")
}

fn names(tools: &[gatehouse_core::mcp::client::ToolInfo]) -> BTreeSet<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

#[tokio::test]
async fn server_everything_from_npm() {
    let entry =
        interop_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok();
    if missing(
        "@modelcontextprotocol/server-everything (tests/interop/node_modules) or node",
        entry.exists() && node,
    ) {
        return;
    }
    let f = Fixture::new();
    // The child finds `node` through the host's PATH, passed by name.
    let spec = ChildSpec::new("node")
        .arg(entry.canonicalize().unwrap().to_string_lossy())
        .arg("stdio")
        .env(
            "PATH",
            EnvValue::FromHost {
                name: "PATH".into(),
            },
        );
    let conn = f.connect(spec).await;
    let server = conn.server();
    // It answers server/discover with "method not found": a legacy server.
    assert_eq!(server.era, Era::Legacy);
    assert_eq!(server.protocol_version, "2025-11-25");
    assert_eq!(server.name.as_deref(), Some("mcp-servers/everything"));

    let tools = conn.list_tools().await.expect("tools/list");
    let listed = names(&tools);
    for known in ["echo", "get-env", "get-sum", "get-tiny-image"] {
        assert!(listed.contains(known), "{known} missing from {listed:?}");
    }
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(echo.effect, EffectClass::ReadOnly);

    let out = conn
        .call_tool("echo", json!({"message": "hello"}), CallOptions::default())
        .await;
    assert_eq!(out.state, CallState::Completed, "{:?}", out.error);
    assert_eq!(text_of(&out.result), "Echo: hello");
    assert_eq!(out.record.effect, Some(EffectClass::ReadOnly));

    let out = conn
        .call_tool("get-sum", json!({"a": 2, "b": 40}), CallOptions::default())
        .await;
    assert_eq!(text_of(&out.result), "The sum of 2 and 40 is 42.");

    // The sandbox's environment, as the server itself reports it.
    let out = conn
        .call_tool("get-env", json!({}), CallOptions::default())
        .await;
    let env: Value = serde_json::from_str(text_of(&out.result)).unwrap();
    let keys: BTreeSet<&str> = env
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(keys, BTreeSet::from(["HOME", "PATH"]));
    assert_eq!(env["PATH"], json!(std::env::var("PATH").unwrap()));

    let banner = "Starting default (STDIO) server...\n";
    let record = f.close(conn).await;
    assert_eq!(record.era.map(|e| e.as_str()), Some("legacy"));
    assert_eq!(record.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(record.stderr.bytes_seen, banner.len() as u64);
    assert_eq!(record.stderr.bytes_retained, banner.len() as u64);
    assert!(!record.stderr.truncated);
    assert_eq!(record.stderr_excerpt.as_deref(), Some(banner));
    // It exits by itself when stdin closes.
    assert_eq!(
        record.exit.expect("exit observed").code,
        Some(0),
        "{:?}",
        record.exit
    );
}

#[tokio::test]
async fn python_sdk_server_from_pypi() {
    let python = interop_dir().join(".venv/bin/python");
    if missing("the Python MCP SDK (tests/interop/.venv)", python.exists()) {
        return;
    }
    let f = Fixture::new();
    // An absolute interpreter path: the sandbox's default PATH and HOME suffice.
    let spec = ChildSpec::new(python.to_string_lossy()).arg(
        interop_dir()
            .join("python_server.py")
            .canonicalize()
            .unwrap()
            .to_string_lossy(),
    );
    let conn = f.connect(spec).await;
    let server = conn.server();
    // mcp 2.x answers server/discover: the modern era.
    assert_eq!(server.era, Era::Modern);
    assert_eq!(server.protocol_version, "2026-07-28");
    assert_eq!(server.name.as_deref(), Some("gatehouse-interop-python"));
    assert_eq!(server.version.as_deref(), Some("0.1.0"));

    let tools = conn.list_tools().await.expect("tools/list");
    assert_eq!(names(&tools), BTreeSet::from(["add", "echo"]));
    let effect = |n: &str| tools.iter().find(|t| t.name == n).unwrap().effect;
    assert_eq!(effect("echo"), EffectClass::ReadOnly);
    assert_eq!(effect("add"), EffectClass::MayWrite);

    let out = conn
        .call_tool("echo", json!({"message": "hello"}), CallOptions::default())
        .await;
    assert_eq!(out.state, CallState::Completed, "{:?}", out.error);
    assert_eq!(text_of(&out.result), "hello");
    assert_eq!(
        out.result.as_ref().unwrap()["structuredContent"],
        json!({"result": "hello"})
    );
    assert_eq!(out.record.effect, Some(EffectClass::ReadOnly));

    let out = conn
        .call_tool("add", json!({"a": 2, "b": 40}), CallOptions::default())
        .await;
    assert_eq!(out.state, CallState::Completed, "{:?}", out.error);
    assert_eq!(text_of(&out.result), "42");
    assert_eq!(out.record.effect, Some(EffectClass::MayWrite));
    // A call the server rejects is a completed call carrying isError.
    let out = conn
        .call_tool("add", json!({"a": "x"}), CallOptions::default())
        .await;
    assert_eq!(out.state, CallState::Completed, "{:?}", out.error);
    assert_eq!(out.result.as_ref().unwrap()["isError"], json!(true));

    // Our two lines, then the SDK's own log line for the rejected call.
    let written = "python_server: ready\npython_server: add 2 40\n\
                   Tool 'add' rejected arguments: ['a', 'b']\n";
    let record = f.close(conn).await;
    assert_eq!(record.era.map(|e| e.as_str()), Some("modern"));
    assert_eq!(record.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(record.stderr_excerpt.as_deref(), Some(written));
    assert_eq!(record.stderr.bytes_seen, written.len() as u64);
    assert_eq!(record.stderr.bytes_retained, written.len() as u64);
    assert!(!record.stderr.truncated);
    // It exits by itself when stdin closes.
    assert_eq!(record.exit.expect("exit observed").code, Some(0));
}
