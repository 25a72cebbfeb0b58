//! Harness for `gatehouse serve`: the real binary on a [`TestSite`], spoken to
//! with a raw HTTP/1.1 client (so a test can send what no well-behaved client
//! would: a forged `Host`, a key in the URL, mismatched headers).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::TestSite;

pub const PATIENCE: Duration = Duration::from_secs(30);
pub const LEGACY: &str = "2025-06-18";
pub const MODERN: &str = "2026-07-28";

/// One HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}), status {}: {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends one request on a fresh connection and reads the whole response.
/// `Host` is `addr` unless `headers` give one.
pub fn request(
    addr: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    try_request(addr, method, target, headers, body)
        .unwrap_or_else(|| panic!("no answer from {addr}"))
}

/// A handshake-era request `id` under [`LEGACY`] to `addr`'s `/mcp`, with
/// `key` as bearer if given, on a connection of its own (a thread can hold
/// it while the server is stopped); `None` when no whole answer came.
pub fn try_legacy(
    addr: &str,
    key: Option<&str>,
    id: u64,
    method: &str,
    params: Value,
) -> Option<Reply> {
    try_legacy_with(addr, key, &[], id, method, params)
}

/// [`try_legacy`] with `extra` headers (a `Host`, say).
pub fn try_legacy_with(
    addr: &str,
    key: Option<&str>,
    extra: &[(&str, &str)],
    id: u64,
    method: &str,
    params: Value,
) -> Option<Reply> {
    let auth = key.map(|k| format!("Bearer {k}"));
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", LEGACY),
    ];
    if let Some(a) = &auth {
        headers.push(("Authorization", a.as_str()));
    }
    headers.extend_from_slice(extra);
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    try_request(
        addr,
        "POST",
        "/mcp",
        &headers,
        &serde_json::to_vec(&body).unwrap(),
    )
}

/// [`request`], or `None` when the connection fails or closes before a
/// whole answer (a server killed under load).
pub fn try_request(
    addr: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Option<Reply> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut head = format!("{method} {target} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(body).ok()?;
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    raw.windows(4)
        .any(|w| w == b"\r\n\r\n")
        .then(|| parse(&raw))
}

fn parse(raw: &[u8]) -> Reply {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    if chunked {
        body = dechunk(&body);
    }
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = b.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&b[..eol]).trim(), 16).unwrap_or(0);
        if size == 0 {
            return out;
        }
        let start = eol + 2;
        out.extend_from_slice(&b[start..(start + size).min(b.len())]);
        b = &b[(start + size + 2).min(b.len())..];
    }
}

/// An open event stream (`text/event-stream` answer to a POST), read message
/// by message as the server sends them.
pub struct Events {
    stream: TcpStream,
    /// Bytes read and not yet taken apart into chunks.
    raw: Vec<u8>,
    /// The stream's text so far, minus the messages already returned.
    text: String,
    pub status: u16,
}

impl Events {
    /// The next JSON-RPC message on the stream, or `None` when `within` passes
    /// (or the server ends the stream) without one. Comments are skipped.
    pub fn next_message(&mut self, within: Duration) -> Option<Value> {
        let deadline = Instant::now() + within;
        loop {
            while let Some(end) = self.text.find("\n\n") {
                let event: String = self.text.drain(..end + 2).collect();
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim)
                    .collect();
                if !data.is_empty() {
                    return Some(serde_json::from_str(&data.join("\n")).expect("JSON data"));
                }
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            self.stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .unwrap();
            let mut buf = [0u8; 8192];
            match self.stream.read(&mut buf) {
                Ok(0) => return None,
                Ok(n) => self.raw.extend_from_slice(&buf[..n]),
                Err(_) => return None,
            }
            self.dechunk();
        }
    }

