//! `cargo bench -p gatehouse-cli --bench http` (or `scripts/bench-http.sh`):
//! how fast `gatehouse serve` answers over loopback HTTP, next to the official
//! SDKs' stateless Streamable HTTP servers, all driven by one load generator
//! in the same run:
//!
//! - `gatehouse serve` on a scratch SQLite site, with a key and keyless
//!   (`public`), and on PostgreSQL (when `GATEHOUSE_TEST_PG_URL` is set), one
//!   instance and two instances on the same database (the connections split
//!   between them): `content_read {"slug":"welcome"}`, which reads the entry
//!   and commits its audit entry before answering. After each figure the
//!   audit chain must verify and hold exactly one entry per answered call;
//!   the key's argon2 verifications are read from `/metrics` (one per
//!   instance expected: the first request);
//! - the TypeScript SDK (`tests/interop/echo_http_server.mjs`), the Python
//!   SDK (`tests/interop/echo_http_server.py`) and rmcp
//!   (`tests/interop/rmcp_echo_http`, its binary given as `BENCH_RMCP_ECHO`),
//!   each with an `echo` tool; rmcp's also as two instances with the
//!   connections split between them, what a second instance of a server that
//!   shares nothing gives on this machine (the floor for gatehouse's two).
//!
//! The load generator ([`drive`]) holds one keep-alive HTTP/1.1 connection
//! per client on one thread and sends each client's next request as soon as
//! its previous answer came: 1, 16 and 64 clients (`BENCH_CLIENTS`). Per
//! figure: calls/s, p50/p99 latency, the servers' CPU per call (user +
//! system from `/proc`, PostgreSQL's backends excluded) and their resident
//! memory after the figure (and the peak). Beside them, so that a figure can
//! be read against what this machine could give: the CPU per call of
//! PostgreSQL (every child of the postmaster whose pid is `BENCH_PG_PID`;
//! scripts/bench-http.sh sets it) and of the load generator itself, and the
//! ceiling they imply, the machine's cores divided by the sum of the three
//! (calls/s if nothing else ran); each round prints the load average.
//! `BENCH_RUNS` rounds (default 3)
//! of `BENCH_CALLS` calls per figure (default 5000); `BENCH_ONLY` keeps the
//! targets whose name contains it (or one of its `|`-separated parts). It prints figures and asserts nothing
//! about speed.
//!
//! `BENCH_INSTANCE_CPU=F` (a fraction of a core, such as `0.3`) caps every
//! server process's CPU at `F` of a core, each in a CPU cgroup of its own
//! (cgroup v2 `cpu.max`, else v1's `cpu.cfs_quota_us`; needs root): each
//! instance then has a core share of its own, as on a machine of its own,
//! which is what two instances behind a load balancer have and what one
//! 2-core machine running both, PostgreSQL and the load generator does not.
//!
//! The requests are the 2025-06-18 revision's (`MCP-Protocol-Version`
//! header, no handshake): every server here serves them statelessly.

#[path = "mcp/site.rs"]
mod site;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WARM_UP: u64 = 200;

/// One started server process.
struct Instance {
    child: Child,
    addr: SocketAddr,
    metrics: Option<SocketAddr>,
    /// Its CPU cap, removed once it has stopped.
    _cap: Option<CpuCap>,
}

/// A CPU cgroup holding one server process, at `BENCH_INSTANCE_CPU` of a
/// core; removed on drop (once its process has ended).
struct CpuCap(PathBuf);

impl CpuCap {
    /// The cap `BENCH_INSTANCE_CPU` asks for, if any.
    fn share() -> Option<f64> {
        let share = std::env::var("BENCH_INSTANCE_CPU").ok()?;
        // Below a tenth, the quota (of a 10 ms period) is under the kernel's 1 ms minimum.
        let share: f64 = share
            .parse()
            .ok()
            .filter(|s| (0.1..=64.0).contains(s))
            .unwrap_or_else(|| {
                panic!("BENCH_INSTANCE_CPU={share}: a share of a core from 0.1 up, such as 0.3")
            });
        Some(share)
    }

