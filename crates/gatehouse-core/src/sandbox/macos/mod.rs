//! The macOS backend. Map:
//! - `super::seatbelt` (`macos/seatbelt.rs`, compiled on every system): the
//!   Seatbelt profile text, built by a pure function.
//! - `process`: the macOS side of [`ProcId`] and [`ProcessGroup`] through
//!   `libproc` (`proc_pidinfo`, `proc_pid_rusage`, `proc_listpids`).
//! - `sys`: the `pre_exec` hook and the host calls (the only `unsafe`).
//!
//! The child runs under `/usr/bin/sandbox-exec -p PROFILE` (Seatbelt) in a
//! process group of its own, with rlimits (open files, processes of this
//! user, file size, no core) and the profile's niceness; the owner's
//! watchdog holds memory and CPU (`proc_pid_rusage`) and the scratch quota
//! (by polling the directory). Teardown signals the group, then every
//! descendant seen.
//!
//! # Caveats
//! macOS has no subreaper: a daemon that left the group and was
//! re-parented to launchd is killed only if a poll saw it first.

mod process;
mod sys;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::{Child, Command};

use super::probe::Isolation;
use super::process::ProcId;
use super::profile::{Backend, Profile};
use super::runtime;
use super::scratch::{ScratchDir, ScratchRoot};
use super::seatbelt;
use super::spec::{ChildSpec, ResolvedValue};
use crate::error::Result;

pub(crate) use self::process::kill_leftovers;

/// The system folders every child may read (for the runtime-path guess;
/// the profile lists its own, [`seatbelt::SYSTEM_READ`]).
pub const SYSTEM_READ_ONLY: &[&str] = &["/usr", "/bin", "/sbin", "/System", "/Library"];

/// Seatbelt's launcher, part of every macOS install.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// One child's plan: what to execute (the command under `sandbox-exec`)
/// and the limits the child sets on itself before `exec`.
pub(crate) struct Plan {
    program: String,
    args: Vec<String>,
    rlimits: Vec<(sys::Rlimit, u64)>,
    nice: i32,
}

/// `p` with its symlinks resolved (Seatbelt matches resolved paths), or
/// as given when it does not exist.
fn resolved(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

impl Plan {
    pub fn new(
        spec: &ChildSpec,
        env: &BTreeMap<String, ResolvedValue>,
        root: &ScratchRoot,
        scratch: &Path,
        profile: &Profile,
        _isolation: &Isolation,
    ) -> Result<Self> {
        let child_path = env.get("PATH").map(|v| v.expose()).unwrap_or_default();
        let protected = runtime::protected_paths(root.site());
        let runtime =
            runtime::guarded_runtime_paths(&spec.program, &spec.args, child_path, &protected);
        // sandbox-exec takes its first non-option argument for the command:
        // the resolved path never starts with `-`.
        let program = runtime::resolve_program(&spec.program, child_path).map_or_else(
            || spec.program.clone(),
            |p| p.to_string_lossy().into_owned(),
        );
        let (program, args) = match profile.backend {
            Backend::Seatbelt => {
                let paths = seatbelt::Paths {
                    scratch: resolved(scratch),
                    runtime: runtime.iter().map(|p| resolved(p)).collect(),
                    read_only: profile.read_only.iter().map(|p| resolved(p)).collect(),
                    read_write: profile.read_write.iter().map(|p| resolved(p)).collect(),
                };
                let text = seatbelt::profile_text(profile, &paths)?;
                (
                    SANDBOX_EXEC.to_string(),
                    seatbelt::wrap(&text, &program, &spec.args),
                )
            }
            // Profile::validate refused every backend macOS lacks.
            Backend::None | Backend::Landlock | Backend::Bwrap | Backend::JobObject => {
                (program, spec.args.clone())
            }
        };
        let rlimits = vec![
            (sys::Rlimit::OpenFiles, profile.max_open_files()),
            // RLIMIT_NPROC counts every process of the user: allow this many more.
            (
                sys::Rlimit::Processes,
                process::count_of_user(nix::unistd::getuid().as_raw()) + profile.max_processes(),
            ),
            // No single file may pass the scratch quota.
            (sys::Rlimit::FileSize, profile.scratch_quota()),
            (sys::Rlimit::CoreSize, 0),
        ];
        Ok(Self {
            program,
            args,
            rlimits,
            nice: sys::nice_not_below_host(profile.nice()),
        })
    }

    pub fn program(&self) -> &str {
        &self.program
    }

    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// Spawns `cmd` in a process group of its own, with the plan's limits
    /// set in the child before `exec`, and records it beside its scratch.
    pub fn spawn(
        self,
        mut cmd: Command,
        scratch: &mut ScratchDir,
    ) -> std::io::Result<(Child, Guard)> {
        cmd.process_group(0);
        sys::install(&mut cmd, self.nice, self.rlimits);
        let child = cmd.spawn()?;
        let pid = child.id().map(|p| p as i32).unwrap_or(-1);
        let leader = ProcId::of(pid).unwrap_or(ProcId { pid, start: 0 });
        if let Err(e) = scratch.record(Some(leader), &[]) {
            tracing::warn!(error = %e, "child not recorded; a killed host leaves it to the cwd scan");
        }
        Ok((
            child,
            Guard {
                leader,
                seen: Vec::new(),
            },
        ))
    }
}

/// What the macOS backend keeps of a running child: the descendants seen.
#[derive(Debug)]
pub(crate) struct Guard {
    leader: ProcId,
    seen: Vec<ProcId>,
}

impl Guard {
    pub fn descendants(&self) -> &[ProcId] {
        &self.seen
    }

    /// Records the descendants seen now (below the leader or in its group),
    /// and returns the bytes scratch holds (a walk of the directory).
    pub fn watch(&mut self, scratch: &mut ScratchDir, _isolation: &Isolation) -> u64 {
        let before = self.seen.len();
        for p in process::descendants(self.leader) {
            if !self.seen.contains(&p) {
                self.seen.push(p);
            }
        }
        if self.seen.len() != before {
            let _ = scratch.record(None, &self.seen);
        }
        scratch.usage_bytes().unwrap_or(u64::MAX)
    }

    /// Kills every descendant seen that is still the same process; returns
    /// how many were still running.
    pub async fn kill_escaped(&mut self, pid: i32) -> usize {
        let killed: Vec<ProcId> = self
            .seen
            .iter()
            .filter(|p| p.pid != pid && p.kill_if_same())
            .copied()
            .collect();
        for _ in 0..100 {
            for p in &killed {
                process::reap(p.pid);
            }
            if killed.iter().all(|p| !p.is_live()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        killed.len()
    }

    pub fn kill_now(&self) {
        for p in &self.seen {
            p.kill_if_same();
        }
    }
}

/// What applies for `profile` here (see the module doc); what Seatbelt does
/// not cover is said in `warnings`.
pub fn describe(profile: &Profile) -> Isolation {
    seatbelt::status(profile, Path::new(SANDBOX_EXEC).exists())
}

/// macOS has no non-dumpable flag a same-user process must respect the way
/// Linux's is, and Seatbelt's `process-info*` rule keeps the child from
/// inspecting the host: nothing to set.
pub fn harden_host() -> Result<()> {
    Ok(())
}

/// macOS has no subreaper: orphans go to launchd (see the module caveat).
pub fn become_subreaper() -> Result<()> {
    Ok(())
}

/// macOS keeps niceness per process, not per thread: the stderr reader
/// keeps the host's priority.
pub(crate) fn lower_thread_priority(_wanted: u8) -> std::io::Result<()> {
    Ok(())
}