    /// Moves every complete chunk from `raw` to `text`.
    fn dechunk(&mut self) {
        loop {
            let Some(eol) = self.raw.windows(2).position(|w| w == b"\r\n") else {
                return;
            };
            let size = usize::from_str_radix(String::from_utf8_lossy(&self.raw[..eol]).trim(), 16)
                .expect("a chunk size");
            if self.raw.len() < eol + 2 + size + 2 {
                return;
            }
            let chunk = self.raw[eol + 2..eol + 2 + size].to_vec();
            self.raw.drain(..eol + 2 + size + 2);
            self.text.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Closes the connection, as a client that goes away does.
    pub fn close(self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

/// A running `gatehouse serve`.
pub struct Serve {
    pub child: Child,
    pub addr: String,
    stderr: Arc<Mutex<String>>,
}

impl Serve {
    /// Starts `gatehouse serve --listen 127.0.0.1:0 ARGS` and waits until it listens.
    pub fn start(site: &TestSite, args: &[&str]) -> Serve {
        Serve::start_on(site, "127.0.0.1:0", args)
    }

    /// [`Serve::start`] on a given address (a test that must know its port
    /// beforehand, for `--public-url`).
    pub fn start_on(site: &TestSite, listen: &str, args: &[&str]) -> Serve {
        Serve::start_with_env(site, listen, args, &[])
    }

    /// `gatehouse serve ARGS` without `--listen`: where it listens is
    /// `[serve]`'s to say (or a flag in `args`).
    pub fn start_from_table(site: &TestSite, args: &[&str]) -> Serve {
        Serve::start_with_env(site, "", args, &[])
    }

    /// [`Serve::start_on`] with `env` added (a CA file the server trusts);
    /// an empty `listen` passes no `--listen`.
    pub fn start_with_env(
        site: &TestSite,
        listen: &str,
        args: &[&str],
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Serve {
        let mut cmd = site.command();
        cmd.envs(env.iter().copied());
        cmd.env("GATEHOUSE_LOG", "warn")
            .arg("serve")
            .args(if listen.is_empty() {
                vec![]
            } else {
                vec!["--listen", listen]
            })
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("gatehouse serve starts");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = channel();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("gatehouse serve: listening on ") {
                    let rest = url.split_once("://").map_or(url, |(_, r)| r);
                    let _ = tx.send(rest.trim_end_matches("/mcp").to_string());
                }
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let addr = rx.recv_timeout(PATIENCE).unwrap_or_else(|_| {
            let _ = child.kill();
            panic!("gatehouse serve did not start: {}", log.lock().unwrap())
        });
        Serve {
            child,
            addr,
            stderr: log,
        }
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// POSTs JSON to `/mcp` with these headers (plus Content-Type and Accept).
    pub fn post(&self, headers: &[(&str, &str)], body: &Value) -> Reply {
        let mut all = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        all.extend_from_slice(headers);
        request(
            &self.addr,
            "POST",
            "/mcp",
            &all,
            &serde_json::to_vec(body).unwrap(),
        )
    }

    /// A handshake-era request under [`LEGACY`], with `key` as bearer if given.
    pub fn legacy(&self, key: Option<&str>, method: &str, params: Value) -> Reply {
        try_legacy(&self.addr, key, 1, method, params)
            .unwrap_or_else(|| panic!("no answer from {}", self.addr))
    }

    /// A 2026-07-28 request with matching headers.
    pub fn modern(&self, key: Option<&str>, method: &str, mut params: Value) -> Reply {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let auth = key.map(|k| format!("Bearer {k}"));
        let name = params["name"].as_str().map(str::to_string);
        let mut headers = vec![("MCP-Protocol-Version", MODERN), ("Mcp-Method", method)];
        if let Some(n) = &name {
            headers.push(("Mcp-Name", n.as_str()));
        }
        if let Some(a) = &auth {
            headers.push(("Authorization", a.as_str()));
        }
        self.post(
            &headers,
            &json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}),
        )
    }

    /// A 2026-07-28 request that asks for an event stream (`Accept:
    /// text/event-stream` only), left open: its headers are read, its
    /// messages are read by [`Events::next_message`].
    pub fn modern_stream(&self, key: Option<&str>, id: u64, method: &str, params: Value) -> Events {
        self.try_modern_stream(key, id, method, params)
            .unwrap_or_else(|status| panic!("no event stream: status {status}"))
    }

    /// [`Serve::modern_stream`], or the status of the answer when it is not a stream.
    pub fn try_modern_stream(
        &self,
        key: Option<&str>,
        id: u64,
        method: &str,
        params: Value,
    ) -> Result<Events, u16> {
        self.try_modern_stream_with(key, &[], id, method, params)
    }

    /// [`Serve::try_modern_stream`] with `extra` headers (an `X-Forwarded-For`).
    pub fn try_modern_stream_with(
        &self,
        key: Option<&str>,
        extra: &[(&str, &str)],
        id: u64,
        method: &str,
        mut params: Value,
    ) -> Result<Events, u16> {
        // Beside whatever `_meta` the caller gave (a progress token).
        params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(MODERN);
        params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
        let body = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .unwrap();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\nMcp-Method: {method}\r\n",
            self.addr
        );
        if let Some(name) = params["name"].as_str() {
            head.push_str(&format!("Mcp-Name: {name}\r\n"));
        }
        if let Some(k) = key {
            head.push_str(&format!("Authorization: Bearer {k}\r\n"));
        }
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        let mut stream = TcpStream::connect(&self.addr).expect("connect");
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(&body).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        // The headers, byte by byte up to the blank line (the body stays unread).
        let mut raw = Vec::new();
        let mut byte = [0u8; 1];
        while !raw.ends_with(b"\r\n\r\n") {
            assert_eq!(
                stream.read(&mut byte).expect("headers"),
                1,
                "closed: {raw:?}"
            );
            raw.push(byte[0]);
        }
        let reply = parse(&raw);
        if reply.header("content-type") != Some("text/event-stream") {
            return Err(reply.status);
        }
        Ok(Events {
            stream,
            raw: Vec::new(),
            text: String::new(),
            status: reply.status,
        })
    }

    /// The tool names `tools/list` shows `key` (legacy era), sorted.
    pub fn tool_names(&self, key: Option<&str>) -> Vec<String> {
        let r = self.legacy(key, "tools/list", json!({}));
        assert_eq!(r.status, 200, "{}", r.text());
        let mut names: Vec<String> = r.json()["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    }

    /// Sends a signal (SIGHUP rereads the TLS files).
    #[cfg(unix)]
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), signal).unwrap();
    }

    /// Sends SIGTERM (Windows, which has none: kills) and waits for the exit.
    pub fn terminate(mut self) -> ExitStatus {
        #[cfg(unix)]
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        #[cfg(not(unix))]
        self.child.kill().unwrap();
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("gatehouse serve did not stop: {}", self.stderr());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