    /// Moves `pid` (every thread of it) into a new cgroup capped at `share`
    /// of a core. Fails loudly: an uncapped figure must not pass for a capped one.
    fn apply(pid: u32, share: f64) -> CpuCap {
        // A short period: a process throttled while it holds a lock others
        // wait for (the audit head's row, on PostgreSQL) stalls them for the
        // rest of the period, which a machine of its own never does; the
        // default 100 ms period gave 43–82 ms p99 from that alone.
        const PERIOD_US: u64 = 10_000;
        let quota = (share * PERIOD_US as f64).round() as u64;
        let write = |dir: &Path, file: &str, value: String| {
            std::fs::write(dir.join(file), &value).unwrap_or_else(|e| {
                panic!(
                    "BENCH_INSTANCE_CPU: writing {value} to {}: {e}",
                    dir.join(file).display()
                )
            })
        };
        let name = format!("gatehouse-bench-{pid}");
        let v2 = Path::new("/sys/fs/cgroup");
        let dir = if std::fs::read_to_string(v2.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu"))
        {
            // Enabling the controller for children may already be done.
            let enabled = std::fs::write(v2.join("cgroup.subtree_control"), "+cpu");
            let dir = v2.join(name);
            std::fs::create_dir(&dir).expect("a cgroup for the instance (run as root)");
            assert!(
                dir.join("cpu.max").exists(),
                "BENCH_INSTANCE_CPU: new cgroups get no cpu controller (enabling it: {enabled:?})"
            );
            write(&dir, "cpu.max", format!("{quota} {PERIOD_US}"));
            dir
        } else {
            let dir = v2.join("cpu").join(name);
            std::fs::create_dir(&dir).expect("a cgroup for the instance (run as root)");
            write(&dir, "cpu.cfs_period_us", PERIOD_US.to_string());
            write(&dir, "cpu.cfs_quota_us", quota.to_string());
            dir
        };
        write(&dir, "cgroup.procs", pid.to_string());
        CpuCap(dir)
    }
}

impl Drop for CpuCap {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir(&self.0) {
            eprintln!("BENCH_INSTANCE_CPU: removing {}: {e}", self.0.display());
        }
    }
}

