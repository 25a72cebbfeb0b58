//! The one builder that spawns MCP server children, and the one owner that
//! tears them down.
//!
//! Map: [`ChildSpec`] says what to run and which variables the child gets
//! ([`EnvValue`]: plain, passed through from the host by name, or a
//! [`SecretValue`]); [`ScratchRoot`] hands out a fresh [`ScratchDir`] per
//! connection and sweeps the ones a killed host left behind; [`spawn`] builds
//! the command (`env_clear`, the listed variables, scratch working directory,
//! all three streams piped, own process group, `kill_on_drop`);
//! [`Sandboxed::teardown`] closes stdin, waits, signals the whole group
//! (SIGTERM, then SIGKILL), reaps, and reports the exit actually observed;
//! [`ProcessGroup`] reads the group's members, memory and CPU from `/proc`.
//!
//! # Caveats
//! This is a floor, not a jail: the child runs as the host user and can reach
//! anything that user can. A grandchild that leaves the group (`setsid`) is not
//! tracked. Killed grandchildren are re-parented to the nearest subreaper;
//! call [`become_subreaper`] once at start-up so that is this process and
//! [`Sandboxed::teardown`] can reap them (otherwise a PID 1 that never reaps,
//! as in some containers, keeps them as zombies).

pub mod stderr;

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

use crate::error::{Error, Result, codes};

/// `PATH` inside the sandbox unless the connection lists its own.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// A secret value: never printed, never in argv, only in the child's environment.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SecretValue(String);

impl SecretValue {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself; call only where it is handed to the child.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretValue(<redacted>)")
    }
}

/// Where one variable of the child's environment comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EnvValue {
    /// A literal value, stored with the connection.
    Plain { value: String },
    /// The host's variable of that name, read at spawn time.
    FromHost { name: String },
    /// A secret; redacted everywhere but the child's environment.
    Secret { value: SecretValue },
    /// A secret read from the host's variable `name` at spawn time: what stored
    /// connection definitions use, so no secret value is ever written to the site.
    SecretFromHost { name: String },
}

/// What to run and exactly what environment it gets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildSpec {
    pub program: String,
    pub args: Vec<String>,
    /// The only variables the child sees, besides `PATH` and `HOME` (which
    /// point into the sandbox unless listed here).
    pub env: BTreeMap<String, EnvValue>,
}

impl ChildSpec {
    pub fn new(program: impl Into<String>) -> Self {
        Self {
            program: program.into(),
            ..Self::default()
        }
    }

    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn env(mut self, name: impl Into<String>, value: EnvValue) -> Self {
        self.env.insert(name.into(), value);
        self
    }

    /// The secret values the child will get (for redacting its output).
    pub fn secret_values(&self) -> Vec<String> {
        self.env
            .values()
            .filter_map(|v| match v {
                EnvValue::Secret { value } => Some(value.expose().to_string()),
                EnvValue::SecretFromHost { name } => std::env::var(name).ok(),
                _ => None,
            })
            .collect()
    }

    /// The environment the child will get, resolved against the host now.
    /// Values are the child's; keep the result out of logs.
    pub fn resolve_env(&self, scratch: &Path) -> Result<BTreeMap<String, ResolvedValue>> {
        let mut out = BTreeMap::new();
        out.insert(
            "PATH".to_string(),
            ResolvedValue::Plain(DEFAULT_PATH.to_string()),
        );
        out.insert(
            "HOME".to_string(),
            ResolvedValue::Plain(scratch.to_string_lossy().into_owned()),
        );
        for (name, value) in &self.env {
            validate_env_name(name)?;
            let resolved = match value {
                EnvValue::Plain { value } => ResolvedValue::Plain(value.clone()),
                EnvValue::FromHost { name: host } => match std::env::var_os(host) {
                    Some(v) => ResolvedValue::Plain(v.to_string_lossy().into_owned()),
                    None => {
                        return Err(Error::invalid(
                            codes::ENV_HOST_VAR_MISSING,
                            format!(
                                "the host has no variable {host} to pass to the child as {name}"
                            ),
                            format!(
                                "set {host} in the host environment, or list {name} with a plain value"
                            ),
                        ));
                    }
                },
                EnvValue::Secret { value } => ResolvedValue::Secret(value.clone()),
                EnvValue::SecretFromHost { name: host } => match std::env::var_os(host) {
                    Some(v) => ResolvedValue::Secret(SecretValue::new(v.to_string_lossy())),
                    None => {
                        return Err(Error::invalid(
                            codes::ENV_HOST_VAR_MISSING,
                            format!("the host has no variable {host} holding the secret {name}"),
                            format!("set {host} in the environment of the process that connects"),
                        ));
                    }
                },
            };
            if resolved.expose().contains('\0') {
                return Err(Error::invalid(
                    codes::ENV_INVALID,
                    format!("the value of {name} contains a NUL byte"),
                    "environment values cannot contain NUL",
                ));
            }
            out.insert(name.clone(), resolved);
        }
        Ok(out)
    }
}

