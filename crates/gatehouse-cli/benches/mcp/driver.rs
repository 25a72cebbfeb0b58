//! The raw pipe driver every server in the bench is measured with, its
//! figures and their summary table, and the Rust echo server (the floor).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Set in the environment of this binary when it runs as the Rust echo server:
/// `1`, or `commit:PATH` to commit a row per call to the SQLite file at PATH.
pub const ECHO_ENV: &str = "GATEHOUSE_BENCH_ECHO_SERVER";
const WINDOW: u64 = 16;
const WARM_UP: u64 = 100;
const COLD_STARTS: usize = 10;

/// Given the calls answered since the target started, the entries in its
/// audit log now and how many those calls must have added.
pub type AuditCheck = Box<dyn Fn(u64) -> (u64, u64)>;

/// What to start and which call to make.
pub struct Target {
    pub name: String,
    pub command: Box<dyn Fn() -> Command>,
    /// The `params` of call number `i`.
    pub params: Box<dyn Fn(u64) -> Value>,
    pub audit: Option<AuditCheck>,
}

/// One measurement of one target.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    pub cold_ms: f64,
    pub seq_calls_s: f64,
    pub seq_p50_us: f64,
    pub seq_p99_us: f64,
    pub conc_calls_s: f64,
    pub conc_p50_us: f64,
    pub conc_p99_us: f64,
    /// The server process's user + system CPU per call (database server excluded).
    pub seq_cpu_us: f64,
    pub conc_cpu_us: f64,
}

