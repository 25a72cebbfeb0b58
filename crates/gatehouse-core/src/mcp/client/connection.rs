//! One connection to one sandboxed MCP server child.
//!
//! Tasks, all owned by the connection (none by a request):
//! - the **supervisor** owns the child: it notices exit, runs the watchdog,
//!   performs every kill and the teardown, and writes the final record;
//! - the **stdout reader** frames lines, routes responses to pending calls by
//!   id, resets inactivity timers on progress, answers `ping`, refuses other
//!   server requests, and counts non-JSON lines as protocol violations;
//! - the **stderr reader** drains into the [`StderrTail`] until end-of-file;
//!
//! Requests are written to the child's stdin by the calling task itself (no
//! writer task to hop through): each caller queues its line in an outbox, and
//! whoever holds stdin writes everything queued at once, so concurrent calls
//! share one `write` instead of taking turns.
//!
//! Failure rules: a call's own deadline kills the group (the server is stuck);
//! a kill, an exit or a protocol failure ends every pending call; a pending call
//! that may write ends `outcome_unknown`, a read-only one `failed`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::{Notify, Semaphore, mpsc, oneshot};
use tokio::time::Instant;

use super::frame::LineDecoder;
use super::lifecycle::{
    CallRecord, CallRecorder, CallState, CancelToken, ConnectionRecord, EffectClass,
    StderrCounters, StreamEnd, new_id, now_ms,
};
use super::protocol::{self, Era, Incoming, RpcError};
use crate::error::{Error, ErrorBody, Result, codes};
use crate::sandbox::stderr::{self, StderrBudget, StderrTail, TailLimits};
use crate::sandbox::{self, ChildSpec, ExitInfo, Grace, Isolation, Profile, Sandboxed, ScratchRoot};

/// Limits of one connection. Defaults suit an interactive admin tool.
#[derive(Debug, Clone)]
pub struct ClientLimits {
    /// Calls on the wire at once; more wait for a slot.
    pub max_in_flight: usize,
    /// Longest stdout line accepted.
    pub max_frame: usize,
    /// How long `server/discover` may stay unanswered before the server is
    /// taken for legacy.
    pub probe_timeout: Duration,
    /// Deadline of each negotiation step and of `tools/list`.
    pub setup_timeout: Duration,
    /// Default total deadline of a call (progress never extends it).
    pub call_timeout: Duration,
    /// Default inactivity timeout of a call (progress resets it).
    pub inactivity_timeout: Option<Duration>,
    /// Resident memory ceiling of the whole process group.
    pub max_rss_bytes: Option<u64>,
    /// CPU time ceiling of the whole process group.
    pub max_cpu: Option<Duration>,
    pub watchdog_interval: Duration,
    pub grace: Grace,
    pub stderr: TailLimits,
}

impl Default for ClientLimits {
    fn default() -> Self {
        Self {
            max_in_flight: 16,
            max_frame: 8 * 1024 * 1024,
            probe_timeout: Duration::from_secs(5),
            setup_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(30),
            inactivity_timeout: None,
            max_rss_bytes: None,
            max_cpu: None,
            watchdog_interval: Duration::from_millis(200),
            grace: Grace::default(),
            stderr: TailLimits::default(),
        }
    }
}

/// Everything `connect` needs.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// The stored connection's name, if any (goes into records).
    pub name: Option<String>,
    pub spec: ChildSpec,
    pub limits: ClientLimits,
    pub scratch_root: ScratchRoot,
    /// How the child is confined; its memory ceiling defaults to `limits.max_rss_bytes`.
    pub profile: Profile,
    pub recorder: Arc<dyn CallRecorder>,
    pub stderr_pool: Arc<StderrBudget>,
}

impl ConnectOptions {
    pub fn new(
        spec: ChildSpec,
        scratch_root: ScratchRoot,
        recorder: Arc<dyn CallRecorder>,
    ) -> Self {
        Self {
            name: None,
            spec,
            limits: ClientLimits::default(),
            scratch_root,
            profile: Profile::default(),
            recorder,
            stderr_pool: StderrBudget::process(),
        }
    }
}

/// Per-call options.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Total deadline; the connection's default when `None`.
    pub timeout: Option<Duration>,
    /// Inactivity timeout; the connection's default when `None`.
    pub inactivity: Option<Duration>,
    pub cancel: Option<CancelToken>,
}

/// What the server said about itself.
#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    pub era: Era,
    pub protocol_version: String,
    pub name: Option<String>,
    pub version: Option<String>,
    pub capabilities: Value,
    pub instructions: Option<String>,
}

/// A tool as listed, with the effect class its hint implies.
#[derive(Debug, Clone, Serialize)]
pub struct ToolInfo {
    pub name: String,
    pub annotations: Value,
    pub effect: EffectClass,
}

/// How a call ended, for the caller.
#[derive(Debug, Clone, Serialize)]
pub struct CallOutcome {
    pub call_id: String,
    pub state: CallState,
    pub result: Option<Value>,
    pub error: Option<ErrorBody>,
    pub record: CallRecord,
}

/// Why the connection ended; every pending call fails with it.
#[derive(Debug, Clone)]
enum Closed {
    Timeout {
        tool: String,
        after: Duration,
    },
    Exited {
        exit: Option<ExitInfo>,
        excerpt: String,
    },
    Resource {
        ceiling: String,
        limit: String,
        observed: String,
    },
    Protocol {
        what: String,
    },
    Shutdown,
    Dropped,
}

