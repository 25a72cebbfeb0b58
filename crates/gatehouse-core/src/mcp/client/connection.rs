//! One connection to one sandboxed MCP server child: the handle and `connect`.
//!
//! Tasks, all owned by the connection (none by a request), over the state in
//! [`super::shared`]: the supervisor ([`super::supervisor`]) owns the child;
//! the stdout reader ([`super::reader`]) hands lines to [`super::rpc`], which
//! routes answers; the stderr reader drains into the [`StderrTail`] until
//! end-of-file. Setting up is [`super::negotiate`], calling [`super::call`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::json;
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::lifecycle::{ConnectionRun, StreamEnd, new_id};
use super::options::ConnectOptions;
use super::reader;
use super::rpc::Rpc;
use super::server_info::{ServerInfo, ToolInfo};
use super::shared::{Command, Ends, Shared};
use super::supervisor;
use crate::error::Result;
use crate::redact::Secrets;
use crate::sandbox::probe::Ceiling;
use crate::sandbox::stderr::{self, StderrTail};
use crate::sandbox::{self, Isolation};
use crate::sync::lock;
use crate::time::now_ms;

/// How many tool list announcements a connection had received at one moment
/// (see [`Connection::hold_mark`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HoldMark(u64);

/// What a running connection uses and does at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
pub struct LiveUsage {
    pub uptime_ms: u64,
    /// Resident memory of the whole process group.
    pub rss_bytes: u64,
    /// User + system CPU time of the group.
    pub cpu_ms: u64,
    /// Live members of the group.
    pub processes: u64,
    /// Calls holding a slot (dispatched, waiting for their answer).
    pub calls_in_flight: u64,
}

/// A live connection. Cheap to clone; calls may run concurrently from clones.
/// Dropping the last clone kills the server's process group.
#[derive(Clone)]
pub struct Connection {
    pub(super) shared: Arc<Shared>,
    control: Arc<Control>,
}

struct Control {
    supervisor: Mutex<Option<tokio::task::JoinHandle<ConnectionRun>>>,
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
        let limits = &opts.limits;
        profile.max_memory_bytes = profile.max_memory_bytes.or(limits.max_rss_bytes);
        profile.max_cpu_ms = profile
            .max_cpu_ms
            .or(limits.max_cpu.map(|d| d.as_millis() as u64));
        let mut child = sandbox::spawn_with(&opts.spec, &opts.scratch_root, &profile)?;
        // The watchdog (see `supervisor`) holds the ceilings on every system.
        let isolation = child.isolation().clone().with_ceilings(
            limits.max_rss_bytes.map(|value| Ceiling {
                value,
                site_default: limits.ceilings_site_default.0,
            }),
            limits.max_cpu.map(|d| Ceiling {
                value: d.as_millis() as u64,
                site_default: limits.ceilings_site_default.1,
            }),
        );
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
            isolation,
            slots: Semaphore::new(opts.limits.max_in_flight.max(1)),
            limits: opts.limits.clone(),
            rpc: Rpc::new(stdin),
            commands: cmd_tx,
            server: OnceLock::new(),
            tools: Mutex::new(HashMap::new()),
            listed: Mutex::new(Vec::new()),
            stderr: StderrTail::with_pool(opts.limits.stderr, opts.stderr_pool.clone()),
            secrets: Secrets::new(opts.spec.secret_values()),
            recorder: opts.recorder.clone(),
            ends: Mutex::new(Ends {
                exit: None,
                stdout: StreamEnd::Open,
                stderr: StreamEnd::Open,
            }),
            started_at_ms: now_ms(),
            descendants: Mutex::default(),
        });
        shared.stderr.set_redactions(shared.secrets.clone());
        let stderr_task = {
            let shared = shared.clone();
            stderr::reader::spawn(async move {
                let end = match stderr::reader::drain_child(stderr, &shared.stderr).await {
                    Ok(_) => StreamEnd::Eof,
                    Err(_) => StreamEnd::ReadError,
                };
                lock(&shared.ends).stderr = end;
            })
        };
        let stdout_task = tokio::spawn(reader::read_stdout(shared.clone(), stdout));
        let supervisor = tokio::spawn(supervisor::supervise(
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
        self.shared
            .server
            .get()
            .cloned()
            .expect("negotiated during connect")
    }

    pub fn stderr(&self) -> &StderrTail {
        &self.shared.stderr
    }

    /// The tool list as last listed (at connect, or by [`Connection::list_tools`]).
    pub fn tools(&self) -> Vec<ToolInfo> {
        lock(&self.shared.listed).clone()
    }

    /// Whether the server sent `notifications/tools/list_changed`: the
    /// connection is then on hold (its calls are refused with
    /// `CONNECTION_TOOLS_CHANGED`) until an admin approves the change.
    pub fn tools_list_changed(&self) -> bool {
        self.shared.rpc.tools_list_changed()
    }

    /// Holds the connection as an announced change does: its server's list
    /// differs from the pinned one without its having said so.
    pub(crate) fn hold_now(&self) {
        self.shared.rpc.hold();
    }

    /// A mark of the tool list announcements received so far: take it before
    /// reading the list an approval is checked against, so that an
    /// announcement arriving meanwhile still holds the connection.
    pub(crate) fn hold_mark(&self) -> HoldMark {
        HoldMark(self.shared.rpc.list_changes())
    }

    /// Lifts the hold for the announcements up to `mark` (the approved list
    /// is the one the server offers now); a later announcement holds again.
    pub(crate) fn lift_hold(&self, mark: HoldMark) {
        self.shared.rpc.approve_list_changes(mark.0);
    }

    /// Non-JSON-RPC lines seen on stdout.
    pub fn protocol_violations(&self) -> u64 {
        self.shared.rpc.violations()
    }

    /// The connection record as of now.
    pub fn record(&self) -> ConnectionRun {
        self.shared
            .connection_record(self.shared.rpc.closed().as_ref())
    }

    /// Uptime, memory, CPU and calls in flight; `None` once the connection
    /// ended (its group id may already belong to someone else).
    pub fn usage(&self) -> Option<LiveUsage> {
        if self.is_closed() {
            return None;
        }
        let group = sandbox::ProcessGroup {
            pgid: self.shared.pid,
        }
        .usage_with(&lock(&self.shared.descendants));
        let slots = self.shared.limits.max_in_flight.max(1);
        Some(LiveUsage {
            uptime_ms: (now_ms() - self.shared.started_at_ms).max(0) as u64,
            rss_bytes: group.rss_bytes,
            cpu_ms: group.cpu_ms,
            processes: group.members as u64,
            calls_in_flight: slots.saturating_sub(self.shared.slots.available_permits()) as u64,
        })
    }

    /// Why the connection ended, in words (which ceiling, which deadline,
    /// which exit); `None` while it runs.
    pub fn end_message(&self) -> Option<String> {
        self.shared.rpc.closed().map(|c| c.error().message)
    }

    /// When the connection was made (Unix milliseconds).
    pub fn started_at_ms(&self) -> i64 {
        self.shared.started_at_ms
    }

    /// Whether the connection has ended (no call can succeed any more).
    pub fn is_closed(&self) -> bool {
        self.shared.rpc.closed().is_some()
    }

    /// Closes gracefully (close stdin, grace, SIGTERM, grace, SIGKILL, reap,
    /// drain), writes the final record and returns it. Idempotent across clones:
    /// later callers get the record as it stands.
    pub async fn close(self) -> ConnectionRun {
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