/// A resolved variable; `Debug` hides secrets.
#[derive(Clone, PartialEq, Eq)]
pub enum ResolvedValue {
    Plain(String),
    Secret(SecretValue),
}

impl ResolvedValue {
    fn expose(&self) -> &str {
        match self {
            ResolvedValue::Plain(v) => v,
            ResolvedValue::Secret(s) => s.expose(),
        }
    }
}

impl std::fmt::Debug for ResolvedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResolvedValue::Plain(v) => write!(f, "{v:?}"),
            ResolvedValue::Secret(s) => write!(f, "{s:?}"),
        }
    }
}

fn validate_env_name(name: &str) -> Result<()> {
    if name.is_empty() || name.contains('=') || name.contains('\0') {
        return Err(Error::invalid(
            codes::ENV_INVALID,
            format!("{name:?} is not a valid environment variable name"),
            "use a name without '=' or NUL, for example API_TOKEN",
        ));
    }
    Ok(())
}

/// Makes this process the reaper of orphaned descendants, so killed
/// grandchildren of a sandboxed child are reaped here instead of lingering as
/// zombies under a PID 1 that does not reap. Process-wide; call once at start.
pub fn become_subreaper() -> Result<()> {
    nix::sys::prctl::set_child_subreaper(true).map_err(|e| {
        Error::new(
            codes::IO,
            format!("could not become the subreaper of child processes: {e}"),
        )
    })
}

/// The folder holding every connection's scratch directory.
///
/// Each scratch directory `<id>/` has a sibling `<id>.lock` that the owning
/// process holds an exclusive `flock` on while the directory lives. The kernel
/// drops the lock when the owner dies, however it dies, so a sweep that can
/// take the lock knows the directory is a leftover (no PID reuse to fool it).
#[derive(Debug, Clone)]
pub struct ScratchRoot {
    root: PathBuf,
}

/// What a sweep removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    pub removed: Vec<PathBuf>,
}

impl ScratchRoot {
    /// Opens (creating) the root and sweeps directories left by dead hosts.
    pub fn open(root: impl Into<PathBuf>) -> Result<(Self, SweepReport)> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(|e| io_error("creating the scratch root", &root, e))?;
        let this = Self { root };
        let report = this.sweep()?;
        Ok((this, report))
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Removes every scratch directory whose owner is gone.
    pub fn sweep(&self) -> Result<SweepReport> {
        let mut report = SweepReport::default();
        let entries = fs::read_dir(&self.root)
            .map_err(|e| io_error("listing the scratch root", &self.root, e))?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in &names {
            let path = self.root.join(name);
            if let Some(id) = name.strip_suffix(".lock") {
                let Ok(file) = File::open(&path) else {
                    continue;
                };
                // Taking the lock means its owner is dead.
                if let Ok(lock) = Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                    let dir = self.root.join(id);
                    if dir.exists() {
                        let _ = fs::remove_dir_all(&dir);
                        report.removed.push(dir);
                    }
                    let _ = fs::remove_file(&path);
                    drop(lock);
                }
            } else if name.ends_with(".lock.tmp") {
                // A lock being created right now is young; an old one is a leftover.
                let old = fs::metadata(&path)
                    .and_then(|m| m.modified())
                    .map(|t| t.elapsed().unwrap_or_default() > Duration::from_secs(60))
                    .unwrap_or(false);
                if old {
                    let _ = fs::remove_file(&path);
                }
            } else if path.is_dir() && !names.contains(&format!("{name}.lock")) {
                // The lock is created before the directory and removed after it:
                // a directory without one belongs to nobody.
                let _ = fs::remove_dir_all(&path);
                report.removed.push(path);
            }
        }
        Ok(report)
    }

    /// A fresh, empty directory owned by this process until dropped.
    pub fn create(&self) -> Result<ScratchDir> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let id = format!(
            "c-{}-{nanos}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let tmp = self.root.join(format!("{id}.lock.tmp"));
        let lock_path = self.root.join(format!("{id}.lock"));
        let dir = self.root.join(&id);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| io_error("creating a scratch lock", &tmp, e))?;
        // Lock before the name is final, so a sweep never sees it unlocked.
        let lock = Flock::lock(file, FlockArg::LockExclusiveNonblock)
            .map_err(|(_, e)| io_error("locking a scratch lock", &tmp, e.into()))?;
        fs::rename(&tmp, &lock_path)
            .map_err(|e| io_error("naming a scratch lock", &lock_path, e))?;
        if let Err(e) = fs::create_dir(&dir) {
            let _ = fs::remove_file(&lock_path);
            return Err(io_error("creating a scratch directory", &dir, e));
        }
        Ok(ScratchDir {
            dir,
            lock_path,
            lock: Some(lock),
        })
    }
}

