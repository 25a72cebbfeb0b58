//! The Windows backend against a real child server (the `stdio_fixture`
//! example, an `.exe`), run under Wine by `scripts/wine-test.sh`: the child
//! and every descendant in one Job Object and gone after teardown, the
//! deadline ending the tree, stderr bounded, the environment block exact,
//! CRLF framing, a `.cmd` server in a folder with spaces and non-ASCII.
//!
//! Processes are checked through their own handles ([`ProcId`]: PID +
//! creation time), never through the job the backend keeps: after teardown
//! the job is gone, so asking it would prove nothing.
#![cfg(windows)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use gatehouse_core::mcp::client::{
    CallOptions, CallState, ConnectOptions, Connection, MemoryRecorder,
};
use gatehouse_core::sandbox::stderr::StderrBudget;
use gatehouse_core::sandbox::{ChildSpec, EnvValue, Grace, ProcId, ProcessGroup, ScratchRoot};
use serde_json::{Value, json};

/// The fixture server built beside this test binary (`cargo test` builds
/// the examples): `target/<triple>/debug/examples/stdio_fixture.exe`.
fn fixture_exe() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let p = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("examples")
        .join("stdio_fixture.exe");
    assert!(
        p.is_file(),
        "{} missing: build it with `cargo test --no-run` (it builds the examples)",
        p.display()
    );
    p
}

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

    async fn connect(&self, spec: ChildSpec) -> Connection {
        Connection::connect(self.options(spec))
            .await
            .expect("connects")
    }
}

fn fixture_spec(args: &[&str]) -> ChildSpec {
    let mut spec = ChildSpec::new(fixture_exe().to_string_lossy());
    for a in args {
        spec = spec.arg(*a);
    }
    spec
}