impl Instance {
    /// Starts `cmd` and waits for its "listening on http://ADDR/mcp" line on stderr.
    fn start(cmd: &mut Command, metrics: Option<SocketAddr>) -> Instance {
        let mut child = cmd
            .env("GATEHOUSE_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("server starts");
        let cap = CpuCap::share().map(|share| CpuCap::apply(child.id(), share));
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("server exited before listening"))
                .unwrap();
            if let Some(rest) = line.split("http://").nth(1)
                && let Some(addr) = rest.strip_suffix("/mcp")
            {
                break addr.parse().expect("a socket address");
            }
        };
        // Keep draining stderr so the server never blocks on it.
        std::thread::spawn(move || for _ in lines.by_ref() {});
        // Some print the line just before they bind (uvicorn).
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "nothing listens on {addr}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Instance {
            child,
            addr,
            metrics,
            _cap: cap,
        }
    }

    fn proc_field(&self, file: &str, key: &str) -> u64 {
        let text = std::fs::read_to_string(format!("/proc/{}/{file}", self.child.id()))
            .unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// Resident memory now and at its peak, KiB.
    fn rss_kib(&self) -> (u64, u64) {
        (
            self.proc_field("status", "VmRSS:"),
            self.proc_field("status", "VmHWM:"),
        )
    }

    /// User + system CPU time so far (every thread of the process).
    fn cpu(&self) -> Duration {
        proc_cpu(&self.child.id().to_string()).0
    }

    /// A counter from the instance's Prometheus metrics, if it serves them.
    fn metric(&self, name: &str) -> Option<u64> {
        use std::io::{Read, Write};
        let addr = self.metrics?;
        let mut s = std::net::TcpStream::connect(addr).ok()?;
        write!(
            s,
            "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
    }

    fn stop(mut self) {
        #[cfg(unix)]
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Instance {
    /// A figure that panicked (a chain that does not verify, say) leaves no
    /// server running, and its cgroup can then be removed.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// User + system CPU time so far of `/proc/PID` (every thread), and its parent's pid.
fn proc_cpu(pid: &str) -> (Duration, u32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    let ticks = num(11) + num(12);
    (Duration::from_millis(ticks * 10), num(1) as u32)
}

/// CPU time so far of every child of the postmaster `BENCH_PG_PID` (its
/// backends, WAL writer and checkpointer), or zero without one. A backend that
/// exits during a figure takes its time with it: the instances' pools keep
/// theirs open, so that is rare.
fn pg_cpu() -> Duration {
    let Ok(postmaster) = std::env::var("BENCH_PG_PID") else {
        return Duration::ZERO;
    };
    let Ok(postmaster) = postmaster.trim().parse::<u32>() else {
        return Duration::ZERO;
    };
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Duration::ZERO;
    };
    dir.filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.bytes().all(|b| b.is_ascii_digit()))
        .map(|pid| proc_cpu(&pid))
        .filter(|&(_, ppid)| ppid == postmaster)
        .map(|(cpu, _)| cpu)
        .sum()
}

/// This process's CPU time so far: the load generator (its one thread does
/// all the driving).
fn driver_cpu() -> Duration {
    proc_cpu("self").0
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

type Audit = Box<dyn Fn() -> u64>;

/// What to start and which call to make.
struct Target {
    name: String,
    start: Box<dyn Fn() -> Vec<Instance>>,
    /// The `params` of call number `i`.
    params: fn(u64) -> Value,
    bearer: Option<String>,
    /// The audit entries stored so far (gatehouse only).
    audit: Option<Audit>,
}

/// One figure: one target, one number of clients, one round.
#[derive(Debug, Clone, Default)]
struct Figures {
    calls_s: f64,
    p50_us: f64,
    p99_us: f64,
    cpu_us: f64,
    /// PostgreSQL's CPU per call (zero on SQLite and for the echo servers).
    pg_cpu_us: f64,
    /// The load generator's CPU per call.
    driver_cpu_us: f64,
    rss_mib: f64,
    peak_rss_mib: f64,
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_micros() as f64
}

/// One client's connection: a request out, its whole answer in.
struct Conn {
    stream: TcpStream,
    head: String,
    buf: Vec<u8>,
}

impl Conn {
    async fn open(addr: SocketAddr, bearer: Option<&str>) -> Conn {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).unwrap();
        let auth = bearer
            .map(|k| format!("Authorization: Bearer {k}\r\n"))
            .unwrap_or_default();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n{auth}"
        );
        Conn {
            stream,
            head,
            buf: Vec::with_capacity(16 * 1024),
        }
    }

    /// Sends one JSON-RPC request and returns the JSON-RPC answer.
    async fn call(&mut self, body: &[u8]) -> Value {
        let mut req = Vec::with_capacity(self.head.len() + body.len() + 32);
        req.extend_from_slice(self.head.as_bytes());
        req.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        req.extend_from_slice(body);
        self.stream.write_all(&req).await.expect("send");
        // Headers.
        let (status, head_len, length, chunked) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut resp = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(n) = resp.parse(&self.buf).expect("an HTTP answer") {
                let mut length = None;
                let mut chunked = false;
                for h in resp.headers.iter() {
                    if h.name.eq_ignore_ascii_case("content-length") {
                        length = std::str::from_utf8(h.value)
                            .ok()
                            .and_then(|v| v.parse().ok());
                    } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                        chunked = h.value.eq_ignore_ascii_case(b"chunked");
                    }
                }
                break (resp.code.unwrap_or(0), n, length, chunked);
            }
            self.fill().await;
        };
        self.buf.drain(..head_len);
        let body = if let Some(len) = length {
            while self.buf.len() < len {
                self.fill().await;
            }
            self.buf.drain(..len).collect::<Vec<u8>>()
        } else {
            assert!(chunked, "an answer with neither a length nor chunks");
            let mut body = Vec::new();
            loop {
                let line_end = loop {
                    if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                        break i;
                    }
                    self.fill().await;
                };
                let size_text = String::from_utf8_lossy(&self.buf[..line_end]).to_string();
                let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16)
                    .expect("a chunk size");
                while self.buf.len() < line_end + 2 + size + 2 {
                    self.fill().await;
                }
                body.extend_from_slice(&self.buf[line_end + 2..line_end + 2 + size]);
                self.buf.drain(..line_end + 2 + size + 2);
                if size == 0 {
                    break body;
                }
            }
        };
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        // A JSON body, or an event stream whose data line is the answer.
        let text = String::from_utf8(body).expect("UTF-8");
        let json = if text.trim_start().starts_with('{') {
            text
        } else {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .find(|d| d.contains("\"id\""))
                .expect("an answer in the stream")
                .to_string()
        };
        serde_json::from_str(&json).expect("a JSON answer")
    }

    async fn fill(&mut self) {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk).await.expect("read");
        assert!(n > 0, "the server closed the connection");
        self.buf.extend_from_slice(&chunk[..n]);
    }
}