impl Closed {
    fn reason(&self) -> &'static str {
        match self {
            Closed::Timeout { .. } => "timeout",
            Closed::Exited { .. } => "exited",
            Closed::Resource { .. } => "resource",
            Closed::Protocol { .. } => "protocol",
            Closed::Shutdown => "closed",
            Closed::Dropped => "dropped",
        }
    }

    fn error(&self) -> Error {
        match self {
            Closed::Timeout { tool, after } => Error::new(
                codes::CALL_TIMEOUT,
                format!(
                    "a call to {tool} passed its {} deadline; the server's process group was killed",
                    humantime::format_duration(*after)
                ),
            )
            .hint("raise the connection's --timeout if the tool is legitimately slow"),
            Closed::Exited { exit, excerpt } => Error::new(
                codes::SERVER_EXITED,
                format!("the server exited ({})", describe_exit(exit.as_ref())),
            )
            .hint("see the stderr excerpt in the detail")
            .detail(json!({"exit": exit, "stderr": excerpt})),
            Closed::Resource {
                ceiling,
                limit,
                observed,
            } => Error::new(
                codes::RESOURCE_LIMIT,
                format!("the server's process group passed its {ceiling} ceiling ({observed} > {limit}) and was killed"),
            )
            .hint(format!("raise the connection's {ceiling} limit if this use is expected"))
            .detail(json!({"ceiling": ceiling, "limit": limit, "observed": observed})),
            Closed::Protocol { what } => {
                Error::new(codes::PROTOCOL_VIOLATION, format!("the server broke the protocol: {what}"))
                    .hint("the server wrote something other than MCP messages on stdout")
            }
            Closed::Shutdown => Error::new(codes::CONNECTION_CLOSED, "the connection was closed"),
            Closed::Dropped => Error::new(codes::CONNECTION_CLOSED, "the connection was dropped"),
        }
    }
}

fn describe_exit(exit: Option<&ExitInfo>) -> String {
    match exit {
        Some(ExitInfo { code: Some(c), .. }) => format!("exit code {c}"),
        Some(ExitInfo {
            signal: Some(s), ..
        }) => format!("killed by signal {s}"),
        _ => "exit status not observed".to_string(),
    }
}

enum Reply {
    Answer(std::result::Result<Value, RpcError>),
    Closed(Closed),
}

struct Pending {
    tx: oneshot::Sender<Reply>,
    activity: Arc<Notify>,
}

#[derive(Default)]
struct PendingTable {
    map: HashMap<u64, Pending>,
    /// Once set, nothing new is registered: the connection is over.
    closed: Option<Closed>,
}

enum Command {
    Kill(Closed),
    Shutdown(oneshot::Sender<()>),
}

struct Shared {
    id: String,
    name: Option<String>,
    program: String,
    pid: i32,
    isolation: Isolation,
    limits: ClientLimits,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    /// Whole lines waiting for whoever next holds `stdin`.
    outbox: Mutex<Vec<u8>>,
    commands: mpsc::UnboundedSender<Command>,
    pending: Mutex<PendingTable>,
    next_id: AtomicU64,
    slots: Semaphore,
    tools: Mutex<HashMap<String, EffectClass>>,
    server: Mutex<Option<ServerInfo>>,
    meta: Mutex<Value>,
    stderr: StderrTail,
    recorder: Arc<dyn CallRecorder>,
    violations: AtomicU64,
    stdout_end: Mutex<StreamEnd>,
    stderr_end: Mutex<StreamEnd>,
    exit: Mutex<Option<ExitInfo>>,
    started_at_ms: i64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    /// Writes one line to the child's stdin, with any queued by concurrent
    /// callers; false once stdin is closed or broken. Lines stay whole and in
    /// queue order; an earlier holder may already have written ours.
    async fn write_line(&self, line: &[u8]) -> bool {
        lock(&self.outbox).extend_from_slice(line);
        let mut stdin = self.stdin.lock().await;
        let Some(w) = stdin.as_mut() else {
            return false;
        };
        let batch = std::mem::take(&mut *lock(&self.outbox));
        if !batch.is_empty() && w.write_all(&batch).await.is_err() {
            *stdin = None;
            return false;
        }
        true
    }