fn text_of(result: &Option<Value>) -> String {
    result.as_ref().expect("a result")["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn call(conn: &Connection, tool: &str, args: Value) -> String {
    let out = conn.call_tool(tool, args, CallOptions::default()).await;
    assert_eq!(out.state, CallState::Completed, "{tool}: {:?}", out.error);
    text_of(&out.result)
}

/// The job's processes now, each named by PID + creation time.
fn job_processes(pid: i32) -> Vec<ProcId> {
    ProcessGroup { pgid: pid }
        .members()
        .into_iter()
        .filter_map(ProcId::of)
        .collect()
}

/// The job's running processes. Counts are lower bounds: Wine may add a
/// console host of its own to the job, and a listed process may still be
/// starting.
fn running(pid: i32) -> Vec<ProcId> {
    job_processes(pid)
        .into_iter()
        .filter(ProcId::is_live)
        .collect()
}

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
async fn the_environment_block_is_exactly_the_spec_and_what_windows_needs() {
    let f = Fixture::new();
    let spec = fixture_spec(&[]).env(
        "GREETING",
        EnvValue::Plain {
            value: "Grüße, 世界".into(),
        },
    );
    let conn = f.connect(spec).await;
    let env: serde_json::Map<String, Value> =
        serde_json::from_str(&call(&conn, "env", json!({})).await).unwrap();
    // Wine's loader adds its own settings (WINE*) and SystemDrive to every
    // process's environment, whatever it was created with (its loader sets
    // WINECONFIGDIR in ours too, which is how the test knows it runs there).
    let wine = std::env::var_os("WINECONFIGDIR").is_some();
    let names: BTreeSet<String> = env
        .keys()
        .map(|k| k.to_uppercase())
        .filter(|k| !(wine && (k.starts_with("WINE") || k == "SYSTEMDRIVE")))
        .collect();
    let expected: BTreeSet<String> = [
        "GREETING",
        "HOME",
        "PATH",
        "SYSTEMROOT",
        "TEMP",
        "TMP",
        "USERPROFILE",
    ]
    .map(String::from)
    .into();
    assert_eq!(names, expected, "the child's whole environment: {env:?}");
    assert_eq!(env["GREETING"], "Grüße, 世界");
    let scratch = call(&conn, "cwd", json!({})).await;
    for var in ["HOME", "TEMP", "TMP", "USERPROFILE"] {
        assert_eq!(env[var], scratch.as_str(), "{var} points at scratch");
    }
    let root = std::env::var("SystemRoot").unwrap();
    assert_eq!(env["SystemRoot"], root.as_str());
    assert_eq!(
        env["PATH"],
        format!(r"{root}\System32;{root};{root}\System32\Wbem").as_str()
    );
    // The host's own variables stayed with the host.
    for host in ["APPDATA", "ProgramFiles", "COMPUTERNAME", "USERNAME"] {
        if std::env::var_os(host).is_some() {
            assert!(!env.contains_key(host), "{host} leaked into the child");
        }
    }
    conn.close().await;
}

#[tokio::test]
async fn teardown_ends_every_descendant_in_the_job() {
    let f = Fixture::new();
    let conn = f.connect(fixture_spec(&[])).await;
    let pid = conn.pid();
    let children: Vec<u32> =
        serde_json::from_str(&call(&conn, "spawn", json!({"count": 3})).await).unwrap();
    assert_eq!(children.len(), 3);
    // The server, three children and one grandchild under each.
    wait_until(|| running(pid).len() >= 7).await;
    let tree = running(pid);
    for c in &children {
        assert!(tree.iter().any(|p| p.pid == *c as i32), "{c} in the job");
    }
    let record = conn.close().await;
    assert_eq!(record.end_reason.map(|e| e.as_str()), Some("closed"));
    let left: Vec<&ProcId> = tree.iter().filter(|p| p.is_live()).collect();
    assert!(left.is_empty(), "still running after teardown: {left:?}");
    assert!(scratch_entries(&f.root).is_empty(), "scratch dir gone");
}

#[tokio::test]
async fn dropping_the_connection_ends_the_tree() {
    let f = Fixture::new();
    let conn = f.connect(fixture_spec(&[])).await;
    let pid = conn.pid();
    call(&conn, "spawn", json!({"count": 2})).await;
    wait_until(|| running(pid).len() >= 5).await;
    let tree = running(pid);
    drop(conn);
    wait_until(|| tree.iter().all(|p| !p.is_live())).await;
    wait_until(|| scratch_entries(&f.root).is_empty()).await;
}

#[tokio::test]
async fn a_deadline_ends_the_server_and_its_tree() {
    let f = Fixture::new();
    let conn = f.connect(fixture_spec(&[])).await;
    let pid = conn.pid();
    call(&conn, "spawn", json!({"count": 1})).await;
    wait_until(|| running(pid).len() >= 3).await;
    let tree = running(pid);
    let hung = conn
        .call_tool(
            "hang",
            json!({}),
            CallOptions {
                timeout: Some(Duration::from_millis(300)),
                ..CallOptions::default()
            },
        )
        .await;
    assert_eq!(hung.state, CallState::TimedOut);
    assert_eq!(hung.error.as_ref().unwrap().code, "CALL_TIMEOUT");
    let record = conn.close().await;
    assert_eq!(record.end_reason.map(|e| e.as_str()), Some("timeout"));
    let exit = record.exit.expect("the exit was observed");
    assert_eq!(exit.code, Some(1), "ended by the job's termination");
    assert!(tree.iter().all(|p| !p.is_live()), "the whole tree ended");
}

#[tokio::test]
async fn stderr_is_bounded_while_calls_go_on() {
    let f = Fixture::new();
    let conn = f.connect(fixture_spec(&["--flood-kb", "8192"])).await;
    let total: u64 = 8192 * 1024;
    assert_eq!(
        call(&conn, "echo", json!({"message": "during"})).await,
        "during"
    );
    wait_until(|| conn.stderr().bytes_seen() == total).await;
    let snap = conn.stderr().snapshot();
    assert!(snap.truncated);
    assert!(snap.bytes_retained <= 65536, "{}", snap.bytes_retained);
    assert!(
        snap.text.contains("of 8388608 bytes]"),
        "{}",
        &snap.text[..200]
    );
    let record = conn.close().await;
    assert_eq!(record.stderr.bytes_seen, total);
}

#[tokio::test]
async fn crlf_lines_from_the_server_are_framed() {
    let f = Fixture::new();
    let conn = f.connect(fixture_spec(&["--crlf"])).await;
    assert_eq!(
        call(&conn, "echo", json!({"message": "a\r\nb"})).await,
        "a\r\nb"
    );
    let record = conn.close().await;
    assert_eq!(record.protocol_violations, 0);
}

#[tokio::test]
async fn a_cmd_server_in_a_folder_with_spaces_and_non_ascii_starts_from_path() {
    let f = Fixture::new();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("Zoë's MCP tools (x86)");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(fixture_exe(), dir.join("stdio fixture.exe")).unwrap();
    // What npx.cmd does: run the program next to the script with every argument.
    std::fs::write(
        dir.join("srv.cmd"),
        "@echo off\r\n\"%~dp0stdio fixture.exe\" %*\r\n",
    )
    .unwrap();
    let path = format!(
        "{};{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let spec = ChildSpec::new("srv")
        .arg("--crlf")
        .arg("two words")
        .arg(r"C:\Trailing Slash\")
        .arg("a&b|c")
        .env("PATH", EnvValue::Plain { value: path });
    let conn = f.connect(spec).await;
    let args: Vec<String> = serde_json::from_str(&call(&conn, "args", json!({})).await).unwrap();
    assert_eq!(
        args,
        ["--crlf", "two words", r"C:\Trailing Slash\", "a&b|c"],
        "each argument arrives whole through cmd.exe and the script's %*"
    );
    assert_eq!(call(&conn, "echo", json!({"message": "ok"})).await, "ok");
    let pid = conn.pid();
    let tree = job_processes(pid);
    assert!(
        tree.len() >= 2,
        "cmd.exe and the server in the job: {tree:?}"
    );
    conn.close().await;
    assert!(tree.iter().all(|p| !p.is_live()));
}

#[tokio::test]
async fn the_status_says_what_applied_and_that_the_network_is_open() {
    let f = Fixture::new();
    let conn = f.connect(fixture_spec(&[])).await;
    let iso = conn.isolation();
    assert!(iso.network, "no per-connection network rule: reported open");
    assert!(
        iso.warnings.iter().any(|w| w.starts_with("network open")),
        "{:?}",
        iso.warnings
    );
    assert!(
        !iso.warnings
            .iter()
            .any(|w| w.contains("not in a Job Object")),
        "the child is in its job: {:?}",
        iso.warnings
    );
    assert_eq!(
        iso.backend, "job_object+restricted_token",
        "{:?}",
        iso.warnings
    );
    // The job's UI limits are listed, applied or (where the system refused
    // them) not, with why.
    let ui = iso
        .layer(gatehouse_core::sandbox::probe::LayerName::UiLimits)
        .expect("the UI limits are listed");
    assert!(
        ui.applied
            || iso
                .warnings
                .iter()
                .any(|w| w.contains("UI limits were not applied")),
        "{ui:?} {:?}",
        iso.warnings
    );
    conn.close().await;
}

#[tokio::test]
#[cfg_attr(
    windows,
    ignore = "Wine does not check file ACLs (files are Unix files): run on Windows with --include-ignored"
)]
async fn the_restricted_child_writes_only_in_scratch() {
    let f = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    let conn = f.connect(fixture_spec(&[])).await;
    let scratch = call(&conn, "cwd", json!({})).await;
    let inside = call(
        &conn,
        "write",
        json!({"path": format!(r"{scratch}\ok.txt")}),
    )
    .await;
    assert_eq!(inside, "written");
    let target = outside.path().join("escape.txt");
    let out = call(&conn, "write", json!({"path": target.to_string_lossy()})).await;
    assert!(out.starts_with("refused"), "{out}");
    assert!(!target.exists());
    conn.close().await;
}

#[tokio::test]
#[cfg_attr(
    windows,
    ignore = "Wine accepts a job memory limit and does not enforce it: run on Windows with --include-ignored"
)]
async fn the_job_memory_limit_ends_a_server_that_passes_it() {
    let f = Fixture::new();
    let mut o = f.options(fixture_spec(&[]));
    o.profile.max_memory_bytes = Some(64 << 20);
    let conn = Connection::connect(o).await.expect("connects");
    let out = conn
        .call_tool("alloc", json!({"mb": 512}), CallOptions::default())
        .await;
    assert_ne!(out.state, CallState::Completed);
    conn.close().await;
}