fn check(r: &Value) {
    assert!(r["result"].is_object(), "{r}");
    assert!(
        r["result"]["isError"] == json!(false) || r["result"]["isError"].is_null(),
        "{r}"
    );
}

fn request(id: u64, params: Value) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
    )
    .unwrap()
}

/// `calls` calls over `clients` connections (spread over `addrs` in turn),
/// each client sending its next request when its answer came. Returns the
/// wall time and every call's latency.
fn drive(
    addrs: &[SocketAddr],
    bearer: Option<&str>,
    params: fn(u64) -> Value,
    clients: u64,
    calls: u64,
    first_id: u64,
) -> (Duration, Vec<Duration>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let local = tokio::task::LocalSet::new();
        local
            .run_until(async {
                let mut conns = Vec::new();
                for c in 0..clients {
                    conns.push(Conn::open(addrs[c as usize % addrs.len()], bearer).await);
                }
                let next = Rc::new(std::cell::Cell::new(0u64));
                let start = Instant::now();
                let mut tasks = Vec::new();
                for mut conn in conns {
                    let next = next.clone();
                    tasks.push(tokio::task::spawn_local(async move {
                        let mut lat = Vec::new();
                        loop {
                            let i = next.get();
                            if i >= calls {
                                return lat;
                            }
                            next.set(i + 1);
                            let id = first_id + i;
                            let body = request(id, params(id));
                            let sent = Instant::now();
                            check(&conn.call(&body).await);
                            lat.push(sent.elapsed());
                        }
                    }));
                }
                let mut lat = Vec::with_capacity(calls as usize);
                for t in tasks {
                    lat.extend(t.await.unwrap());
                }
                (start.elapsed(), lat)
            })
            .await
    })
}

