//! The server leaves no process behind: it exits when stdin closes, on
//! SIGTERM, and when its parent dies without closing anything.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::mcp_util::{McpSite, PATIENCE, bin, wait_exit};
use crate::util::TestSite;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;

#[test]
fn exits_cleanly_when_stdin_closes() {
    let site = TestSite::new("eof");
    let mut mcp = site.mcp(&["--role", "viewer"], &[]);
    mcp.initialize("2025-11-25");
    assert!(mcp.finish().success());
}

#[test]
fn exits_cleanly_on_sigterm() {
    let site = TestSite::new("sigterm");
    let mut mcp = site.mcp(&[], &[]);
    mcp.initialize("2025-11-25");
    kill(Pid::from_raw(mcp.child.id() as i32), Signal::SIGTERM).unwrap();
    let status = wait_exit(&mut mcp.child);
    assert!(status.success(), "{status:?}");
}

/// Whether a process is gone (or a zombie no one reaps).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn exits_when_its_parent_dies() {
    let site = TestSite::new("orphan");
    // A shell stands in for a client: it starts the server with the pipe as
    // stdin (kept open by this test), prints the server's pid, and is killed.
    let out_file = site.path().join("server-stdout.jsonl");
    let mut parent = Command::new("sh")
        .arg("-c")
        .arg(r#"exec 3<&0; "$0" --site "$1" mcp 0<&3 >"$2" 2>/dev/null & echo $!; wait"#)
        .arg(bin())
        .arg(site.path())
        .arg(&out_file)
        .env_remove("GATEHOUSE_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(parent.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let server: i32 = line.trim().parse().expect("the server's pid");
    // Prove the server is serving: it answers a ping into the file.
    let mut stdin = parent.stdin.take().unwrap(); // stays open: not an EOF
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    )
    .unwrap();
    let start = Instant::now();
    while !std::fs::read_to_string(&out_file)
        .unwrap_or_default()
        .contains("\"id\":1")
    {
        assert!(start.elapsed() < PATIENCE, "the server never answered");
        std::thread::sleep(Duration::from_millis(20));
    }
    parent.kill().unwrap();
    parent.wait().unwrap();
    let start = Instant::now();
    while !gone(server) {
        assert!(
            start.elapsed() < PATIENCE,
            "the orphaned server is still running"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin);
}
