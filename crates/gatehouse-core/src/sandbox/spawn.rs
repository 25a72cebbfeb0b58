//! The one builder that spawns children ([`spawn_with`]) and the one owner
//! that tears them down ([`Sandboxed::teardown`]).
//!
//! The builder: a fresh scratch directory, `env_clear()` + the listed
//! variables, scratch as working directory and `HOME`, all three streams
//! piped, its own process group, `kill_on_drop`; then the profile's backend
//! (Landlock ruleset, or the command wrapped in `bwrap`) and, in the child
//! before `exec`, resource limits and `no_new_privs` (`child.rs`).
//! Teardown: close stdin, grace, SIGTERM the group, grace, SIGKILL the group,
//! then every other descendant the [`Tracker`] attributes to the child
//! (escaped `setsid` daemons included), reap, remove the scratch directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::resource::Resource;
use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

use super::bwrap;
use super::cgroup::PidsCgroup;
use super::child::{self, ChildSetup};
use super::isolation::{self, Isolation};
use super::procfs::{self, ProcId, ProcessGroup};
use super::profile::{Backend, Profile};
use super::reaper::Tracker;
use super::scratch::{ScratchDir, ScratchRoot};
use super::spec::ChildSpec;
use super::view::ReadOnlyView;
use crate::error::{Error, Result, codes};

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
    /// Processes outside the group (escaped daemons) killed by teardown.
    pub escaped_killed: usize,
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

/// A running sandboxed child: its handle, its group, its scratch directory and
/// (until taken) its three pipes.
#[derive(Debug)]
pub struct Sandboxed {
    child: Child,
    pub pid: i32,
    pub group: ProcessGroup,
    scratch: Option<ScratchDir>,
    tracker: Tracker,
    /// The pids cgroup holding the ceiling for a root host (removed on drop,
    /// after teardown).
    cgroup: Option<PidsCgroup>,
    isolation: Isolation,
    quota: u64,
    /// The profile's niceness, the host's session (the child's at spawn) and
    /// the processes already looked at (see [`Sandboxed::watch`]).
    nice: i32,
    host_session: i32,
    reniced: Vec<ProcId>,
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
    exit: Option<ExitInfo>,
}

/// How far past its quota a scratch tmpfs may fill: enough that the
/// watchdog sees the quota passed and stops the server with that reason,
/// where a tmpfs of exactly the quota would only answer `ENOSPC`.
const SCRATCH_SLACK: u64 = 1 << 20;

/// Spawns `spec` in a fresh scratch directory under `root`, default profile.
pub fn spawn(spec: &ChildSpec, root: &ScratchRoot) -> Result<Sandboxed> {
    spawn_with(spec, root, &Profile::default())
}