/// One round of one target: every number of clients on the same instances.
fn bench(t: &Target, n: u64, clients: &[u64]) -> Vec<(u64, Figures)> {
    let before = t.audit.as_ref().map(|a| a());
    let instances = (t.start)();
    let addrs: Vec<SocketAddr> = instances.iter().map(|i| i.addr).collect();
    let bearer = t.bearer.as_deref();
    drive(&addrs, bearer, t.params, addrs.len() as u64, WARM_UP, 1);
    let mut answered = WARM_UP;
    let mut out = Vec::new();
    for (k, &c) in clients.iter().enumerate() {
        let cpu: Duration = instances.iter().map(Instance::cpu).sum();
        let (pg, driver) = (pg_cpu(), driver_cpu());
        let (wall, mut lat) = drive(&addrs, bearer, t.params, c, n, 1_000_000 * (k as u64 + 1));
        let cpu = instances.iter().map(Instance::cpu).sum::<Duration>() - cpu;
        let pg = pg_cpu().saturating_sub(pg);
        let driver = driver_cpu().saturating_sub(driver);
        let per_call = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
        answered += n;
        lat.sort();
        let (rss, peak) = instances
            .iter()
            .map(Instance::rss_kib)
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        out.push((
            c,
            Figures {
                calls_s: n as f64 / wall.as_secs_f64(),
                p50_us: pct(&lat, 0.5),
                p99_us: pct(&lat, 0.99),
                cpu_us: per_call(cpu),
                pg_cpu_us: per_call(pg),
                driver_cpu_us: per_call(driver),
                rss_mib: rss as f64 / 1024.0,
                peak_rss_mib: peak as f64 / 1024.0,
            },
        ));
    }
    let argon2: Vec<u64> = instances
        .iter()
        .filter_map(|i| i.metric("gatehouse_key_verifications_total"))
        .collect();
    if !argon2.is_empty() {
        println!(
            "{}: argon2 verifications per instance over {answered} calls: {argon2:?}",
            t.name
        );
    }
    for i in instances {
        i.stop();
    }
    if let (Some(audit), Some(before)) = (&t.audit, before) {
        assert_eq!(
            audit() - before,
            answered,
            "{}: every answered call has its audit entry",
            t.name
        );
    }
    out
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn read_welcome(_: u64) -> Value {
    json!({"name": "content_read", "arguments": {"slug": "welcome"}})
}

fn echo(i: u64) -> Value {
    json!({"name": "echo", "arguments": {"message": format!("hello {i}")}})
}

fn gatehouse_target(
    name: &str,
    site: &Path,
    config: &Path,
    key: Option<&str>,
    instances: usize,
) -> Target {
    let (s, c) = (site.to_path_buf(), config.to_path_buf());
    let start = Box::new(move || {
        (0..instances)
            .map(|_| {
                let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
                let mut cmd = Command::new(site::bin());
                cmd.arg("--site")
                    .arg(&s)
                    .args(["serve", "--listen", "127.0.0.1:0", "--rate", "1000000"])
                    .arg("--metrics-listen")
                    .arg(metrics.to_string())
                    .env("GATEHOUSE_CONFIG_DIR", &c)
                    .env_remove("GATEHOUSE_API_KEY");
                Instance::start(&mut cmd, Some(metrics))
            })
            .collect()
    });
    let (s, c) = (site.to_path_buf(), config.to_path_buf());
    Target {
        name: name.into(),
        start,
        params: read_welcome,
        bearer: key.map(str::to_string),
        audit: Some(Box::new(move || {
            let v = site::verify(&s, &c);
            assert_eq!(v["ok"], true, "the audit chain must verify: {v}");
            v["entries"].as_u64().unwrap()
        })),
    }
}

fn peer(name: &str, program: PathBuf, args: Vec<String>) -> Target {
    peers(name, program, args, 1)
}

/// `instances` copies of a peer, the connections split between them as for
/// gatehouse's two instances: what this machine gives a second instance of a
/// server that shares nothing.
fn peers(name: &str, program: PathBuf, args: Vec<String>, instances: usize) -> Target {
    Target {
        name: name.into(),
        start: Box::new(move || {
            (0..instances)
                .map(|_| {
                    let mut cmd = Command::new(&program);
                    cmd.args(&args).arg(free_port().to_string());
                    Instance::start(&mut cmd, None)
                })
                .collect()
        }),
        params: echo,
        bearer: None,
        audit: None,
    }
}

fn main() {
    let n = site::env_num("BENCH_CALLS", 5000);
    let runs = site::env_num("BENCH_RUNS", 3).max(1);
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let clients: Vec<u64> = std::env::var("BENCH_CLIENTS")
        .unwrap_or_else(|_| "1,16,64".into())
        .split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config");

    let mut targets = Vec::new();
    let (sqlite, key) = site::make_site(tmp.path(), &config, "sqlite", None);
    targets.push(gatehouse_target(
        "gatehouse serve sqlite content_read",
        &sqlite,
        &config,
        Some(&key),
        1,
    ));
    targets.push(gatehouse_target(
        "gatehouse serve sqlite content_read public",
        &sqlite,
        &config,
        None,
        1,
    ));
    if let Some(base) = gatehouse_test_pg::base_url() {
        let url = site::pg_database(&base, "http");
        let (pg, key) = site::make_site(tmp.path(), &config, "postgres", Some(&url));
        targets.push(gatehouse_target(
            "gatehouse serve postgres content_read",
            &pg,
            &config,
            Some(&key),
            1,
        ));
        targets.push(gatehouse_target(
            "gatehouse serve postgres content_read, 2 instances",
            &pg,
            &config,
            Some(&key),
            2,
        ));
    }
    let interop = site::repo().join("tests/interop");
    if interop
        .join("node_modules/@modelcontextprotocol/sdk")
        .exists()
    {
        targets.push(peer(
            "TypeScript SDK echo",
            "node".into(),
            vec![interop.join("echo_http_server.mjs").display().to_string()],
        ));
    } else {
        println!("(TypeScript SDK echo skipped: run scripts/interop-setup.sh)");
    }
    let python = interop.join(".venv/bin/python");
    if python.exists() {
        targets.push(peer(
            "Python SDK echo",
            python,
            vec![interop.join("echo_http_server.py").display().to_string()],
        ));
    } else {
        println!("(Python SDK echo skipped: run scripts/interop-setup.sh)");
    }
    match std::env::var_os("BENCH_RMCP_ECHO") {
        Some(bin) => {
            targets.push(peer("rmcp echo", bin.clone().into(), Vec::new()));
            targets.push(peers("rmcp echo, 2 instances", bin.into(), Vec::new(), 2));
        }
        None => println!(
            "(rmcp echo skipped: BENCH_RMCP_ECHO names its binary; scripts/bench-http.sh builds it)"
        ),
    }
    targets.retain(|t| only.split('|').any(|o| t.name.contains(o)));

    if let Some(share) = CpuCap::share() {
        println!("every server process capped at {share} of a core (BENCH_INSTANCE_CPU)");
    }
    let mut rows: Vec<(String, u64, Figures)> = Vec::new();
    for round in 1..=runs {
        println!("round {round}: load average {}", load_average());
        for t in &targets {
            for (c, f) in bench(t, n, &clients) {
                println!(
                    "round {round}: {}",
                    json!({"target": t.name, "clients": c, "calls_s": f.calls_s.round(),
                        "p50_us": f.p50_us, "p99_us": f.p99_us, "cpu_us_per_call": (f.cpu_us * 10.0).round() / 10.0,
                        "pg_cpu_us_per_call": (f.pg_cpu_us * 10.0).round() / 10.0,
                        "driver_cpu_us_per_call": (f.driver_cpu_us * 10.0).round() / 10.0,
                        "rss_mib": (f.rss_mib * 10.0).round() / 10.0, "peak_rss_mib": (f.peak_rss_mib * 10.0).round() / 10.0})
                );
                rows.push((t.name.clone(), c, f));
            }
        }
    }
    println!("load average at the end {}", load_average());
    println!("\n{n} calls per figure; medians of {runs} round(s), (min–max) over rounds:");
    table(&targets, &clients, &rows);
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn table(targets: &[Target], clients: &[u64], rows: &[(String, u64, Figures)]) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    println!(
        "| server | clients | calls/s (min–max) | p50/p99 µs | CPU µs/call server/PostgreSQL/driver | CPU ceiling calls/s | RSS MiB after (peak) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for t in targets {
        for &c in clients {
            let of: Vec<&Figures> = rows
                .iter()
                .filter(|(name, k, _)| *name == t.name && *k == c)
                .map(|(_, _, f)| f)
                .collect();
            if of.is_empty() {
                continue;
            }
            let m = |k: fn(&Figures) -> f64| median(of.iter().map(|f| k(f)).collect());
            let lo = of.iter().map(|f| f.calls_s).fold(f64::INFINITY, f64::min);
            let hi = of.iter().map(|f| f.calls_s).fold(0.0, f64::max);
            let ceiling = cores * 1e6 / m(|f| f.cpu_us + f.pg_cpu_us + f.driver_cpu_us).max(1.0);
            println!(
                "| {} | {c} | {:.0} ({lo:.0}–{hi:.0}) | {:.0}/{:.0} | {:.0}/{:.0}/{:.0} | {ceiling:.0} | {:.1} ({:.1}) |",
                t.name,
                m(|f| f.calls_s),
                m(|f| f.p50_us),
                m(|f| f.p99_us),
                m(|f| f.cpu_us),
                m(|f| f.pg_cpu_us),
                m(|f| f.driver_cpu_us),
                m(|f| f.rss_mib),
                m(|f| f.peak_rss_mib),
            );
        }
    }
}
