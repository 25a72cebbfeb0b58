//! Harness for the MCP end-to-end tests: the real `gatehouse mcp` on a
//! [`TestSite`], spoken to in raw JSON lines.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
#[cfg(unix)]
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::TestSite;

/// How long to wait for a message before declaring the server stuck. A guard
/// against hangs, not a speed assertion.
pub const PATIENCE: Duration = Duration::from_secs(30);

pub fn bin() -> &'static str {
    crate::util::BIN
}

/// MCP helpers on the shared [`TestSite`].
pub trait McpSite {
    /// Starts `gatehouse mcp` with these actor flags and extra environment.
    fn mcp(&self, actor_args: &[&str], env: &[(&str, &str)]) -> Mcp;
    /// The command [`McpSite::mcp`] starts, for tests that wrap it.
    fn mcp_command(&self, actor_args: &[&str], env: &[(&str, &str)]) -> Command;
    /// The newest 1,000 entries of the audit log, oldest of them first.
    fn audit(&self) -> Vec<Value>;
}

impl McpSite for TestSite {
    fn mcp(&self, actor_args: &[&str], env: &[(&str, &str)]) -> Mcp {
        Mcp::spawn(self.mcp_command(actor_args, env))
    }

    fn mcp_command(&self, actor_args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut cmd = self.command();
        cmd.env("GATEHOUSE_LOG", "warn").arg("mcp").args(actor_args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }

    fn audit(&self) -> Vec<Value> {
        self.ok_json(&["audit", "list", "--limit", "1000", "--json"])
            .as_array()
            .cloned()
            .expect("audit list prints an array")
    }
}

/// A running server.
pub struct Mcp {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Notifications seen while waiting for responses.
    pub notifications: Vec<Value>,
    /// Messages read but not yet claimed.
    pending: Vec<Value>,
}

impl Mcp {
    pub fn spawn(mut cmd: Command) -> Mcp {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn().expect("gatehouse mcp starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = stderr.clone();
        let mut err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = std::io::Read::read(&mut err, &mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Mcp {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            notifications: Vec::new(),
            pending: Vec::new(),
        }
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    pub fn send_raw(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line).expect("write to server");
        stdin.write_all(b"\n").expect("write to server");
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, v: &Value) {
        self.send_raw(v.to_string().as_bytes());
    }

    /// The next line from stdout, which must be one JSON value.
    pub fn recv(&mut self) -> Value {
        if !self.pending.is_empty() {
            return self.pending.remove(0);
        }
        self.recv_line()
    }

    fn recv_line(&mut self) -> Value {
        match self.lines.recv_timeout(PATIENCE) {
            Ok(line) => serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line:?}")),
            Err(RecvTimeoutError::Timeout) => {
                panic!(
                    "no message from the server in {PATIENCE:?}; stderr:\n{}",
                    self.stderr()
                )
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("the server closed stdout; stderr:\n{}", self.stderr())
            }
        }
    }

    /// Waits for the response with `id`, keeping notifications and other responses.
    pub fn response(&mut self, id: &Value) -> Value {
        if let Some(i) = self
            .pending
            .iter()
            .position(|m| m.get("id") == Some(id) && m.get("method").is_none())
        {
            return self.pending.remove(i);
        }
        loop {
            let m = self.recv_line();
            if m.get("method").is_some() && m.get("id").is_none() {
                self.notifications.push(m);
            } else if m.get("id") == Some(id) {
                return m;
            } else {
                self.pending.push(m);
            }
        }
    }

    pub fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(&json!(id))
    }

    /// A legacy handshake; returns the initialize result.
    pub fn initialize(&mut self, version: &str) -> Value {
        let r = self.request(
            0,
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "1"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r
    }

    /// Tool names from a tools/list response.
    pub fn tool_names(&mut self, id: i64, params: Value) -> Vec<String> {
        let r = self.request(id, "tools/list", params);
        r["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("tools/list failed: {r}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    }

    /// A tools/call; returns the whole response.
    pub fn call(&mut self, id: i64, name: &str, arguments: Value, meta: Option<Value>) -> Value {
        let mut params = json!({"name": name, "arguments": arguments});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        self.request(id, "tools/call", params)
    }

    /// Waits until a notification with `method` arrives (or was seen).
    pub fn notification(&mut self, method: &str) -> Value {
        if let Some(i) = self
            .notifications
            .iter()
            .position(|n| n["method"] == method)
        {
            return self.notifications.remove(i);
        }
        loop {
            let m = self.recv_line();
            if m["method"] == method {
                return m;
            }
            if m.get("method").is_some() && m.get("id").is_none() {
                self.notifications.push(m);
            } else {
                self.pending.push(m);
            }
        }
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Closes stdin and waits for the exit.
    pub fn finish(mut self) -> ExitStatus {
        self.close_stdin();
        wait_exit(&mut self.child)
    }

    /// All remaining stdout lines until the server closes it.
    pub fn drain(&mut self) -> Vec<Value> {
        let mut out = std::mem::take(&mut self.pending);
        while let Ok(line) = self.lines.recv_timeout(PATIENCE) {
            out.push(serde_json::from_str(&line).expect("JSON line"));
        }
        out
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits for a child to exit, killing it if it outlives [`PATIENCE`].
pub fn wait_exit(child: &mut Child) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if start.elapsed() > PATIENCE {
            let _ = child.kill();
            panic!("the server did not exit within {PATIENCE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The per-request `_meta` of the stateless 2026-07-28 revision.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
    })
}

pub fn modern(params: Value) -> Value {
    let mut p = params;
    p["_meta"] = modern_meta();
    p
}

/// The `{"error": {...}}` body of a tool error result.
pub fn tool_error(response: &Value) -> Value {
    let result = &response["result"];
    assert_eq!(result["isError"], true, "expected a tool error: {response}");
    let text = result["content"][0]["text"].as_str().expect("text content");
    serde_json::from_str::<Value>(text).expect("error text is JSON")["error"].clone()
}