/// Spawns `spec` confined by `profile` in a fresh scratch directory under `root`.
#[tracing::instrument(skip_all, fields(program = %spec.program))]
pub fn spawn_with(spec: &ChildSpec, root: &ScratchRoot, profile: &Profile) -> Result<Sandboxed> {
    profile.validate()?;
    let mut scratch = root.create()?;
    let env = spec.resolve_env(scratch.path())?;
    let child_path = env
        .get("PATH")
        .map(|v| v.expose().to_string())
        .unwrap_or_default();
    let protected = isolation::protected_paths(root.site());
    let runtime =
        isolation::guarded_runtime_paths(&spec.program, &spec.args, &child_path, &protected);
    // What is weaker than asked is said once, here, and kept with the child.
    let isolation = isolation::describe(profile);
    for w in &isolation.warnings {
        tracing::warn!(program = %spec.program, "{w}");
    }
    let (program, args, ruleset) = match profile.backend {
        Backend::Landlock => {
            let ruleset = isolation::ruleset(profile, scratch.path(), &runtime)?;
            (spec.program.clone(), spec.args.clone(), ruleset)
        }
        Backend::Bwrap => {
            let bwrap = bwrap::find()?;
            let args = bwrap::wrap(profile, scratch.path(), &runtime, &spec.program, &spec.args);
            (bwrap.to_string_lossy().into_owned(), args, None)
        }
        Backend::None => (spec.program.clone(), spec.args.clone(), None),
    };
    // Under bwrap, the sockets are its namespaces' business (and bwrap itself
    // needs netlink to set up); `none` confines nothing.
    let seccomp = match profile.backend {
        Backend::Landlock => super::seccomp::child_filters(profile)?,
        Backend::Bwrap | Backend::None => Vec::new(),
    };
    // Landlock does not rule metadata (modes, times): the view makes every
    // mount but the writable paths read-only. bwrap mounts its own; `none`
    // confines nothing.
    let view = match profile.backend {
        Backend::Landlock if isolation.read_only_view => {
            let mut view = ReadOnlyView::new(
                scratch.path(),
                profile.read_write.iter().map(PathBuf::as_path),
                Some(profile.scratch_quota() + SCRATCH_SLACK),
            )?;
            if let Some(ruleset) = &ruleset {
                view.grant_scratch(ruleset)?;
            }
            Some(view)
        }
        _ => None,
    };
    let uid = nix::unistd::getuid();
    // The kernel never applies RLIMIT_NPROC to root: a pids cgroup does.
    let cgroup = uid
        .is_root()
        .then(|| PidsCgroup::create(profile.max_processes()))
        .flatten();
    let mut rlimits = vec![
        (Resource::RLIMIT_NOFILE, profile.max_open_files()),
        // RLIMIT_NPROC counts every process of the user: allow this many more.
        (
            Resource::RLIMIT_NPROC,
            procfs::count_of_user(uid.as_raw()) + profile.max_processes(),
        ),
        // No single file may pass the scratch quota.
        (Resource::RLIMIT_FSIZE, profile.scratch_quota()),
        (Resource::RLIMIT_CORE, 0),
    ];
    if let Some(mem) = profile.max_memory_bytes {
        // RLIMIT_DATA, not RLIMIT_AS: runtimes such as V8 reserve large
        // address ranges they never use; DATA counts only writable private memory.
        rlimits.push((Resource::RLIMIT_DATA, mem));
    }
    let mut cmd = Command::new(&program);
    cmd.args(&args)
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
    let drop_caps_to = (profile.backend != Backend::Bwrap).then(|| {
        std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(63)
    });
    let nice = child::nice_not_below_host(profile.nice());
    child::install(
        &mut cmd,
        ChildSetup {
            ruleset,
            rlimits,
            drop_caps_to,
            nice,
            seccomp,
            cgroup: cgroup.as_ref().map(PidsCgroup::procs),
            view,
        },
    );
    // Until the tracker below is registered, no teardown may take this child
    // for an orphan (see `reaper::spawning`).
    let spawning = super::reaper::spawning();
    let mut child = cmd.spawn().map_err(|e| {
        Error::new(codes::SPAWN_FAILED, format!("could not start {}: {e}", spec.program))
            .hint("check the command and that it is on the connection's PATH (the host's PATH is not used)")
    })?;
    let pid = child.id().map(|p| p as i32).unwrap_or(-1);
    let leader = ProcId::of(pid).unwrap_or(ProcId { pid, start: 0 });
    if let Err(e) = scratch.record(Some(leader), &[]) {
        tracing::warn!(error = %e, "child not recorded; a killed host leaves it to the cwd scan");
    }
    tracing::debug!(pid, "spawned sandboxed child");
    let tracker = Tracker::new(leader, scratch.path().to_path_buf());
    drop(spawning);
    Ok(Sandboxed {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        child,
        pid,
        group: ProcessGroup { pgid: pid },
        tracker,
        cgroup,
        scratch: Some(scratch),
        isolation,
        quota: profile.scratch_quota(),
        nice,
        host_session: nix::unistd::getsid(None).map_or(0, |s| s.as_raw()),
        reniced: Vec::new(),
        exit: None,
    })
}

/// A ceiling the sandbox itself watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaExceeded {
    pub used: u64,
    pub limit: u64,
}

impl Sandboxed {
    pub fn scratch_path(&self) -> Option<&Path> {
        self.scratch.as_ref().map(|s| s.path())
    }

    /// How the child is confined.
    pub fn isolation(&self) -> &Isolation {
        &self.isolation
    }

    /// Memory and CPU of the child: its process group and every descendant
    /// seen, wherever its group now is.
    pub fn usage(&self) -> procfs::GroupUsage {
        self.group.usage_with(self.tracker.seen())
    }

