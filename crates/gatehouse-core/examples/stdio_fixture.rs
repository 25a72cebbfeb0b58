//! A small stdio MCP server (the legacy `initialize` handshake) in Rust, for
//! the tests that need a real child server where no Python runs: the Windows
//! build under Wine. `cargo test` builds it beside the test binaries
//! (`target/<triple>/debug/examples/stdio_fixture[.exe]`).
//!
//! Flags: `--crlf` ends every line it writes with `\r\n` (a Windows text-mode
//! writer); `--flood-kb N` writes N KiB to stderr at start. `sleep` as the
//! only argument: sleep for an hour (a descendant for the tree tests).
//!
//! Tools: `echo{message}`, `env{}` (its whole environment, as a JSON object),
//! `spawn{count}` (starts `count` sleeping copies of itself, each of which
//! starts one more: a tree of `2 * count` descendants; returns their PIDs),
//! `hang{}` (never answers), `stderr{bytes}`, `alloc{mb}` (commits and
//! touches that much memory, then answers), `write{path}` (tries to create
//! a file there; answers what happened), `cwd{}`, `args{}` (its arguments,
//! as a JSON array).

use std::io::{BufRead, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("sleep") {
        // A sleeping copy: one level further down if asked, then sleep.
        if args.get(1).map(String::as_str) == Some("tree") {
            let _ = spawn_self(&["sleep"]);
        }
        std::thread::sleep(Duration::from_secs(3600));
        return;
    }
    let crlf = args.iter().any(|a| a == "--crlf");
    let eol: &[u8] = if crlf { b"\r\n" } else { b"\n" };
    if let Some(kb) = args
        .iter()
        .position(|a| a == "--flood-kb")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse::<usize>().ok())
    {
        let mut err = std::io::stderr().lock();
        let line = [b'y'; 1023];
        for _ in 0..kb {
            let _ = err.write_all(&line);
            let _ = err.write_all(b"\n");
        }
    }
    let stdin = std::io::stdin();
    for line in stdin.lock().split(b'\n') {
        let Ok(mut line) = line else { break };
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        let Ok(msg) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        if let Some(reply) = handle(&msg) {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(reply.to_string().as_bytes());
            let _ = out.write_all(eol);
            let _ = out.flush();
        }
    }
}

fn spawn_self(args: &[&str]) -> std::io::Result<u32> {
    let child = Command::new(std::env::current_exe()?)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    Ok(child.id())
}

fn text(s: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": s.into()}]})
}

fn tool(name: &str) -> Value {
    json!({"name": name, "description": name, "inputSchema": {"type": "object"},
           "annotations": {"readOnlyHint": true}})
}

fn handle(msg: &Value) -> Option<Value> {
    let id = msg.get("id")?.clone();
    let method = msg.get("method")?.as_str()?;
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    let ok = |result: Value| Some(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    match method {
        "initialize" => ok(json!({
            "protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "stdio-fixture", "version": "1.0.0"},
        })),
        "ping" => ok(json!({})),
        "tools/list" => ok(json!({"tools": [
            tool("echo"), tool("env"), tool("spawn"), tool("hang"), tool("stderr"),
            tool("alloc"), tool("write"), tool("cwd"), tool("args"),
        ]})),
        "tools/call" => {
            let a = &params["arguments"];
            match params["name"].as_str().unwrap_or_default() {
                "echo" => ok(text(a["message"].as_str().unwrap_or_default())),
                "env" => {
                    let vars: serde_json::Map<String, Value> = std::env::vars_os()
                        .map(|(k, v)| {
                            (
                                k.to_string_lossy().into_owned(),
                                Value::String(v.to_string_lossy().into_owned()),
                            )
                        })
                        .collect();
                    ok(text(Value::Object(vars).to_string()))
                }
                "spawn" => {
                    let n = a["count"].as_u64().unwrap_or(1);
                    let pids: Vec<u32> = (0..n)
                        .filter_map(|_| spawn_self(&["sleep", "tree"]).ok())
                        .collect();
                    ok(text(json!(pids).to_string()))
                }
                "hang" => None,
                "stderr" => {
                    let n = a["bytes"].as_u64().unwrap_or(0) as usize;
                    let _ = std::io::stderr().write_all(&vec![b'e'; n]);
                    ok(text("wrote stderr"))
                }
                "alloc" => {
                    let mb = a["mb"].as_u64().unwrap_or(1) as usize;
                    let mut hold = vec![0u8; mb << 20];
                    for i in (0..hold.len()).step_by(4096) {
                        hold[i] = 1;
                    }
                    ok(text(format!("alloc done {}", hold.len())))
                }
                "write" => {
                    let path = a["path"].as_str().unwrap_or_default();
                    let r = std::fs::write(path, b"written by the fixture");
                    ok(text(match r {
                        Ok(()) => "written".to_string(),
                        Err(e) => format!("refused: {e}"),
                    }))
                }
                "args" => ok(text(
                    json!(std::env::args().skip(1).collect::<Vec<_>>()).to_string(),
                )),
                "cwd" => ok(text(
                    std::env::current_dir()
                        .map(|d| d.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                )),
                other => Some(json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32602, "message": format!("Unknown tool: {other}")}})),
            }
        }
        _ => Some(json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": "Method not found"}})),
    }
}
