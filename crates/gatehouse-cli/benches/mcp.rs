//! `cargo bench -p gatehouse-cli --bench mcp`: prints how fast `gatehouse mcp` is
//! against a scratch site — cold start (spawn to `initialize` answer) and
//! `tools/call` round trips per second, sequential and with 16 in flight.
//! It prints figures; it asserts nothing about speed. With
//! `GATEHOUSE_TEST_PG_URL` set (`scripts/pg.sh start`) it measures the same
//! against a site on PostgreSQL too.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_gatehouse");

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    fn start(site: &std::path::Path) -> Server {
        let mut child = Command::new(BIN)
            .arg("--site")
            .arg(site)
            .args(["mcp", "--role", "viewer"])
            .env_remove("GATEHOUSE_API_KEY")
            .env("GATEHOUSE_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("gatehouse mcp starts");
        Server {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
        }
    }

    fn send(&mut self, v: &Value) {
        writeln!(self.stdin, "{v}").unwrap();
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

fn call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "content_read", "arguments": {"slug": "welcome"}}})
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    println!("== SQLite");
    bench_site(None);
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
        println!("== PostgreSQL");
        bench_site(Some(format!("{base}/{db}")));
    }
}

fn bench_site(database_url: Option<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    let mut init = Command::new(BIN);
    init.args(["site", "init"]).arg(&site).arg("--scratch");
    if let Some(url) = &database_url {
        init.arg("--database-url").arg(url);
    }
    let out = init.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut cold = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        let mut s = Server::start(&site);
        s.initialize();
        cold.push(start.elapsed());
        s.stop();
    }
    cold.sort();
    println!(
        "cold start (spawn -> initialize answer), 20 runs: min {}  median {}  max {}",
        ms(cold[0]),
        ms(cold[cold.len() / 2]),
        ms(cold[cold.len() - 1])
    );

    let mut s = Server::start(&site);
    s.initialize();
    let n = 1000u64;
    let start = Instant::now();
    for id in 1..=n {
        s.send(&call(id));
        let r = s.recv();
        assert_eq!(r["result"]["isError"], false, "{r}");
    }
    let seq = start.elapsed();
    println!(
        "tools/call content_read, sequential: {n} calls in {}  = {:.0} calls/s",
        ms(seq),
        n as f64 / seq.as_secs_f64()
    );

    let n = 2000u64;
    let window = 16u64;
    let start = Instant::now();
    let mut sent = 0;
    while sent < window {
        sent += 1;
        s.send(&call(10_000 + sent));
    }
    let mut received = 0;
    while received < n {
        let r = s.recv();
        assert_eq!(r["result"]["isError"], false, "{r}");
        received += 1;
        if sent < n {
            sent += 1;
            s.send(&call(10_000 + sent));
        }
    }
    let par = start.elapsed();
    println!(
        "tools/call content_read, {window} in flight: {n} calls in {}  = {:.0} calls/s",
        ms(par),
        n as f64 / par.as_secs_f64()
    );
    s.stop();
}