/// One connection's working directory; removed (with its lock) when dropped.
#[derive(Debug)]
pub struct ScratchDir {
    dir: PathBuf,
    lock_path: PathBuf,
    lock: Option<Flock<File>>,
}

impl ScratchDir {
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Removes the directory now; reports a failure instead of hiding it.
    pub fn remove(mut self) -> Result<()> {
        self.remove_inner()
    }

    fn remove_inner(&mut self) -> Result<()> {
        let Some(lock) = self.lock.take() else {
            return Ok(());
        };
        let result = match fs::remove_dir_all(&self.dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_error("removing a scratch directory", &self.dir, e)),
        };
        // Directory first, lock last: a sweep never sees a live dir unlocked.
        let _ = fs::remove_file(&self.lock_path);
        drop(lock);
        result
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if let Err(e) = self.remove_inner() {
            tracing::warn!(error = %e, "scratch directory left behind; the next start sweeps it");
        }
    }
}

fn io_error(context: &str, path: &Path, err: std::io::Error) -> Error {
    tracing::error!(context, path = %path.display(), error = %err, "io error");
    Error::new(codes::IO, format!("io error while {context}: {err}"))
        .detail(serde_json::json!({"path": path}))
}

/// How a child ended, as observed (never invented).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct ExitInfo {
    /// The exit code, when it exited by itself.
    pub code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
}

impl From<std::process::ExitStatus> for ExitInfo {
    fn from(status: std::process::ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        Self {
            code: status.code(),
            signal: status.signal(),
        }
    }
}

/// What teardown had to do and what it saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TeardownReport {
    /// The direct child's exit, if it was observed.
    pub exit: Option<ExitInfo>,
    /// SIGTERM was sent to the group.
    pub sent_term: bool,
    /// SIGKILL was sent to the group.
    pub sent_kill: bool,
    /// No member of the group was left when teardown finished.
    pub group_gone: bool,
}

/// Grace periods of teardown: after closing stdin, and after SIGTERM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grace {
    pub after_stdin_close: Duration,
    pub after_term: Duration,
}

impl Default for Grace {
    fn default() -> Self {
        Self {
            after_stdin_close: Duration::from_secs(2),
            after_term: Duration::from_secs(2),
        }
    }
}

/// A process group, addressed by its id (the leader's PID).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessGroup {
    pub pgid: i32,
}

/// Memory and CPU of a whole group at one moment, from `/proc`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupUsage {
    pub members: usize,
    pub rss_bytes: u64,
    /// User + system time of live members and of children they have reaped.
    pub cpu_ms: u64,
}

impl ProcessGroup {
    /// Sends `signal` to every member; `Ok(false)` if the group has none.
    pub fn signal(&self, signal: Signal) -> Result<bool> {
        match killpg(Pid::from_raw(self.pgid), signal) {
            Ok(()) => Ok(true),
            Err(Errno::ESRCH) => Ok(false),
            Err(e) => Err(Error::new(
                codes::IO,
                format!("could not signal process group {}: {e}", self.pgid),
            )),
        }
    }

    /// PIDs whose process group is this one (zombies included), from `/proc`.
    pub fn members(&self) -> Vec<i32> {
        self.scan().into_iter().map(|s| s.pid).collect()
    }

    /// Members that are not zombies.
    pub fn live_members(&self) -> Vec<i32> {
        self.scan()
            .into_iter()
            .filter(|s| s.state != 'Z')
            .map(|s| s.pid)
            .collect()
    }

    /// Memory and CPU of all live members.
    pub fn usage(&self) -> GroupUsage {
        let page = page_size();
        let tick_ms = 1000 / clock_ticks().max(1);
        let mut usage = GroupUsage::default();
        for s in self.scan() {
            if s.state == 'Z' {
                continue;
            }
            usage.members += 1;
            usage.rss_bytes += s.rss_pages * page;
            usage.cpu_ms += s.ticks * tick_ms;
        }
        usage
    }

    fn scan(&self) -> Vec<ProcStat> {
        let Ok(dir) = fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(read_stat)
            .filter(|s| s.pgrp == self.pgid)
            .collect()
    }