    /// Writes in the background, for callers that must not wait on the child
    /// (the stdout reader, drop handlers).
    fn send_line(self: &Arc<Self>, line: Vec<u8>) {
        let s = self.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                s.write_line(&line).await;
            });
        }
    }

    fn era(&self) -> Option<Era> {
        lock(&self.server).as_ref().map(|s| s.era)
    }

    /// Registers a pending request, unless the connection is over.
    fn register(
        &self,
        id: u64,
    ) -> std::result::Result<(oneshot::Receiver<Reply>, Arc<Notify>), Closed> {
        let mut table = lock(&self.pending);
        if let Some(closed) = &table.closed {
            return Err(closed.clone());
        }
        let (tx, rx) = oneshot::channel();
        let activity = Arc::new(Notify::new());
        table.map.insert(
            id,
            Pending {
                tx,
                activity: activity.clone(),
            },
        );
        Ok((rx, activity))
    }

    fn unregister(&self, id: u64) {
        lock(&self.pending).map.remove(&id);
    }

    /// Ends the connection for every pending call (first reason wins).
    fn close_all(&self, why: Closed) {
        let drained: Vec<Pending> = {
            let mut table = lock(&self.pending);
            if table.closed.is_none() {
                table.closed = Some(why.clone());
            }
            table.map.drain().map(|(_, p)| p).collect()
        };
        let why = lock(&self.pending).closed.clone().unwrap_or(why);
        for p in drained {
            let _ = p.tx.send(Reply::Closed(why.clone()));
        }
    }

    fn closed(&self) -> Option<Closed> {
        lock(&self.pending).closed.clone()
    }

    fn stderr_counters(&self) -> StderrCounters {
        let s = self.stderr.snapshot_counters();
        StderrCounters {
            bytes_seen: s.0,
            bytes_retained: s.1,
            truncated: s.2,
        }
    }

    /// An uncounted request (negotiation, listing): waits for the answer or `timeout`.
    async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Option<Reply>> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (rx, _) = match self.register(id) {
            Ok(r) => r,
            Err(closed) => return Ok(Some(Reply::Closed(closed))),
        };
        let line = protocol::request_line(id, method, &params);
        let answered = tokio::time::timeout(timeout, async {
            self.write_line(&line).await;
            rx.await
        });
        match answered.await {
            Ok(Ok(reply)) => Ok(Some(reply)),
            Ok(Err(_)) => Ok(Some(Reply::Closed(
                self.closed().unwrap_or(Closed::Dropped),
            ))),
            Err(_) => {
                self.unregister(id);
                Ok(None)
            }
        }
    }

    fn connection_record(&self, end: Option<&Closed>) -> ConnectionRecord {
        let server = lock(&self.server).clone();
        let ended = end.is_some();
        ConnectionRecord {
            connection_id: self.id.clone(),
            name: self.name.clone(),
            program: self.program.clone(),
            pid: Some(self.pid),
            era: server.as_ref().map(|s| s.era.as_str().to_string()),
            protocol_version: server.as_ref().map(|s| s.protocol_version.clone()),
            server_name: server.as_ref().and_then(|s| s.name.clone()),
            server_version: server.as_ref().and_then(|s| s.version.clone()),
            end_reason: end.map(|c| c.reason().to_string()),
            exit: *lock(&self.exit),
            stderr: self.stderr_counters(),
            stderr_excerpt: ended.then(|| self.stderr.excerpt().text),
            stdout_end: *lock(&self.stdout_end),
            stderr_end: *lock(&self.stderr_end),
            protocol_violations: self.violations.load(Ordering::Relaxed),
            started_at_ms: self.started_at_ms,
            ended_at_ms: ended.then(now_ms),
        }
    }
}

/// A live connection. Cheap to clone; calls may run concurrently from clones.
/// Dropping the last clone kills the server's process group.
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
    control: Arc<Control>,
}

struct Control {
    supervisor: Mutex<Option<tokio::task::JoinHandle<ConnectionRecord>>>,
    /// Dropped with the last handle: the supervisor then kills the group.
    _alive: oneshot::Sender<()>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.shared.id)
            .field("program", &self.shared.program)
            .field("pid", &self.shared.pid)
            .finish()
    }
}

impl Connection {
    /// Spawns the server in the sandbox, negotiates the protocol revision
    /// (`server/discover` first, `initialize` for a legacy server) and lists its tools.
    #[tracing::instrument(skip_all, fields(program = %opts.spec.program))]
    pub async fn connect(opts: ConnectOptions) -> Result<Connection> {
        let mut profile = opts.profile.clone();
        profile.max_memory_bytes = profile.max_memory_bytes.or(opts.limits.max_rss_bytes);
        let mut child = sandbox::spawn_with(&opts.spec, &opts.scratch_root, &profile)?;
        let stdin = child.stdin.take().expect("stdin piped");
        let stdout = child.stdout.take().expect("stdout piped");
        let stderr = child.stderr.take().expect("stderr piped");
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let (alive_tx, alive_rx) = oneshot::channel();
        let shared = Arc::new(Shared {
            id: new_id("conn"),
            name: opts.name.clone(),
            program: opts.spec.program.clone(),
            pid: child.pid,
            isolation: child.isolation().clone(),
            slots: Semaphore::new(opts.limits.max_in_flight.max(1)),
            limits: opts.limits.clone(),
            stdin: tokio::sync::Mutex::new(Some(stdin)),
            outbox: Mutex::new(Vec::new()),
            commands: cmd_tx,
            pending: Mutex::new(PendingTable::default()),
            next_id: AtomicU64::new(1),
            tools: Mutex::new(HashMap::new()),
            server: Mutex::new(None),
            meta: Mutex::new(protocol::modern_meta()),
            stderr: StderrTail::with_pool(opts.limits.stderr, opts.stderr_pool.clone()),
            recorder: opts.recorder.clone(),
            violations: AtomicU64::new(0),
            stdout_end: Mutex::new(StreamEnd::Open),
            stderr_end: Mutex::new(StreamEnd::Open),
            exit: Mutex::new(None),
            started_at_ms: now_ms(),
        });
        shared.stderr.set_redactions(opts.spec.secret_values());
        let stderr_task = {
            let shared = shared.clone();
            tokio::spawn(async move {
                let end = match stderr::drain(stderr, &shared.stderr).await {
                    Ok(_) => StreamEnd::Eof,
                    Err(_) => StreamEnd::ReadError,
                };
                *lock(&shared.stderr_end) = end;
            })
        };
        let stdout_task = tokio::spawn(read_stdout(shared.clone(), stdout));
        let supervisor = tokio::spawn(supervise(
            shared.clone(),
            child,
            cmd_rx,
            alive_rx,
            stdout_task,
            stderr_task,
        ));
        let conn = Connection {
            shared,
            control: Arc::new(Control {
                supervisor: Mutex::new(Some(supervisor)),
                _alive: alive_tx,
            }),
        };
        if let Err(e) = conn.setup().await {
            let record = conn.clone().close().await;
            let mut e = e;
            if e.detail.is_none() {
                e = e.detail(json!({"stderr": record.stderr_excerpt, "exit": record.exit}));
            }
            return Err(e);
        }
        let record = conn.shared.connection_record(None);
        if let Err(e) = conn.shared.recorder.record_connection(&record).await {
            conn.clone().close().await;
            return Err(e);
        }
        Ok(conn)
    }