impl Figures {
    pub fn json(&self, name: &str) -> String {
        json!({
            "target": name, "cold_ms": round1(self.cold_ms),
            "seq_calls_s": self.seq_calls_s.round(), "seq_p50_us": self.seq_p50_us, "seq_p99_us": self.seq_p99_us,
            "conc_calls_s": self.conc_calls_s.round(), "conc_p50_us": self.conc_p50_us, "conc_p99_us": self.conc_p99_us,
            "server_cpu_us_per_call": [round1(self.seq_cpu_us), round1(self.conc_cpu_us)],
        })
        .to_string()
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

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

    /// User + system CPU time of the server process so far.
    fn cpu(&self) -> Duration {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // Fields after the command name (which may hold spaces): utime is the 14th field.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<u64> = rest
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
        // CLK_TCK is 100 on Linux.
        Duration::from_millis(ticks * 10)
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn call(id: u64, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

fn check(r: &Value) {
    assert!(r["result"].is_object(), "{r}");
    assert!(
        r["result"]["isError"] == json!(false) || r["result"]["isError"].is_null(),
        "{r}"
    );
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_micros() as f64
}

/// Measures one target once (see the crate doc).
pub fn bench(t: &Target, n: u64) -> Figures {
    let audit_before = t.audit.as_ref().map(|a| a(0).0);
    let mut cold = Vec::new();
    for _ in 0..COLD_STARTS {
        let start = Instant::now();
        let mut s = Server::start(&mut (t.command)());
        s.initialize();
        cold.push(start.elapsed());
        s.stop();
    }
    cold.sort();

    let mut s = Server::start(&mut (t.command)());
    s.initialize();
    for i in 0..WARM_UP {
        s.send(&call(i, (t.params)(i)));
        check(&s.recv());
    }
    let mut lat = Vec::with_capacity(n as usize);
    let cpu = s.cpu();
    let start = Instant::now();
    for i in 0..n {
        let id = 1_000 + i;
        let sent = Instant::now();
        s.send(&call(id, (t.params)(id)));
        check(&s.recv());
        lat.push(sent.elapsed());
    }
    let seq = start.elapsed();
    let seq_cpu = s.cpu() - cpu;
    lat.sort();
    let (seq_p50, seq_p99) = (pct(&lat, 0.5), pct(&lat, 0.99));

    let mut sent_at: HashMap<u64, Instant> = HashMap::new();
    let mut lat = Vec::with_capacity(n as usize);
    let base = 1_000_000u64;
    let cpu = s.cpu();
    let start = Instant::now();
    let mut sent = 0u64;
    while sent < WINDOW.min(n) {
        sent_at.insert(base + sent, Instant::now());
        s.send(&call(base + sent, (t.params)(base + sent)));
        sent += 1;
    }
    for _ in 0..n {
        let r = s.recv();
        check(&r);
        let id = r["id"].as_u64().unwrap();
        lat.push(sent_at.remove(&id).unwrap().elapsed());
        if sent < n {
            sent_at.insert(base + sent, Instant::now());
            s.send(&call(base + sent, (t.params)(base + sent)));
            sent += 1;
        }
    }
    let par = start.elapsed();
    let conc_cpu = s.cpu() - cpu;
    lat.sort();
    s.stop();
    if let (Some(audit), Some(before)) = (&t.audit, audit_before) {
        let (after, expected) = audit(WARM_UP + 2 * n);
        assert_eq!(
            after - before,
            expected,
            "{}: every answered call has its audit entry",
            t.name
        );
    }
    Figures {
        cold_ms: cold[cold.len() / 2].as_secs_f64() * 1000.0,
        seq_calls_s: n as f64 / seq.as_secs_f64(),
        seq_p50_us: seq_p50,
        seq_p99_us: seq_p99,
        conc_calls_s: n as f64 / par.as_secs_f64(),
        conc_p50_us: pct(&lat, 0.5),
        conc_p99_us: pct(&lat, 0.99),
        seq_cpu_us: seq_cpu.as_secs_f64() * 1e6 / n as f64,
        conc_cpu_us: conc_cpu.as_secs_f64() * 1e6 / n as f64,
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn spread(xs: &[f64]) -> String {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{lo:.0}–{hi:.0}")
}

/// Per target: each key's median over the rounds, calls/s with its min–max.
pub fn table(targets: &[Target], rows: &[(String, Figures)]) {
    println!(
        "| server | cold start ms | seq calls/s (min–max) | seq p50/p99 µs | 16 in flight calls/s (min–max) | 16 in flight p50/p99 µs | server CPU µs/call seq/16 |"
    );
    println!("|---|---|---|---|---|---|---|");
    for t in targets {
        let of: Vec<&Figures> = rows
            .iter()
            .filter(|(n, _)| *n == t.name)
            .map(|(_, f)| f)
            .collect();
        let m = |k: fn(&Figures) -> f64| median(of.iter().map(|f| k(f)).collect());
        let all = |k: fn(&Figures) -> f64| of.iter().map(|f| k(f)).collect::<Vec<_>>();
        println!(
            "| {} | {:.1} | {:.0} ({}) | {:.0}/{:.0} | {:.0} ({}) | {:.0}/{:.0} | {:.1}/{:.1} |",
            t.name,
            m(|f| f.cold_ms),
            m(|f| f.seq_calls_s),
            spread(&all(|f| f.seq_calls_s)),
            m(|f| f.seq_p50_us),
            m(|f| f.seq_p99_us),
            m(|f| f.conc_calls_s),
            spread(&all(|f| f.conc_calls_s)),
            m(|f| f.conc_p50_us),
            m(|f| f.conc_p99_us),
            m(|f| f.seq_cpu_us),
            m(|f| f.conc_cpu_us),
        );
    }
}

/// A minimal MCP echo server on stdio: the cost of the pipe and the driver.
/// With `db`, each call's request is first committed as one row of a WAL-mode
/// SQLite file (`synchronous = NORMAL`, as gatehouse's audit log), calls that
/// arrived together in one transaction: the floor of any server that makes a
/// call durable before answering it.
pub fn rust_echo_server(db: Option<&str>) {
    let db = db.map(|path| {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
             CREATE TABLE IF NOT EXISTS log (seq INTEGER PRIMARY KEY, entry TEXT NOT NULL);",
        )
        .unwrap();
        conn
    });
    // Our own buffer, to see which requests have already arrived.
    #[cfg(unix)]
    let raw: Box<dyn std::io::Read> = Box::new(std::fs::File::from(
        std::os::fd::AsFd::as_fd(&std::io::stdin())
            .try_clone_to_owned()
            .unwrap(),
    ));
    #[cfg(not(unix))]
    let raw: Box<dyn std::io::Read> = Box::new(std::io::stdin());
    let mut stdin = BufReader::new(raw);
    let mut out = std::io::stdout().lock();
    let mut line = String::new();
    loop {
        // Every request already read: one transaction, then every answer.
        let mut batch = Vec::new();
        loop {
            line.clear();
            if stdin.read_line(&mut line).unwrap() == 0 {
                return;
            }
            batch.push(serde_json::from_str::<Value>(&line).unwrap());
            if !stdin.buffer().contains(&b'\n') {
                break;
            }
        }
        let calls: Vec<&Value> = batch
            .iter()
            .filter(|m| m["method"] == "tools/call")
            .collect();
        if let (Some(conn), false) = (&db, calls.is_empty()) {
            let tx = conn.unchecked_transaction().unwrap();
            for call in &calls {
                tx.execute("INSERT INTO log (entry) VALUES (?1)", [call.to_string()])
                    .unwrap();
            }
            tx.commit().unwrap();
        }
        let mut replies = Vec::new();
        for msg in &batch {
            let Some(id) = msg.get("id") else { continue };
            let result = match msg["method"].as_str() {
                Some("initialize") => json!({"protocolVersion": msg["params"]["protocolVersion"],
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "rust-echo", "version": "1"}}),
                _ => {
                    json!({"content": [{"type": "text", "text": msg["params"]["arguments"]["message"]}],
                    "isError": false})
                }
            };
            serde_json::to_writer(
                &mut replies,
                &json!({"jsonrpc": "2.0", "id": id, "result": result}),
            )
            .unwrap();
            replies.push(b'\n');
        }
        if out.write_all(&replies).and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}
