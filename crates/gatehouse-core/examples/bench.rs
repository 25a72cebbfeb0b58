//! Benchmark of Gatehouse's MCP client against any stdio server; prints one JSON line.
//!
//! ```text
//! cargo run --release -p gatehouse-core --example bench -- client \
//!     [--calls 10000] [--conc 16] [--cold 5] [--tool echo] [--args '{"message":"hello"}'] -- CMD ARGS…
//! cargo run --release -p gatehouse-core --example bench -- raw   [same flags] -- CMD ARGS…
//! cargo run --release -p gatehouse-core --example bench -- flood [--mb 200] -- CMD ARGS…
//! ```
//! `client` drives `gatehouse_core::client::Connection`; `raw` is the baseline: a
//! minimal hand-written pipe driver (legacy `initialize`, then `tools/call` lines,
//! no sandbox, no records) to compare against. `flood` measures stderr drain
//! throughput and the time to answer a call while the server floods stderr
//! (the server must accept `--flood-mb N`, as tests/fixtures/mcp_server.py does).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gatehouse_core::client::lifecycle::{CallRecord, CallRecorder, ConnectionRecord, RecordFuture};
use gatehouse_core::client::{CallOptions, CallState, ConnectOptions, Connection};
use gatehouse_core::sandbox::{self, ChildSpec, ScratchRoot};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, oneshot};

#[derive(Debug)]
struct NullRecorder;

impl CallRecorder for NullRecorder {
    fn record_call<'a>(&'a self, _: &'a CallRecord) -> RecordFuture<'a> {
        Box::pin(std::future::ready(Ok(())))
    }
    fn record_connection<'a>(&'a self, _: &'a ConnectionRecord) -> RecordFuture<'a> {
        Box::pin(std::future::ready(Ok(())))
    }
}

struct Args {
    mode: String,
    calls: usize,
    conc: usize,
    cold: usize,
    tool: String,
    args: Value,
    mb: u64,
    cmd: Vec<String>,
}

fn parse() -> anyhow::Result<Args> {
    let mut it = std::env::args().skip(1);
    let mode = it.next().unwrap_or_default();
    let mut a = Args {
        mode,
        calls: 10_000,
        conc: 16,
        cold: 5,
        tool: "echo".into(),
        args: json!({"message": "hello"}),
        mb: 200,
        cmd: Vec::new(),
    };
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--calls" => a.calls = it.next().unwrap_or_default().parse()?,
            "--conc" => a.conc = it.next().unwrap_or_default().parse()?,
            "--cold" => a.cold = it.next().unwrap_or_default().parse()?,
            "--tool" => a.tool = it.next().unwrap_or_default(),
            "--args" => a.args = serde_json::from_str(&it.next().unwrap_or_default())?,
            "--mb" => a.mb = it.next().unwrap_or_default().parse()?,
            "--" => {
                a.cmd = it.collect();
                break;
            }
            other => anyhow::bail!("unknown flag {other}"),
        }
    }
    anyhow::ensure!(
        matches!(a.mode.as_str(), "client" | "raw" | "flood") && !a.cmd.is_empty(),
        "usage: bench client|raw|flood [flags] -- CMD ARGS…"
    );
    Ok(a)
}

fn spec(cmd: &[String]) -> ChildSpec {
    let mut s = ChildSpec::new(&cmd[0]);
    for a in &cmd[1..] {
        s = s.arg(a);
    }
    s
}

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<f64>().ok())
            })
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

fn pct(sorted: &[u128], p: f64) -> u128 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn summary(
    prefix: &str,
    mut lat: Vec<u128>,
    wall: Duration,
    out: &mut serde_json::Map<String, Value>,
) {
    lat.sort_unstable();
    out.insert(
        format!("{prefix}_calls_per_s"),
        json!((lat.len() as f64 / wall.as_secs_f64()).round()),
    );
    out.insert(format!("{prefix}_p50_us"), json!(pct(&lat, 0.5)));
    out.insert(format!("{prefix}_p99_us"), json!(pct(&lat, 0.99)));
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = parse()?;
    let tmp = tempfile::tempdir()?;
    let (root, _) = ScratchRoot::open(tmp.path().join("scratch"))?;
    let mut out = serde_json::Map::new();
    out.insert("mode".into(), json!(a.mode));
    match a.mode.as_str() {
        "client" => bench_client(&a, &root, &mut out).await?,
        "raw" => bench_raw(&a, &mut out).await?,
        _ => bench_flood(&a, &root, &mut out).await?,
    }
    out.insert(
        "peak_rss_mib".into(),
        json!((peak_rss_mib() * 10.0).round() / 10.0),
    );
    println!("{}", Value::Object(out));
    Ok(())
}

fn options(a: &Args, root: &ScratchRoot) -> ConnectOptions {
    let mut o = ConnectOptions::new(spec(&a.cmd), root.clone(), Arc::new(NullRecorder));
    // The host's PATH, so `node`/`npx`/`python3` resolve as in a shell.
    if let Ok(path) = std::env::var("PATH") {
        o.spec = o
            .spec
            .clone()
            .env("PATH", sandbox::EnvValue::Plain { value: path });
    }
    o
}