    async fn setup(&self) -> Result<()> {
        let info = self.negotiate().await?;
        tracing::debug!(era = info.era.as_str(), version = %info.protocol_version, "negotiated");
        *lock(&self.shared.server) = Some(info);
        self.list_tools().await?;
        Ok(())
    }

    /// The stdio backward-compatibility rules of 2026-07-28: probe with
    /// `server/discover`; a result or a recognised modern error means modern;
    /// any other error, or silence past the probe timeout, means legacy.
    async fn negotiate(&self) -> Result<ServerInfo> {
        let s = &self.shared;
        let meta = lock(&s.meta).clone();
        let probe = s
            .request(
                "server/discover",
                json!({"_meta": meta}),
                s.limits.probe_timeout,
            )
            .await?;
        let legacy_version = match probe {
            Some(Reply::Answer(Ok(result))) => {
                let supported = string_list(&result["supportedVersions"]);
                if !supported.iter().any(|v| v == protocol::MODERN) {
                    return Err(unsupported(&supported));
                }
                let server_info = &result["_meta"][protocol::META_SERVER_INFO];
                return Ok(ServerInfo {
                    era: Era::Modern,
                    protocol_version: protocol::MODERN.to_string(),
                    name: server_info["name"].as_str().map(str::to_owned),
                    version: server_info["version"].as_str().map(str::to_owned),
                    capabilities: result.get("capabilities").cloned().unwrap_or(json!({})),
                    instructions: result["instructions"].as_str().map(str::to_owned),
                });
            }
            Some(Reply::Answer(Err(e))) if protocol::is_modern_error(e.code) => {
                // Modern, but not our version: use a legacy one it lists, if any.
                let supported = e
                    .data
                    .as_ref()
                    .map(|d| string_list(&d["supported"]))
                    .unwrap_or_default();
                match protocol::LEGACY
                    .iter()
                    .find(|v| supported.iter().any(|s| s == *v))
                {
                    Some(v) if e.code == protocol::UNSUPPORTED_PROTOCOL_VERSION => *v,
                    _ => return Err(unsupported(&supported)),
                }
            }
            Some(Reply::Answer(Err(_))) | None => protocol::LEGACY[0],
            Some(Reply::Closed(c)) => return Err(self.closed_error(c).await),
        };
        let reply = s
            .request(
                "initialize",
                json!({
                    "protocolVersion": legacy_version,
                    "capabilities": {},
                    "clientInfo": protocol::client_info(),
                }),
                s.limits.setup_timeout,
            )
            .await?;
        let result = match reply {
            Some(Reply::Answer(Ok(r))) => r,
            Some(Reply::Answer(Err(e))) => {
                return Err(Error::new(
                    codes::PROTOCOL_UNSUPPORTED,
                    format!(
                        "the server refused both server/discover and initialize: {}",
                        e.message
                    ),
                )
                .detail(json!({"code": e.code, "data": e.data})));
            }
            Some(Reply::Closed(c)) => return Err(self.closed_error(c).await),
            None => {
                return Err(Error::new(
                    codes::PROTOCOL_UNSUPPORTED,
                    "the server answered neither server/discover nor initialize",
                )
                .hint("check that the command starts an MCP server speaking stdio"));
            }
        };
        let version = result["protocolVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if !protocol::LEGACY.contains(&version.as_str()) {
            return Err(unsupported(&[version]));
        }
        // Awaited, so it reaches the server before any later request.
        s.write_line(&protocol::notification_line(
            "notifications/initialized",
            &json!({}),
        ))
        .await;
        Ok(ServerInfo {
            era: Era::Legacy,
            protocol_version: version,
            name: result["serverInfo"]["name"].as_str().map(str::to_owned),
            version: result["serverInfo"]["version"].as_str().map(str::to_owned),
            capabilities: result.get("capabilities").cloned().unwrap_or(json!({})),
            instructions: result["instructions"].as_str().map(str::to_owned),
        })
    }

    /// The error for a connection that ended during setup, with what stderr said.
    async fn closed_error(&self, closed: Closed) -> Error {
        closed.error()
    }

