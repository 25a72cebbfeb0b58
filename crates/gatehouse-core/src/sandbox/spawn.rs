//! The one builder that spawns children ([`spawn_with`]) and the one owner
//! that tears them down ([`Sandboxed::teardown`]), on every system.
//!
//! The builder: the profile checked (a backend this system lacks, or an
//! option its backend cannot honour, is refused), a fresh scratch directory,
//! `env_clear()` + the listed variables, scratch as working directory and
//! `HOME`, all three streams piped, `kill_on_drop`; then the backend's plan
//! (`os::Plan`: the confinement and limits, its own process group) spawns it.
//! Teardown, the contract every backend keeps: close stdin, grace, ask the
//! group to stop ([`Stop::Term`]), grace, kill the group ([`Stop::Kill`]),
//! reap; then every other descendant the backend attributes to the child
//! (escaped daemons included), then remove the scratch directory.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
// The Windows backend creates the child itself (a restricted token and a
// handle list are beyond tokio's `Command`) behind the same surface.
#[cfg(windows)]
use super::os::Child;
#[cfg(not(windows))]
use tokio::process::Child;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};

use super::os;
use super::probe::{self, Isolation};
use super::process::{GroupUsage, ProcId, ProcessGroup, Stop};
use super::profile::Profile;
use super::scratch::{ScratchDir, ScratchRoot};
use super::spec::ChildSpec;
use crate::error::{Error, Result, codes};

/// How a child ended, as observed (never invented).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct ExitInfo {
    /// The exit code, when it exited by itself.
    pub code: Option<i32>,
    /// The signal that ended it, when one did (Unix only).
    pub signal: Option<i32>,
}

impl From<std::process::ExitStatus> for ExitInfo {
    fn from(status: std::process::ExitStatus) -> Self {
        #[cfg(unix)]
        let signal = std::os::unix::process::ExitStatusExt::signal(&status);
        #[cfg(not(unix))]
        let signal = None;
        Self {
            code: status.code(),
            signal,
        }
    }
}

/// What teardown had to do and what it saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TeardownReport {
    /// The direct child's exit, if it was observed.
    pub exit: Option<ExitInfo>,
    /// The group was asked to stop (SIGTERM).
    pub sent_term: bool,
    /// The group was killed (SIGKILL, or the Job Object terminated).
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

/// A running sandboxed child: its handle, its group, its scratch directory,
/// what its backend keeps of it ([`os::Guard`]) and (until taken) its pipes.
#[derive(Debug)]
pub struct Sandboxed {
    child: Child,
    pub pid: i32,
    pub group: ProcessGroup,
    scratch: Option<ScratchDir>,
    guard: os::Guard,
    isolation: Isolation,
    quota: u64,
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
    exit: Option<ExitInfo>,
}

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
    // What is weaker than asked is said once, here, and kept with the child.
    let isolation = probe::describe(profile);
    for w in &isolation.warnings {
        tracing::warn!(program = %spec.program, "{w}");
    }
    let plan = os::Plan::new(spec, &env, root, scratch.path(), profile, &isolation)?;
    let mut cmd = Command::new(plan.program());
    cmd.args(plan.args())
        .env_clear()
        .current_dir(scratch.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in &env {
        cmd.env(name, value.expose());
    }
    let (mut child, guard) = plan.spawn(cmd, &mut scratch).map_err(|e| {
        Error::new(codes::SPAWN_FAILED, format!("could not start {}: {e}", spec.program))
            .hint("check the command and that it is on the connection's PATH (the host's PATH is not used)")
    })?;
    let pid = child.id().map(|p| p as i32).unwrap_or(-1);
    tracing::debug!(pid, "spawned sandboxed child");
    // The Windows backend knows what the system applied only once the child
    // runs (its job, its token): the status is that, not the forecast.
    #[cfg(windows)]
    let isolation = guard.isolation(&isolation);
    Ok(Sandboxed {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        child,
        pid,
        group: ProcessGroup { pgid: pid },
        guard,
        scratch: Some(scratch),
        isolation,
        quota: profile.scratch_quota(),
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
    pub fn usage(&self) -> GroupUsage {
        self.group.usage_with(self.guard.descendants())
    }

    /// Every descendant of the child seen so far.
    pub fn descendants(&self) -> &[ProcId] {
        self.guard.descendants()
    }

    /// Periodic care, from the owner's watchdog: the backend's (descendants
    /// recorded for the next start, should this host be killed) and the
    /// scratch quota (files in scratch, and what the backend sees held
    /// beyond them). What cannot be measured counts as over the quota.
    pub fn watch(&mut self) -> Option<QuotaExceeded> {
        let used = match self.scratch.as_mut() {
            Some(scratch) => self.guard.watch(scratch, &self.isolation),
            None => 0,
        };
        (used >= self.quota).then_some(QuotaExceeded {
            used,
            limit: self.quota,
        })
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
        let _ = self.group.signal(Stop::Kill);
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
            report.sent_term = self.group.signal(Stop::Term).unwrap_or(false);
            if report.sent_term {
                self.wait_group(grace.after_term).await;
            }
            if self.exit.is_none() || !self.group.live_members().is_empty() {
                report.sent_kill = self.group.signal(Stop::Kill).unwrap_or(false);
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
        report.escaped_killed = self.guard.kill_escaped(self.pid).await;
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
            let _ = self.group.signal(Stop::Kill);
        }
        self.guard.kill_now();
    }
}