    /// Reaps members that are this process's children (re-parented orphans
    /// when this process is a subreaper). Never touches other processes' children.
    pub fn reap_children(&self) -> usize {
        let mut reaped = 0;
        loop {
            match waitpid(Pid::from_raw(-self.pgid), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) | Err(_) => return reaped,
                Ok(_) => reaped += 1,
            }
        }
    }
}

struct ProcStat {
    pid: i32,
    state: char,
    pgrp: i32,
    ticks: u64,
    rss_pages: u64,
}

/// Parses `/proc/<pid>/stat`; the command name may hold spaces and parens,
/// so fields are counted from the last `)`.
fn read_stat(pid: i32) -> Option<ProcStat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) pgrp(2) ... utime(11) stime(12) cutime(13) cstime(14) ... rss(21)
    let num = |i: usize| {
        f.get(i)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0)
            .max(0) as u64
    };
    Some(ProcStat {
        pid,
        state: f.first()?.chars().next()?,
        pgrp: f.get(2)?.parse().ok()?,
        ticks: num(11) + num(12) + num(13) + num(14),
        rss_pages: num(21),
    })
}

fn page_size() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .map(|v| v as u64)
        .unwrap_or(4096)
}

fn clock_ticks() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .map(|v| v as u64)
        .unwrap_or(100)
}

/// A running sandboxed child: its handle, its group, its scratch directory and
/// (until taken) its three pipes.
#[derive(Debug)]
pub struct Sandboxed {
    child: Child,
    pub pid: i32,
    pub group: ProcessGroup,
    scratch: Option<ScratchDir>,
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
    exit: Option<ExitInfo>,
}