    /// Lists the tools (following pagination) and refreshes the effect classes
    /// used for calls dispatched from now on.
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>> {
        let s = &self.shared;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..100 {
            let mut params = match s.era() {
                Some(Era::Modern) => json!({"_meta": lock(&s.meta).clone()}),
                _ => json!({}),
            };
            if let Some(c) = &cursor {
                params["cursor"] = json!(c);
            }
            let result = match s
                .request("tools/list", params, s.limits.setup_timeout)
                .await?
            {
                Some(Reply::Answer(Ok(r))) => r,
                Some(Reply::Answer(Err(e))) => {
                    return Err(Error::new(
                        codes::REMOTE_ERROR,
                        format!("tools/list failed: {}", e.message),
                    )
                    .detail(json!({"code": e.code, "data": e.data})));
                }
                Some(Reply::Closed(c)) => return Err(self.closed_error(c).await),
                None => {
                    return Err(Error::new(
                        codes::CALL_TIMEOUT,
                        "tools/list was not answered in time",
                    ));
                }
            };
            for t in result["tools"].as_array().into_iter().flatten() {
                let Some(name) = t["name"].as_str() else {
                    continue;
                };
                let annotations = t.get("annotations").cloned().unwrap_or(json!({}));
                let effect = if annotations["readOnlyHint"] == json!(true) {
                    EffectClass::ReadOnly
                } else {
                    EffectClass::MayWrite
                };
                tools.push(ToolInfo {
                    name: name.to_string(),
                    annotations,
                    effect,
                });
            }
            cursor = result["nextCursor"].as_str().map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        *lock(&s.tools) = tools.iter().map(|t| (t.name.clone(), t.effect)).collect();
        Ok(tools)
    }

    pub fn id(&self) -> &str {
        &self.shared.id
    }

    pub fn pid(&self) -> i32 {
        self.shared.pid
    }

    /// How the server is confined (what is weaker than asked is in `warnings`).
    pub fn isolation(&self) -> &Isolation {
        &self.shared.isolation
    }

    /// What was negotiated.
    pub fn server(&self) -> ServerInfo {
        lock(&self.shared.server)
            .clone()
            .expect("negotiated during connect")
    }

    pub fn stderr(&self) -> &StderrTail {
        &self.shared.stderr
    }

    /// Non-JSON-RPC lines seen on stdout.
    pub fn protocol_violations(&self) -> u64 {
        self.shared.violations.load(Ordering::Relaxed)
    }

    /// The connection record as of now.
    pub fn record(&self) -> ConnectionRecord {
        self.shared.connection_record(self.shared.closed().as_ref())
    }

    /// Whether the connection has ended (no call can succeed any more).
    pub fn is_closed(&self) -> bool {
        self.shared.closed().is_some()
    }

    /// Calls `tool` with `arguments`, recording every transition.
    pub async fn call_tool(&self, tool: &str, arguments: Value, opts: CallOptions) -> CallOutcome {
        let s = &self.shared;
        let total = opts.timeout.unwrap_or(s.limits.call_timeout);
        let inactivity = opts.inactivity.or(s.limits.inactivity_timeout);
        let deadline = Instant::now() + total;
        let cancel = opts.cancel.unwrap_or_default();
        // Serialised once: its length goes into the record, its bytes on the wire.
        let args_json = serde_json::to_vec(&arguments).unwrap_or_default();
        let mut call = CallInFlight::new(s.clone(), tool, args_json.len() as u64);
        call.write().await;

        // Validation: shape only; the server validates against its schema.
        if tool.is_empty() || !arguments.is_object() {
            let e = Error::invalid(
                codes::CALL_INVALID,
                "a call needs a tool name and an object of arguments",
                "pass --args as a JSON object, for example '{\"message\":\"hi\"}'",
            );
            return call.finish(CallState::Failed, None, Some(e)).await;
        }
        if let Some(closed) = s.closed() {
            return call
                .finish(CallState::Failed, None, Some(closed.error()))
                .await;
        }
        call.record.state = CallState::Validated;
        call.write().await;

        let _permit = tokio::select! {
            biased;
            _ = cancel.cancelled() => return call.finish(CallState::CancelledBeforeDispatch, None, Some(cancelled_error())).await,
            p = s.slots.acquire() => match p {
                Ok(p) => p,
                Err(_) => return call.finish(CallState::Failed, None, Some(Closed::Dropped.error())).await,
            },
            _ = tokio::time::sleep_until(deadline) => {
                let e = Error::new(codes::CALL_TIMEOUT, "no free slot before the call's deadline")
                    .hint("fewer concurrent calls, or a longer --timeout");
                return call.finish(CallState::TimedOut, None, Some(e)).await;
            }
        };
        if cancel.is_cancelled() {
            return call
                .finish(
                    CallState::CancelledBeforeDispatch,
                    None,
                    Some(cancelled_error()),
                )
                .await;
        }

        // Dispatch: effect class fixed now, attempt written before sending.
        let effect = lock(&s.tools)
            .get(tool)
            .copied()
            .unwrap_or(EffectClass::MayWrite);
        let id = s.next_id.fetch_add(1, Ordering::Relaxed);
        call.record.effect = Some(effect);
        call.record.request_id = Some(id);
        call.record.state = CallState::Dispatched;
        call.record.dispatched_at_ms = Some(now_ms());
        if let Err(e) = s.recorder.record_call(&call.record).await {
            return call.finish(CallState::Failed, None, Some(e)).await;
        }
        let (mut rx, activity) = match s.register(id) {
            Ok(r) => r,
            Err(closed) => {
                return call
                    .finish(CallState::Failed, None, Some(closed.error()))
                    .await;
            }
        };
        call.on_wire = true;
        let modern = s.era() == Some(Era::Modern);
        let line = protocol::tools_call_line(id, tool, &args_json, modern, inactivity.is_some());
        drop(args_json);
        // A child that stops reading stdin must not hold the call past its deadline.
        if tokio::time::timeout_at(deadline, s.write_line(&line))
            .await
            .is_err()
        {
            s.unregister(id);
            call.on_wire = false;
            let closed = Closed::Timeout {
                tool: tool.to_string(),
                after: total,
            };
            let _ = s.commands.send(Command::Kill(closed.clone()));
            return call
                .finish(CallState::TimedOut, None, Some(closed.error()))
                .await;
        }
        drop(line);

        let mut idle_deadline = inactivity.map(|d| Instant::now() + d);
        loop {
            let idle = idle_deadline.unwrap_or(deadline);
            tokio::select! {
                biased;
                reply = &mut rx => {
                    call.on_wire = false;
                    return match reply {
                        Ok(Reply::Answer(Ok(result))) => self.settle_result(call, result).await,
                        Ok(Reply::Answer(Err(e))) => {
                            let err = Error::new(codes::REMOTE_ERROR, format!("the server answered with an error: {}", e.message))
                                .detail(json!({"code": e.code, "message": e.message, "data": e.data}));
                            call.finish(CallState::Failed, None, Some(err)).await
                        }
                        Ok(Reply::Closed(closed)) => self.settle_lost(call, effect, closed).await,
                        Err(_) => self.settle_lost(call, effect, s.closed().unwrap_or(Closed::Dropped)).await,
                    };
                }
                _ = cancel.cancelled() => {
                    call.on_wire = false;
                    s.unregister(id);
                    s.send_line(protocol::notification_line(
                        "notifications/cancelled",
                        &json!({"requestId": id, "reason": "cancelled by the caller"}),
                    ));
                    return call.finish(CallState::CancelledAfterDispatch, None, Some(cancelled_error())).await;
                }
                _ = activity.notified() => {
                    if let Some(d) = inactivity {
                        idle_deadline = Some(Instant::now() + d);
                    }
                }
                _ = tokio::time::sleep_until(deadline.min(idle)) => {
                    call.on_wire = false;
                    s.unregister(id);
                    let (after, what) = if Instant::now() >= deadline {
                        (total, "total deadline")
                    } else {
                        (inactivity.unwrap_or(total), "inactivity timeout")
                    };
                    let closed = Closed::Timeout { tool: tool.to_string(), after };
                    let _ = s.commands.send(Command::Kill(closed.clone()));
                    let mut e = closed.error();
                    e.message = format!("{} ({what})", e.message);
                    let e = e.detail(json!({"may_have_acted": effect == EffectClass::MayWrite, "limit": what}));
                    return call.finish(CallState::TimedOut, None, Some(e)).await;
                }
            }
        }
    }

    async fn settle_result(&self, call: CallInFlight, result: Value) -> CallOutcome {
        // 2026-07-28: every result names its type; an absent one is "complete".
        match result.get("resultType").and_then(|t| t.as_str()) {
            None | Some("complete") => call.finish(CallState::Completed, Some(result), None).await,
            Some("input_required") => {
                let e = Error::new(
                    codes::INPUT_REQUIRED_UNSUPPORTED,
                    "the server asked for more input (a multi round-trip request); Gatehouse does not provide it",
                );
                call.finish(CallState::Failed, Some(result), Some(e)).await
            }
            Some(other) => {
                let e = Error::new(
                    codes::PROTOCOL_VIOLATION,
                    format!("unknown resultType {other:?}"),
                );
                call.finish(CallState::Failed, Some(result), Some(e)).await
            }
        }
    }

    async fn settle_lost(
        &self,
        call: CallInFlight,
        effect: EffectClass,
        closed: Closed,
    ) -> CallOutcome {
        let e = closed.error();
        match effect {
            EffectClass::ReadOnly => call.finish(CallState::Failed, None, Some(e)).await,
            EffectClass::MayWrite => {
                let e = Error {
                    hint: Some(
                        "the tool may write and its answer was lost: the server may have acted; check before calling it again"
                            .into(),
                    ),
                    ..e
                };
                call.finish(CallState::OutcomeUnknown, None, Some(e)).await
            }
        }
    }

    /// Closes gracefully (close stdin, grace, SIGTERM, grace, SIGKILL, reap,
    /// drain), writes the final record and returns it. Idempotent across clones:
    /// later callers get the record as it stands.
    pub async fn close(self) -> ConnectionRecord {
        let handle = lock(&self.control.supervisor).take();
        let Some(handle) = handle else {
            return self.record();
        };
        let (tx, _rx) = oneshot::channel();
        let _ = self.shared.commands.send(Command::Shutdown(tx));
        match handle.await {
            Ok(record) => record,
            Err(_) => self.record(),
        }
    }
}

fn cancelled_error() -> Error {
    Error::new(codes::CALL_CANCELLED, "the call was cancelled")
}

fn unsupported(versions: &[String]) -> Error {
    Error::new(
        codes::PROTOCOL_UNSUPPORTED,
        format!(
            "the server supports none of the protocol revisions this client speaks (it lists: {})",
            if versions.is_empty() {
                "nothing".to_string()
            } else {
                versions.join(", ")
            }
        ),
    )
    .hint(format!(
        "this client speaks {} and {}",
        protocol::MODERN,
        protocol::LEGACY.join(", ")
    ))
}

fn string_list(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

/// A call between `received` and its final state. If its future is dropped
/// while the request is on the wire, it cancels it and records that.
struct CallInFlight {
    shared: Arc<Shared>,
    record: CallRecord,
    on_wire: bool,
    finished: bool,
}

impl CallInFlight {
    fn new(shared: Arc<Shared>, tool: &str, args_bytes: u64) -> Self {
        let record = CallRecord {
            call_id: new_id("call"),
            connection_id: shared.id.clone(),
            tool: tool.to_string(),
            state: CallState::Received,
            effect: None,
            request_id: None,
            args_bytes,
            error: None,
            exit: None,
            stderr: StderrCounters::default(),
            stdout_end: StreamEnd::Open,
            stderr_end: StreamEnd::Open,
            received_at_ms: now_ms(),
            dispatched_at_ms: None,
            finished_at_ms: None,
        };
        Self {
            shared,
            record,
            on_wire: false,
            finished: false,
        }
    }

    async fn write(&mut self) {
        if let Err(e) = self.shared.recorder.record_call(&self.record).await {
            tracing::warn!(error = %e, call_id = %self.record.call_id, "call record not written");
        }
    }

    fn fill_final(&mut self, state: CallState, error: Option<&Error>) {
        self.record.state = state;
        self.record.error = error.map(|e| e.body());
        self.record.exit = *lock(&self.shared.exit);
        self.record.stderr = self.shared.stderr_counters();
        self.record.stdout_end = *lock(&self.shared.stdout_end);
        self.record.stderr_end = *lock(&self.shared.stderr_end);
        self.record.finished_at_ms = Some(now_ms());
    }

    async fn finish(
        mut self,
        state: CallState,
        result: Option<Value>,
        error: Option<Error>,
    ) -> CallOutcome {
        self.finished = true;
        self.fill_final(state, error.as_ref());
        if let Err(e) = self.shared.recorder.record_call(&self.record).await {
            tracing::warn!(error = %e, call_id = %self.record.call_id, "final call record not written");
        }
        CallOutcome {
            call_id: self.record.call_id.clone(),
            state,
            result,
            error: error.map(|e| e.body()),
            record: self.record.clone(),
        }
    }
}

impl Drop for CallInFlight {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let Some(id) = self.record.request_id else {
            // Dropped before dispatch.
            self.fill_final(CallState::CancelledBeforeDispatch, Some(&cancelled_error()));
            spawn_record(self.shared.clone(), self.record.clone());
            return;
        };
        if self.on_wire {
            self.shared.unregister(id);
            self.shared.send_line(protocol::notification_line(
                "notifications/cancelled",
                &json!({"requestId": id, "reason": "the caller went away"}),
            ));
        }
        self.fill_final(CallState::CancelledAfterDispatch, Some(&cancelled_error()));
        spawn_record(self.shared.clone(), self.record.clone());
    }
}

fn spawn_record(shared: Arc<Shared>, record: CallRecord) {
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        rt.spawn(async move {
            let _ = shared.recorder.record_call(&record).await;
        });
    }
}