async fn bench_client(
    a: &Args,
    root: &ScratchRoot,
    out: &mut serde_json::Map<String, Value>,
) -> anyhow::Result<()> {
    let mut cold = Vec::new();
    for _ in 0..a.cold {
        let t = Instant::now();
        let conn = Connection::connect(options(a, root)).await?;
        cold.push(t.elapsed().as_secs_f64() * 1000.0);
        conn.close().await;
    }
    cold.sort_by(|x, y| x.partial_cmp(y).unwrap());
    out.insert(
        "cold_start_ms".into(),
        json!(cold.get(cold.len() / 2).map(|v| (v * 10.0).round() / 10.0)),
    );
    let conn = Connection::connect(options(a, root)).await?;
    out.insert(
        "protocol_version".into(),
        json!(conn.server().protocol_version),
    );
    // Warm-up.
    for _ in 0..100 {
        conn.call_tool(&a.tool, a.args.clone(), CallOptions::default())
            .await;
    }
    let mut lat = Vec::with_capacity(a.calls);
    let t = Instant::now();
    for _ in 0..a.calls {
        let c = Instant::now();
        let r = conn
            .call_tool(&a.tool, a.args.clone(), CallOptions::default())
            .await;
        anyhow::ensure!(
            r.state == CallState::Completed,
            "call failed: {:?}",
            r.error
        );
        lat.push(c.elapsed().as_micros());
    }
    summary("seq", lat, t.elapsed(), out);
    let t = Instant::now();
    let per = a.calls / a.conc.max(1);
    let mut tasks = Vec::new();
    for _ in 0..a.conc {
        let conn = conn.clone();
        let tool = a.tool.clone();
        let args = a.args.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(per);
            for _ in 0..per {
                let c = Instant::now();
                let r = conn
                    .call_tool(&tool, args.clone(), CallOptions::default())
                    .await;
                assert_eq!(r.state, CallState::Completed, "{:?}", r.error);
                lat.push(c.elapsed().as_micros());
            }
            lat
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await?);
    }
    summary("conc", lat, t.elapsed(), out);
    out.insert("conc".into(), json!(a.conc));
    conn.close().await;
    Ok(())
}

/// The baseline: the least a pipe driver can do.
async fn bench_raw(a: &Args, out: &mut serde_json::Map<String, Value>) -> anyhow::Result<()> {
    let mut child = tokio::process::Command::new(&a.cmd[0])
        .args(&a.cmd[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let stdin = Arc::new(Mutex::new(child.stdin.take().unwrap()));
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let pending: Arc<std::sync::Mutex<HashMap<u64, oneshot::Sender<()>>>> = Default::default();
    // Handshake inline, then hand stdout to a router task.
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}});
    stdin
        .lock()
        .await
        .write_all(format!("{init}\n").as_bytes())
        .await?;
    lines.next_line().await?;
    stdin
        .lock()
        .await
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await?;
    let router = {
        let pending = pending.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let v: Value = serde_json::from_str(&line).unwrap_or_default();
                if let Some(id) = v["id"].as_u64()
                    && let Some(tx) = pending.lock().unwrap().remove(&id)
                {
                    let _ = tx.send(());
                }
            }
        })
    };
    let next = Arc::new(std::sync::atomic::AtomicU64::new(1));
    let call = {
        let stdin = stdin.clone();
        let pending = pending.clone();
        let tool = a.tool.clone();
        let args = a.args.clone();
        move || {
            let stdin = stdin.clone();
            let pending = pending.clone();
            let id = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let line = format!(
                "{}\n",
                json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}})
            );
            async move {
                let (tx, rx) = oneshot::channel();
                pending.lock().unwrap().insert(id, tx);
                {
                    let mut w = stdin.lock().await;
                    w.write_all(line.as_bytes()).await.unwrap();
                    w.flush().await.unwrap();
                }
                rx.await.unwrap();
            }
        }
    };
    for _ in 0..100 {
        call().await;
    }
    let mut lat = Vec::with_capacity(a.calls);
    let t = Instant::now();
    for _ in 0..a.calls {
        let c = Instant::now();
        call().await;
        lat.push(c.elapsed().as_micros());
    }
    summary("seq", lat, t.elapsed(), out);
    let per = a.calls / a.conc.max(1);
    let t = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..a.conc {
        let call = call.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(per);
            for _ in 0..per {
                let c = Instant::now();
                call().await;
                lat.push(c.elapsed().as_micros());
            }
            lat
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await?);
    }
    summary("conc", lat, t.elapsed(), out);
    out.insert("conc".into(), json!(a.conc));
    router.abort();
    let _ = child.kill().await;
    Ok(())
}

async fn bench_flood(
    a: &Args,
    root: &ScratchRoot,
    out: &mut serde_json::Map<String, Value>,
) -> anyhow::Result<()> {
    let mut cmd = a.cmd.clone();
    cmd.extend(["--flood-mb".to_string(), a.mb.to_string()]);
    let args = Args { cmd, ..parse()? };
    let t = Instant::now();
    let conn = Connection::connect(options(&args, root)).await?;
    let c = Instant::now();
    let r = conn
        .call_tool(&a.tool, a.args.clone(), CallOptions::default())
        .await;
    anyhow::ensure!(
        r.state == CallState::Completed,
        "call failed: {:?}",
        r.error
    );
    out.insert(
        "answer_during_flood_us".into(),
        json!(c.elapsed().as_micros()),
    );
    out.insert(
        "answered_at_stderr_bytes".into(),
        json!(conn.stderr().bytes_seen()),
    );
    let total = a.mb * 1024 * 1024;
    while conn.stderr().bytes_seen() < total {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let secs = t.elapsed().as_secs_f64();
    out.insert(
        "drain_mib_per_s".into(),
        json!((a.mb as f64 / secs).round()),
    );
    out.insert(
        "stderr_bytes_retained".into(),
        json!(conn.stderr().bytes_retained()),
    );
    conn.close().await;
    Ok(())
}