/// Spawns `spec` in a fresh scratch directory under `root`.
#[tracing::instrument(skip_all, fields(program = %spec.program))]
pub fn spawn(spec: &ChildSpec, root: &ScratchRoot) -> Result<Sandboxed> {
    let scratch = root.create()?;
    let env = spec.resolve_env(scratch.path())?;
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .env_clear()
        .current_dir(scratch.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for (name, value) in &env {
        cmd.env(name, value.expose());
    }
    let mut child = cmd.spawn().map_err(|e| {
        Error::new(codes::SPAWN_FAILED, format!("could not start {}: {e}", spec.program))
            .hint("check the command and that it is on the connection's PATH (the host's PATH is not used)")
    })?;
    let pid = child.id().map(|p| p as i32).unwrap_or(-1);
    tracing::debug!(pid, "spawned sandboxed child");
    Ok(Sandboxed {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        child,
        pid,
        group: ProcessGroup { pgid: pid },
        scratch: Some(scratch),
        exit: None,
    })
}

impl Sandboxed {
    pub fn scratch_path(&self) -> Option<&Path> {
        self.scratch.as_ref().map(|s| s.path())
    }

    /// Waits for the direct child to exit (cancel-safe).
    pub async fn wait(&mut self) -> Result<ExitInfo> {
        if let Some(exit) = self.exit {
            return Ok(exit);
        }
        let status = self
            .child
            .wait()
            .await
            .map_err(|e| Error::new(codes::IO, format!("waiting for the child failed: {e}")))?;
        let exit = ExitInfo::from(status);
        self.exit = Some(exit);
        Ok(exit)
    }

    /// The exit, if already observed.
    pub fn try_exit(&mut self) -> Option<ExitInfo> {
        if self.exit.is_none()
            && let Ok(Some(status)) = self.child.try_wait()
        {
            self.exit = Some(status.into());
        }
        self.exit
    }

    /// Kills the whole group at once (timeouts, resource ceilings).
    pub fn kill_group(&self) {
        let _ = self.group.signal(Signal::SIGKILL);
    }

    /// The one shutdown sequence: close stdin, grace, SIGTERM the group, grace,
    /// SIGKILL the group, reap; then the same for members that outlived the
    /// leader (a grandchild holding a pipe). Removes the scratch directory.
    pub async fn teardown(&mut self, grace: Grace) -> TeardownReport {
        self.stdin.take();
        let mut report = TeardownReport {
            exit: None,
            sent_term: false,
            sent_kill: false,
            group_gone: false,
        };
        let leader_done = tokio::time::timeout(grace.after_stdin_close, self.wait()).await;
        if !matches!(leader_done, Ok(Ok(_))) || !self.group.live_members().is_empty() {
            report.sent_term = self.group.signal(Signal::SIGTERM).unwrap_or(false);
            if report.sent_term {
                self.wait_group(grace.after_term).await;
            }
            if self.exit.is_none() || !self.group.live_members().is_empty() {
                report.sent_kill = self.group.signal(Signal::SIGKILL).unwrap_or(false);
            }
        }
        // SIGKILL cannot be ignored: the leader's exit follows.
        if let Ok(exit) = self.wait().await {
            report.exit = Some(exit);
        }
        // Members now re-parented to us (as subreaper) become zombies: reap them.
        for _ in 0..200 {
            self.group.reap_children();
            if self.group.members().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        report.group_gone = self.group.members().is_empty();
        if let Some(scratch) = self.scratch.take()
            && let Err(e) = scratch.remove()
        {
            tracing::warn!(error = %e, "scratch directory not removed");
        }
        report
    }

    /// Waits up to `limit` for the leader to exit and the group to empty.
    async fn wait_group(&mut self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let _ = self.try_exit();
            self.group.reap_children();
            if self.exit.is_some() && self.group.live_members().is_empty() {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Sandboxed {
    fn drop(&mut self) {
        // kill_on_drop only reaches the leader; a dropped connection must not
        // leave grandchildren running.
        if self.exit.is_none() || !self.group.live_members().is_empty() {
            let _ = self.group.signal(Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_in_debug() {
        let spec = ChildSpec::new("x").env(
            "TOKEN",
            EnvValue::Secret {
                value: SecretValue::new("hunter2"),
            },
        );
        let dbg = format!("{spec:?}");
        assert!(!dbg.contains("hunter2"), "{dbg}");
        assert!(dbg.contains("SecretValue(<redacted>)"));
        let resolved = spec.resolve_env(Path::new("/s")).unwrap();
        assert!(!format!("{resolved:?}").contains("hunter2"));
        assert_eq!(resolved["TOKEN"].expose(), "hunter2");
    }

    #[test]
    fn path_and_home_point_into_the_sandbox_unless_listed() {
        let spec = ChildSpec::new("x");
        let env = spec.resolve_env(Path::new("/scratch/c-1")).unwrap();
        assert_eq!(env.len(), 2);
        assert_eq!(env["PATH"].expose(), DEFAULT_PATH);
        assert_eq!(env["HOME"].expose(), "/scratch/c-1");
        let spec = ChildSpec::new("x").env(
            "PATH",
            EnvValue::Plain {
                value: "/opt/bin".into(),
            },
        );
        assert_eq!(
            spec.resolve_env(Path::new("/s")).unwrap()["PATH"].expose(),
            "/opt/bin"
        );
    }

    #[test]
    fn missing_host_variable_is_an_error_not_an_empty_value() {
        let spec = ChildSpec::new("x").env(
            "A",
            EnvValue::FromHost {
                name: "GATEHOUSE_TEST_SURELY_UNSET_VAR".into(),
            },
        );
        let err = spec.resolve_env(Path::new("/s")).unwrap_err();
        assert_eq!(err.code, codes::ENV_HOST_VAR_MISSING);
    }

    #[test]
    fn bad_names_are_refused() {
        let spec = ChildSpec::new("x").env("A=B", EnvValue::Plain { value: "v".into() });
        assert_eq!(
            spec.resolve_env(Path::new("/s")).unwrap_err().code,
            codes::ENV_INVALID
        );
    }

    #[test]
    fn scratch_dirs_are_removed_on_drop_and_leftovers_swept() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, report) = ScratchRoot::open(tmp.path().join("scratch")).unwrap();
        assert!(report.removed.is_empty());
        let a = root.create().unwrap();
        let path = a.path().to_path_buf();
        assert!(path.is_dir());
        // A live directory survives a sweep.
        assert!(root.sweep().unwrap().removed.is_empty());
        drop(a);
        assert!(!path.exists());
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0);
        // A leftover of a dead host: directory and an unlocked lock file.
        let dead = root.path().join("c-999999-1-0");
        fs::create_dir(&dead).unwrap();
        fs::write(dead.join("junk"), b"x").unwrap();
        fs::write(root.path().join("c-999999-1-0.lock"), b"").unwrap();
        let orphan = root.path().join("c-999998-1-0");
        fs::create_dir(&orphan).unwrap();
        let (_root, report) = ScratchRoot::open(root.path()).unwrap();
        let mut removed = report.removed.clone();
        removed.sort();
        assert_eq!(removed, vec![orphan.clone(), dead.clone()]);
        assert!(!dead.exists() && !orphan.exists());
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0);
    }

    #[test]
    fn proc_stat_parses_names_with_spaces_and_parens() {
        let me = read_stat(std::process::id() as i32).unwrap();
        assert_eq!(me.pid, std::process::id() as i32);
        assert!(me.rss_pages > 0);
    }
}