async fn read_stdout(shared: Arc<Shared>, mut stdout: ChildStdout) {
    let mut decoder = LineDecoder::new(shared.limits.max_frame);
    let mut buf = vec![0u8; 64 * 1024];
    let end = loop {
        match stdout.read(&mut buf).await {
            Ok(0) => break StreamEnd::Eof,
            Ok(n) => {
                let pushed = decoder.push(&buf[..n], |line| handle_line(&shared, line));
                if pushed.is_err() {
                    let _ = shared.commands.send(Command::Kill(Closed::Protocol {
                        what: format!(
                            "a stdout line passed the {} byte frame ceiling without a newline",
                            shared.limits.max_frame
                        ),
                    }));
                    break StreamEnd::FrameTooLarge;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break StreamEnd::ReadError,
        }
    };
    *lock(&shared.stdout_end) = end;
}

fn handle_line(shared: &Arc<Shared>, line: &[u8]) {
    if line.iter().all(|b| b.is_ascii_whitespace()) {
        return;
    }
    match protocol::parse_line(line) {
        Some(Incoming::Response { id, outcome }) => {
            let pending = lock(&shared.pending).map.remove(&id);
            match pending {
                Some(p) => {
                    let _ = p.tx.send(Reply::Answer(outcome));
                }
                // Late answer to a call that timed out or was cancelled.
                None => tracing::debug!(id, "answer for no pending call"),
            }
        }
        Some(Incoming::Notification { method, params }) => {
            if method == "notifications/progress"
                && let Some(token) = params["progressToken"].as_u64()
                && let Some(p) = lock(&shared.pending).map.get(&token)
            {
                p.activity.notify_one();
            }
        }
        Some(Incoming::Request { id, method }) => {
            shared.send_line(protocol::answer_server_request(&id, &method));
        }
        Some(Incoming::StrayResponse) | None => {
            shared.violations.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(bytes = line.len(), "non-JSON-RPC line on stdout");
        }
    }
}

/// The one owner of the child: waits for exit, watches resources, kills,
/// tears down, drains, records.
async fn supervise(
    shared: Arc<Shared>,
    mut child: Sandboxed,
    mut commands: mpsc::UnboundedReceiver<Command>,
    mut alive: oneshot::Receiver<()>,
    stdout_task: tokio::task::JoinHandle<()>,
    stderr_task: tokio::task::JoinHandle<()>,
) -> ConnectionRecord {
    let limits = shared.limits.clone();
    let watch = limits.max_rss_bytes.is_some() || limits.max_cpu.is_some();
    let mut tick = tokio::time::interval(limits.watchdog_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut shutdown_ack = None;
    let (why, graceful) = loop {
        tokio::select! {
            exit = child.wait() => {
                let exit = exit.ok();
                *lock(&shared.exit) = exit;
                // Let stderr reach end-of-file (bounded: a grandchild may hold
                // it) so the error carries the child's last words.
                let _ = tokio::time::timeout(Duration::from_millis(500), wait_finished(&stderr_task)).await;
                let excerpt = shared.stderr.excerpt().text;
                break (Closed::Exited { exit, excerpt }, false);
            }
            cmd = commands.recv() => match cmd {
                Some(Command::Kill(why)) => {
                    child.kill_group();
                    break (why, false);
                }
                Some(Command::Shutdown(ack)) => {
                    shutdown_ack = Some(ack);
                    // A child that already exited ended the connection itself.
                    // Its stderr may reach end-of-file just before the exit
                    // shows, so then give the exit a moment to appear.
                    let exited = match child.try_exit() {
                        None if stderr_task.is_finished() => {
                            tokio::time::timeout(Duration::from_millis(200), child.wait())
                                .await
                                .ok()
                                .and_then(|r| r.ok())
                        }
                        exited => exited,
                    };
                    if let Some(exit) = exited {
                        *lock(&shared.exit) = Some(exit);
                        let excerpt = shared.stderr.excerpt().text;
                        break (Closed::Exited { exit: Some(exit), excerpt }, false);
                    }
                    break (Closed::Shutdown, true);
                }
                None => break (Closed::Dropped, false),
            },
            _ = &mut alive => {
                child.kill_group();
                break (Closed::Dropped, false);
            }
            _ = tick.tick() => {
                // Always: the sandbox records descendants and checks the scratch quota.
                if let Some(q) = child.watch() {
                    child.kill_group();
                    break (Closed::Resource {
                        ceiling: "scratch_quota".into(),
                        limit: format!("{} MiB", q.limit / (1024 * 1024)),
                        observed: format!("{} MiB", q.used / (1024 * 1024)),
                    }, false);
                }
                if let Some(why) = watch.then(|| check_ceilings(&child, &limits)).flatten() {
                    child.kill_group();
                    break (why, false);
                }
            }
        }
    };
    shared.close_all(why.clone());
    if graceful {
        // Closing stdin is the polite request to exit; a write stuck on a full
        // pipe must not hold teardown up, so wait for the lock only so long.
        if let Ok(mut stdin) =
            tokio::time::timeout(limits.grace.after_stdin_close, shared.stdin.lock()).await
        {
            stdin.take();
        }
    }
    let grace = if graceful {
        limits.grace
    } else {
        Grace {
            after_stdin_close: Duration::ZERO,
            after_term: Duration::from_millis(100),
        }
    };
    let report = child.teardown(grace).await;
    if let Some(exit) = report.exit {
        *lock(&shared.exit) = Some(exit);
    }
    // The group is gone, so both pipes reach end-of-file.
    let _ = tokio::time::timeout(Duration::from_secs(5), stdout_task).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), stderr_task).await;
    if !report.group_gone {
        tracing::warn!(
            pgid = child.group.pgid,
            "process group members survived teardown"
        );
    }
    let record = shared.connection_record(Some(&why));
    if let Err(e) = shared.recorder.record_connection(&record).await {
        tracing::warn!(error = %e, "final connection record not written");
    }
    if let Some(ack) = shutdown_ack {
        let _ = ack.send(());
    }
    record
}

async fn wait_finished(task: &tokio::task::JoinHandle<()>) {
    while !task.is_finished() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn check_ceilings(child: &Sandboxed, limits: &ClientLimits) -> Option<Closed> {
    let usage = child.group.usage();
    if let Some(max) = limits.max_rss_bytes
        && usage.rss_bytes > max
    {
        return Some(Closed::Resource {
            ceiling: "max_rss".into(),
            limit: format!("{} MiB", max / (1024 * 1024)),
            observed: format!("{} MiB", usage.rss_bytes / (1024 * 1024)),
        });
    }
    if let Some(max) = limits.max_cpu
        && usage.cpu_ms > max.as_millis() as u64
    {
        return Some(Closed::Resource {
            ceiling: "max_cpu".into(),
            limit: format!("{} ms", max.as_millis()),
            observed: format!("{} ms", usage.cpu_ms),
        });
    }
    None
}
