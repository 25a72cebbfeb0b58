//! `cargo bench -p gatehouse-cli --bench mcp`: how fast `gatehouse mcp`
//! answers, next to two servers that do no database work, all driven by the
//! same raw pipe driver in the same run:
//!
//! - `gatehouse` on a scratch SQLite site (and on PostgreSQL when
//!   `GATEHOUSE_TEST_PG_URL` is set, `scripts/pg.sh start`), run with an API
//!   key (so each call pays the actor re-check): `content_read` and
//!   `content_write_draft`;
//! - the TypeScript SDK echo server (`tests/interop/echo_server.mjs`, when
//!   `scripts/interop-setup.sh` installed the SDK) and a stdlib Python echo
//!   server (`tests/interop/stdlib_echo_server.py`): `echo`.
//!
//! For each: cold start (spawn to `initialize` answer, median of 10), then
//! sequential calls and calls with 16 in flight: calls/s, p50 and p99 in µs.
//! `BENCH_CALLS` sets the calls per figure (default 5000). It prints figures
//! and asserts nothing about speed.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_gatehouse");
const WINDOW: usize = 16;

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    fn start(cmd: &mut Command) -> Server {
        let mut child = cmd
            .env("GATEHOUSE_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("server starts");
        Server {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
        }
    }

    fn send(&mut self, v: &Value) {
        let mut line = serde_json::to_vec(v).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).unwrap();
    }

    fn recv(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.stdout.read_line(&mut line).unwrap() > 0,
            "server closed stdout"
        );
        serde_json::from_str(&line).unwrap()
    }

    fn initialize(&mut self) {
        self.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}));
        let r = self.recv();
        assert!(r["result"]["protocolVersion"].is_string(), "{r}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// What to start and which call to make.
struct Target {
    name: String,
    command: Box<dyn Fn() -> Command>,
    /// The `params` of call number `i`.
    params: Box<dyn Fn(u64) -> Value>,
}

fn call(id: u64, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

fn check(r: &Value) {
    assert!(
        r["result"]["isError"] == json!(false) || r["result"]["isError"].is_null(),
        "{r}"
    );
    assert!(r["result"].is_object(), "{r}");
}

fn pct(sorted: &[Duration], p: f64) -> u128 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_micros()
}

fn bench(t: &Target, n: u64) {
    let mut cold = Vec::new();
    for _ in 0..10 {
        let start = Instant::now();
        let mut s = Server::start(&mut (t.command)());
        s.initialize();
        cold.push(start.elapsed());
        s.stop();
    }
    cold.sort();

    let mut s = Server::start(&mut (t.command)());
    s.initialize();
    for i in 0..100 {
        s.send(&call(i, (t.params)(i)));
        check(&s.recv());
    }
    let mut lat = Vec::with_capacity(n as usize);
    let start = Instant::now();
    for i in 0..n {
        let id = 1_000 + i;
        let sent = Instant::now();
        s.send(&call(id, (t.params)(id)));
        check(&s.recv());
        lat.push(sent.elapsed());
    }
    let seq = start.elapsed();
    lat.sort();
    let (seq_p50, seq_p99) = (pct(&lat, 0.5), pct(&lat, 0.99));

    let mut sent_at: HashMap<u64, Instant> = HashMap::new();
    let mut lat = Vec::with_capacity(n as usize);
    let base = 1_000_000u64;
    let start = Instant::now();
    let mut sent = 0u64;
    while sent < (WINDOW as u64).min(n) {
        sent_at.insert(base + sent, Instant::now());
        s.send(&call(base + sent, (t.params)(base + sent)));
        sent += 1;
    }
    let mut received = 0;
    while received < n {
        let r = s.recv();
        check(&r);
        let id = r["id"].as_u64().unwrap();
        lat.push(sent_at.remove(&id).unwrap().elapsed());
        received += 1;
        if sent < n {
            sent_at.insert(base + sent, Instant::now());
            s.send(&call(base + sent, (t.params)(base + sent)));
            sent += 1;
        }
    }
    let par = start.elapsed();
    lat.sort();
    s.stop();
    println!(
        "{{\"target\":{:?},\"cold_ms\":{:.1},\"seq_calls_s\":{:.0},\"seq_p50_us\":{},\"seq_p99_us\":{},\"conc_calls_s\":{:.0},\"conc_p50_us\":{},\"conc_p99_us\":{}}}",
        t.name,
        cold[cold.len() / 2].as_secs_f64() * 1000.0,
        n as f64 / seq.as_secs_f64(),
        seq_p50,
        seq_p99,
        n as f64 / par.as_secs_f64(),
        pct(&lat, 0.5),
        pct(&lat, 0.99),
    );
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn main() {
    let n: u64 = std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5000);
    let mut sites = vec![("sqlite", None)];
    if let Some(base) = std::env::var("GATEHOUSE_TEST_PG_URL")
        .ok()
        .filter(|s| !s.is_empty())
    {
        let db = format!("gh_bench_mcp_{}", std::process::id());
        let created = Command::new("psql")
            .arg(format!("{base}/postgres"))
            .args(["-q", "-c", &format!("CREATE DATABASE {db}")])
            .status()
            .unwrap();
        assert!(created.success(), "could not create {db}");
        sites.push(("postgres", Some(format!("{base}/{db}"))));
    }
    let _tmp = tempfile::tempdir().unwrap();
    for (backend, url) in sites {
        let (site, key) = make_site(_tmp.path(), backend, url.as_deref());
        for tool in ["content_read", "content_write_draft"] {
            let (site, key) = (site.clone(), key.clone());
            let params: Box<dyn Fn(u64) -> Value> = if tool == "content_read" {
                Box::new(|_| json!({"name": "content_read", "arguments": {"slug": "welcome"}}))
            } else {
                Box::new(|i| {
                    json!({"name": "content_write_draft", "arguments": {
                        "slug": format!("bench-{}", i % 64), "title": "Bench", "body": format!("body {i}")}})
                })
            };
            bench(
                &Target {
                    name: format!("gatehouse {backend} {tool}"),
                    command: Box::new(move || {
                        let mut c = Command::new(BIN);
                        c.arg("--site")
                            .arg(&site)
                            .arg("mcp")
                            .env("GATEHOUSE_API_KEY", &key);
                        c
                    }),
                    params,
                },
                n,
            );
        }
    }
    let echo = |i: u64| json!({"name": "echo", "arguments": {"message": format!("hello {i}")}});
    let ts = repo().join("tests/interop/echo_server.mjs");
    if repo()
        .join("tests/interop/node_modules/@modelcontextprotocol/sdk")
        .exists()
    {
        bench(
            &Target {
                name: "ts-sdk echo".into(),
                command: Box::new(move || {
                    let mut c = Command::new("node");
                    c.arg(&ts)
                        .env_clear()
                        .env("PATH", std::env::var("PATH").unwrap_or_default());
                    c
                }),
                params: Box::new(echo),
            },
            n,
        );
    } else {
        println!("(ts-sdk echo skipped: run scripts/interop-setup.sh)");
    }
    let py = repo().join("tests/interop/stdlib_echo_server.py");
    bench(
        &Target {
            name: "python stdlib echo".into(),
            command: Box::new(move || {
                let mut c = Command::new("python3");
                c.arg(&py);
                c
            }),
            params: Box::new(echo),
        },
        n,
    );
}

/// A scratch site with an API key that may write drafts.
fn make_site(tmp: &Path, backend: &str, url: Option<&str>) -> (PathBuf, String) {
    let site = tmp.join(backend);
    let mut init = Command::new(BIN);
    init.args(["site", "init"]).arg(&site).arg("--scratch");
    if let Some(url) = url {
        init.arg("--database-url").arg(url);
    }
    let out = init.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(BIN)
        .arg("--site")
        .arg(&site)
        .args(["--role", "admin", "keys", "mint", "--label", "bench"])
        .args(["--roles", "author", "--json"])
        .env_remove("GATEHOUSE_API_KEY")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (site, v["key"].as_str().unwrap().to_string())
}
