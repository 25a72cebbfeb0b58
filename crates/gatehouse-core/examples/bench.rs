//! Benchmark of Gatehouse's MCP client against any stdio server; prints one JSON line.
//!
//! ```text
//! cargo run --release -p gatehouse-core --example bench -- client \
//!     [--calls 10000] [--conc 16] [--cold 5] [--tool echo] [--args '{"message":"hello"}'] -- CMD ARGS…
//! cargo run --release -p gatehouse-core --example bench -- raw   [same flags] -- CMD ARGS…
//! cargo run --release -p gatehouse-core --example bench -- rmcp  [same flags] -- CMD ARGS…
//! cargo run --release -p gatehouse-core --example bench -- flood [--mb 200] -- CMD ARGS…
//! ```
//! `client` drives `gatehouse_core::mcp::client::Connection`; `raw` is the baseline: a
//! minimal hand-written pipe driver (legacy `initialize`, then `tools/call` lines,
//! no sandbox, no records) to compare against; `rmcp` drives the official Rust SDK's
//! client (tests/interop/bench_client.mjs is the TypeScript SDK's; scripts/bench-client.sh
//! runs all four against one server). `flood` measures stderr drain
//! throughput and the time to answer a call while the server floods stderr
//! (the server must accept `--flood-mb N`, as tests/fixtures/mcp_server.py does).

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use gatehouse_core::mcp::client::lifecycle::{
    CallRecord, CallRecorder, ConnectionRun, RecordFuture,
};
use gatehouse_core::mcp::client::{CallOptions, CallState, ConnectOptions, Connection};
use gatehouse_core::sandbox::{self, ChildSpec, ScratchRoot};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, oneshot};

#[derive(Debug)]
struct NullRecorder;

impl CallRecorder for NullRecorder {
    fn record_call<'a>(&'a self, _: &'a CallRecord) -> RecordFuture<'a> {
        Box::pin(std::future::ready(Ok(())))
    }
    fn record_connection<'a>(&'a self, _: &'a ConnectionRun) -> RecordFuture<'a> {
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
        matches!(a.mode.as_str(), "client" | "raw" | "rmcp" | "flood") && !a.cmd.is_empty(),
        "usage: bench client|raw|rmcp|flood [flags] -- CMD ARGS…"
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

/// CPU time (user + system, all threads) this process has used: the client's
/// own cost, which wall-clock figures on a shared 2-core machine blur.
/// (Unix only: elsewhere it reads zero, and the bench says so by its figures.)
#[cfg(not(unix))]
fn cpu_time() -> Duration {
    Duration::ZERO
}

#[cfg(unix)]
fn cpu_time() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_SELF)
        .map(|u| {
            let us =
                |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64;
            Duration::from_micros(us(u.user_time()) + us(u.system_time()))
        })
        .unwrap_or_default()
}

fn summary(
    prefix: &str,
    mut lat: Vec<u128>,
    wall: Duration,
    cpu: Duration,
    out: &mut serde_json::Map<String, Value>,
) {
    out.insert(
        format!("{prefix}_cpu_us_per_call"),
        json!((cpu.as_secs_f64() * 1e7 / lat.len().max(1) as f64).round() / 10.0),
    );
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
        "rmcp" => bench_rmcp(&a, &mut out).await?,
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

/// `cold_start_ms`: the median of `a.cold` runs of `once`, which connects, closes and
/// returns how long spawn → negotiated took (closing is not timed).
async fn cold_start<F, Fut>(
    a: &Args,
    mut once: F,
    out: &mut serde_json::Map<String, Value>,
) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Duration>>,
{
    let mut cold = Vec::new();
    for _ in 0..a.cold {
        cold.push(once().await?.as_secs_f64() * 1000.0);
    }
    cold.sort_by(|x, y| x.total_cmp(y));
    out.insert(
        "cold_start_ms".into(),
        json!(cold.get(cold.len() / 2).map(|v| (v * 10.0).round() / 10.0)),
    );
    Ok(())
}

/// The measurement every mode shares, so only the client differs: 100 warm-up calls,
/// `a.calls` sequential calls, then `a.conc` tasks each making `a.calls / a.conc`.
async fn measure<F, Fut>(
    a: &Args,
    call: F,
    out: &mut serde_json::Map<String, Value>,
) -> anyhow::Result<()>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send,
{
    for _ in 0..100 {
        call().await?;
    }
    let mut lat = Vec::with_capacity(a.calls);
    let (t, cpu) = (Instant::now(), cpu_time());
    for _ in 0..a.calls {
        let c = Instant::now();
        call().await?;
        lat.push(c.elapsed().as_micros());
    }
    summary("seq", lat, t.elapsed(), cpu_time() - cpu, out);
    let per = a.calls / a.conc.max(1);
    let (t, cpu) = (Instant::now(), cpu_time());
    let tasks: Vec<_> = (0..a.conc)
        .map(|_| {
            let call = call.clone();
            tokio::spawn(async move {
                let mut lat = Vec::with_capacity(per);
                for _ in 0..per {
                    let c = Instant::now();
                    call().await?;
                    lat.push(c.elapsed().as_micros());
                }
                anyhow::Ok(lat)
            })
        })
        .collect();
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await??);
    }
    summary("conc", lat, t.elapsed(), cpu_time() - cpu, out);
    out.insert("conc".into(), json!(a.conc));
    Ok(())
}