    /// Every descendant of the child seen so far.
    pub fn descendants(&self) -> &[procfs::ProcId] {
        self.tracker.seen()
    }

    /// Periodic care, from the owner's watchdog: records descendants seen
    /// (for the next start, should this host be killed) and checks the
    /// scratch quota (files in scratch, and deleted ones still held open).
    pub fn watch(&mut self) -> Option<QuotaExceeded> {
        if self.tracker.refresh()
            && let Some(s) = self.scratch.as_mut()
        {
            let _ = s.record(None, self.tracker.seen());
        }
        self.renice_new_sessions();
        // What cannot be measured counts as over the quota.
        let used = self.scratch.as_ref().map_or(0, |s| {
            let mut live = self.tracker.seen().iter().filter(|p| p.exists());
            // The tmpfs (under the read-only view, scratch is one) as any live
            // process of the child sees it, deleted files included (adding the
            // descriptors' count again killed servers at half their quota);
            // else the files deleted but held. The walk counts what reached
            // the disk beneath.
            let in_memory_or_held = if self.isolation.read_only_view {
                live.find_map(|p| procfs::fs_used(p.pid, s.path()))
                    .unwrap_or(0)
            } else {
                procfs::deleted_but_held(live.map(|p| p.pid), s.path())
            };
            s.usage_bytes()
                .map_or(u64::MAX, |bytes| bytes.saturating_add(in_memory_or_held))
        });
        (used >= self.quota).then_some(QuotaExceeded {
            used,
            limit: self.quota,
        })
    }

    /// A descendant in a session of its own (it or a parent called `setsid`)
    /// is in a scheduler autogroup of its own too: its niceness then ranks it
    /// only against that group, and the group competes with the admin's
    /// window at full weight. Each such process's autogroup gets the profile's
    /// niceness (a same-user process may lower a priority; only
    /// `CAP_SYS_NICE` raises one).
    fn renice_new_sessions(&mut self) {
        if self.nice == 0 {
            return;
        }
        for p in self.tracker.seen().to_vec() {
            if self.reniced.contains(&p) {
                continue;
            }
            let Some(stat) = procfs::read_stat(p.pid).filter(|s| s.start == p.start) else {
                continue;
            };
            if stat.session == self.host_session {
                self.reniced.push(p);
                continue;
            }
            // EAGAIN: the kernel lets unprivileged writers do this ten times a
            // second at most; the next poll tries again.
            if std::fs::write(format!("/proc/{}/autogroup", p.pid), self.nice.to_string()).is_ok() {
                self.reniced.push(p);
            }
        }
    }

    /// Waits for the direct child to exit (cancel-safe).
    pub async fn wait(&mut self) -> Result<ExitInfo> {
        if let Some(exit) = self.exit {
            return Ok(exit);
        }
        let status = self.child.wait().await.map_err(|e| {
            Error::new(
                codes::IO_ERROR,
                format!("waiting for the child failed: {e}"),
            )
        })?;
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
            escaped_killed: 0,
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
        // Then whatever left the group (setsid daemons), before the scratch goes.
        let before = self.tracker.seen().len();
        if !self.tracker.kill_all().await {
            tracing::warn!(pid = self.pid, "descendants survived teardown");
        }
        report.escaped_killed = self.tracker.seen().len().saturating_sub(before);
        report.escaped_killed += self.kill_cgroup().await;
        if let Some(scratch) = self.scratch.take()
            && let Err(e) = scratch.remove()
        {
            tracing::warn!(error = %e, "scratch directory not removed");
        }
        report
    }

    /// Kills what is still in the child's pids cgroup (root hosts): its
    /// descendants and nothing else, whether the tracker saw them or not.
    /// Returns how many there were.
    async fn kill_cgroup(&self) -> usize {
        let Some(cgroup) = &self.cgroup else {
            return 0;
        };
        let first = cgroup.pids();
        let mut left = first.clone();
        for _ in 0..100 {
            if left.is_empty() {
                break;
            }
            for pid in &left {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), Signal::SIGKILL);
                procfs::reap(*pid);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
            left = cgroup.pids();
        }
        first.len()
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
        self.tracker.kill_all_now();
        for pid in self
            .cgroup
            .as_ref()
            .map(PidsCgroup::pids)
            .unwrap_or_default()
        {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}
