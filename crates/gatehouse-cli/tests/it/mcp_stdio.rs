//! `gatehouse mcp` on every kind of stdin and stdout a client hands it:
//! pipes (most clients; the other tests), UNIX sockets (Node's
//! `child_process` stdio), and plain files or a terminal (read and written
//! the blocking way, see mcp::server's `stdio`).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::mcp_util::{PATIENCE, wait_exit};
use crate::util::TestSite;

fn requests() -> String {
    [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "stdio-test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "content_read", "arguments": {"slug": "welcome"}}}),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect()
}

/// The answer to `content_read` names the entry it read.
fn assert_answers(lines: &[Value]) {
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["id"], 1);
    assert!(
        lines[0]["result"]["protocolVersion"].is_string(),
        "{lines:?}"
    );
    assert_eq!(lines[1]["id"], 2);
    let text = lines[1]["result"]["content"][0]["text"].as_str().unwrap();
    let entry: Value = serde_json::from_str(text).unwrap();
    assert_eq!(entry["slug"], "welcome", "{text}");
}

#[test]
fn serves_over_unix_sockets_as_node_clients_connect() {
    let site = TestSite::new("stdio_sockets");
    let (mut ours_in, theirs_in) = UnixStream::pair().unwrap();
    let (ours_out, theirs_out) = UnixStream::pair().unwrap();
    let mut child = site
        .command()
        .args(["mcp", "--role", "viewer"])
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs_in)))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs_out)))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    ours_out.set_read_timeout(Some(PATIENCE)).unwrap();
    ours_in.write_all(requests().as_bytes()).unwrap();
    let mut reader = BufReader::new(&ours_out);
    let lines: Vec<Value> = (0..2)
        .map(|_| {
            let mut line = String::new();
            reader.read_line(&mut line).expect("an answer in time");
            serde_json::from_str(&line).unwrap()
        })
        .collect();
    assert_answers(&lines);
    // Closing stdin ends the server cleanly.
    drop(ours_in);
    assert!(wait_exit(&mut child).success());
}

#[test]
fn serves_requests_read_from_a_file_into_a_file() {
    let site = TestSite::new("stdio_files");
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in.jsonl"), dir.path().join("out.jsonl"));
    std::fs::write(&input, requests()).unwrap();
    let mut child = site
        .command()
        .args(["mcp", "--role", "viewer"])
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(std::fs::File::create(&output).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The end of the file is the end of the session.
    assert!(wait_exit(&mut child).success());
    let lines: Vec<Value> = std::fs::read_to_string(&output)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_answers(&lines);
}