async fn bench_client(
    a: &Args,
    root: &ScratchRoot,
    out: &mut serde_json::Map<String, Value>,
) -> anyhow::Result<()> {
    cold_start(
        a,
        || async {
            let t = Instant::now();
            let conn = Connection::connect(options(a, root)).await?;
            let took = t.elapsed();
            conn.close().await;
            Ok(took)
        },
        out,
    )
    .await?;
    let conn = Connection::connect(options(a, root)).await?;
    out.insert(
        "protocol_version".into(),
        json!(conn.server().protocol_version),
    );
    let (c, tool, args) = (
        conn.clone(),
        Arc::<str>::from(a.tool.as_str()),
        a.args.clone(),
    );
    let call = move || {
        let (conn, tool, args) = (c.clone(), tool.clone(), args.clone());
        async move {
            let r = conn.call_tool(&tool, args, CallOptions::default()).await;
            anyhow::ensure!(
                r.state == CallState::Completed,
                "call failed: {:?}",
                r.error
            );
            Ok(())
        }
    };
    measure(a, call, out).await?;
    conn.close().await;
    Ok(())
}

/// The baseline: the least a pipe driver can do.
struct Raw {
    child: tokio::process::Child,
    stdin: Mutex<tokio::process::ChildStdin>,
    pending: Arc<std::sync::Mutex<HashMap<u64, oneshot::Sender<()>>>>,
    next: AtomicU64,
    router: tokio::task::JoinHandle<()>,
}

impl Raw {
    /// Spawns the server and does the legacy handshake inline, then hands stdout to
    /// a router task that completes whichever call an answer's id names.
    async fn connect(cmd: &[String]) -> anyhow::Result<Raw> {
        let mut child = tokio::process::Command::new(&cmd[0])
            .args(&cmd[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}});
        stdin.write_all(format!("{init}\n").as_bytes()).await?;
        anyhow::ensure!(
            lines.next_line().await?.is_some(),
            "no answer to initialize"
        );
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await?;
        let pending: Arc<std::sync::Mutex<HashMap<u64, oneshot::Sender<()>>>> = Default::default();
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
        Ok(Raw {
            child,
            stdin: Mutex::new(stdin),
            pending,
            next: AtomicU64::new(1),
            router,
        })
    }

    async fn call(&self, tool: &str, args: &Value) -> anyhow::Result<()> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let line = format!(
            "{}\n",
            json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}})
        );
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        {
            let mut w = self.stdin.lock().await;
            w.write_all(line.as_bytes()).await?;
            w.flush().await?;
        }
        Ok(rx.await?)
    }
}

impl Raw {
    /// Kills the server and waits until it is reaped, as the other modes' close
    /// does, so the next cold start does not share the CPU with its exit.
    async fn close(mut self) {
        let _ = self.child.kill().await;
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        self.router.abort();
    }
}

async fn bench_raw(a: &Args, out: &mut serde_json::Map<String, Value>) -> anyhow::Result<()> {
    cold_start(
        a,
        || async {
            let t = Instant::now();
            let raw = Raw::connect(&a.cmd).await?;
            let took = t.elapsed();
            raw.close().await;
            Ok(took)
        },
        out,
    )
    .await?;
    let raw = Arc::new(Raw::connect(&a.cmd).await?);
    let (tool, args) = (Arc::<str>::from(a.tool.as_str()), Arc::new(a.args.clone()));
    let call = move || {
        let (raw, tool, args) = (raw.clone(), tool.clone(), args.clone());
        async move { raw.call(&tool, &args).await }
    };
    measure(a, call, out).await
}

/// The official Rust SDK's client (`rmcp`), with its defaults: legacy `initialize`,
/// its own child-process transport (stderr discarded, as `raw` does). Also returns
/// the server's pid, for [`gone`].
async fn rmcp_connect(a: &Args) -> anyhow::Result<(RunningService<RoleClient, ()>, Option<u32>)> {
    let mut cmd = tokio::process::Command::new(&a.cmd[0]);
    cmd.args(&a.cmd[1..]);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()?;
    let pid = transport.id();
    let client = ().serve(transport).await?;
    Ok((client, pid))
}

/// rmcp kills its server from a detached task once the service ends; waiting until
/// the process is reaped keeps the next cold start off a CPU shared with its exit.
async fn gone(pid: Option<u32>) {
    let Some(pid) = pid else { return };
    let proc = std::path::PathBuf::from(format!("/proc/{pid}"));
    let until = Instant::now() + Duration::from_secs(5);
    while proc.exists() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

async fn bench_rmcp(a: &Args, out: &mut serde_json::Map<String, Value>) -> anyhow::Result<()> {
    cold_start(
        a,
        || async {
            let t = Instant::now();
            let (client, pid) = rmcp_connect(a).await?;
            let took = t.elapsed();
            client.cancel().await?;
            gone(pid).await;
            Ok(took)
        },
        out,
    )
    .await?;
    let (client, _) = rmcp_connect(a).await?;
    if let Some(info) = client.peer().peer_info() {
        out.insert("protocol_version".into(), json!(info.protocol_version));
    }
    let params = CallToolRequestParams::new(a.tool.clone()).with_arguments(
        a.args
            .as_object()
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("--args must be a JSON object"))?,
    );
    let peer = client.peer().clone();
    let call = move || {
        let (peer, params) = (peer.clone(), params.clone());
        async move {
            let r = peer.call_tool(params).await?;
            anyhow::ensure!(r.is_error != Some(true), "call failed: {r:?}");
            Ok(())
        }
    };
    measure(a, call, out).await?;
    client.cancel().await?;
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
