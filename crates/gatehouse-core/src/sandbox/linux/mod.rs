//! The Linux backend. Map:
//! - [`landlock`]: what the kernel offers and the Landlock ruleset.
//! - `seccomp`: the socket filter under Landlock (UDP, UNIX sockets, io_uring).
//! - `view`: the read-only view of the file system under Landlock (modes and
//!   times, which Landlock does not rule), scratch in a tmpfs of its quota.
//! - `cgroup`: the pids cgroup holding the process ceiling for a root host.
//! - [`bwrap`]: the optional bubblewrap backend.
//! - `child`: what the child applies to itself before `exec`.
//! - `sys`: every raw system call (with the two `pre_exec` hooks, the only
//!   `unsafe`).
//! - [`reaper`]: every descendant of a child, escaped daemons included.
//! - [`procfs`]: what `/proc` says (groups, usage, PID + start time).
//! - [`host`]: hardening of the host process (non-dumpable, subreaper).
//! - `report`: what applied, for the status ([`describe`]).
//!
//! One [`Plan`] per child: the profile's backend (Landlock, bwrap or none)
//! decides the program and arguments, the ruleset, the socket filter and the
//! view in one place ([`Plan::new`]); the limits are the same for all three.
//!
//! # Caveats
//! The Landlock layer confines files, TCP, signals and ptrace; the socket
//! filter beside it confines UDP and UNIX sockets (by family and type, not
//! by address: an allowed UNIX socket family reaches every socket file). A
//! re-parented orphan is attributed to a connection by what was seen of it
//! (see [`reaper`]); with several live connections in one host, an orphan
//! nobody saw is taken by the first teardown that finds it.

mod cgroup;
mod child;
mod report;
mod seccomp;
mod sys;
mod view;

pub mod bwrap;
pub mod host;
pub mod landlock;
pub mod procfs;
pub mod reaper;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::resource::Resource;
use nix::sys::signal::Signal;
use tokio::process::{Child, Command};

use self::cgroup::PidsCgroup;
use self::child::ChildSetup;
use self::reaper::Tracker;
use self::view::ReadOnlyView;
use super::probe::Isolation;
use super::process::ProcId;
use super::profile::{Backend, Profile};
use super::runtime;
use super::scratch::{ScratchDir, ScratchRoot};
use super::spec::{ChildSpec, ResolvedValue};
use crate::error::Result;

pub use self::host::harden_host;
pub use self::landlock::SYSTEM_READ_ONLY;
pub use self::reaper::become_subreaper;
pub use self::report::describe;

/// How far past its quota a scratch tmpfs may fill: enough that the
/// watchdog sees the quota passed and stops the server with that reason,
/// where a tmpfs of exactly the quota would only answer `ENOSPC`.
const SCRATCH_SLACK: u64 = 1 << 20;

/// What confines one child, decided once from its profile's backend.
struct Confinement {
    program: String,
    args: Vec<String>,
    ruleset: Option<::landlock::RulesetCreated>,
    seccomp: Vec<seccompiler::BpfProgram>,
    view: Option<ReadOnlyView>,
    /// bwrap needs its capabilities to set up its namespaces; every other
    /// child loses them all.
    drop_caps: bool,
}

impl Confinement {
    /// Landlock ruleset, socket filter and (where user namespaces allow)
    /// the read-only view with scratch in a tmpfs.
    fn landlock(
        spec: &ChildSpec,
        profile: &Profile,
        scratch: &Path,
        runtime: &[PathBuf],
        isolation: &Isolation,
    ) -> Result<Self> {
        let ruleset = landlock::ruleset(profile, scratch, runtime)?;
        // Landlock does not rule metadata (modes, times): the view makes
        // every mount but the writable paths read-only.
        let view = if isolation.read_only_view {
            let mut view = ReadOnlyView::new(
                scratch,
                profile.read_write.iter().map(PathBuf::as_path),
                Some(profile.scratch_quota() + SCRATCH_SLACK),
            )?;
            if let Some(ruleset) = &ruleset {
                view.grant_scratch(ruleset)?;
            }
            Some(view)
        } else {
            None
        };
        Ok(Self {
            program: spec.program.clone(),
            args: spec.args.clone(),
            ruleset,
            seccomp: seccomp::child_filters(profile)?,
            view,
            drop_caps: true,
        })
    }

    /// The command wrapped in `bwrap`: the sockets and mounts are its
    /// namespaces' business (and bwrap itself needs netlink to set up).
    fn bwrap(
        spec: &ChildSpec,
        profile: &Profile,
        scratch: &Path,
        runtime: &[PathBuf],
    ) -> Result<Self> {
        let bwrap = bwrap::find()?;
        Ok(Self {
            program: bwrap.to_string_lossy().into_owned(),
            args: bwrap::wrap(profile, scratch, runtime, &spec.program, &spec.args),
            ruleset: None,
            seccomp: Vec::new(),
            view: None,
            drop_caps: false,
        })
    }

    /// Limits and `no_new_privs` only.
    fn none(spec: &ChildSpec) -> Self {
        Self {
            program: spec.program.clone(),
            args: spec.args.clone(),
            ruleset: None,
            seccomp: Vec::new(),
            view: None,
            drop_caps: true,
        }
    }
}

/// One child's plan: its confinement and limits, built in the host before
/// the fork (the child only makes system calls on them).
pub(crate) struct Plan {
    program: String,
    args: Vec<String>,
    setup: ChildSetup,
    cgroup: Option<PidsCgroup>,
    nice: i32,
}

impl Plan {
    pub fn new(
        spec: &ChildSpec,
        env: &BTreeMap<String, ResolvedValue>,
        root: &ScratchRoot,
        scratch: &Path,
        profile: &Profile,
        isolation: &Isolation,
    ) -> Result<Self> {
        let child_path = env.get("PATH").map(|v| v.expose()).unwrap_or_default();
        let protected = runtime::protected_paths(root.site());
        let runtime =
            runtime::guarded_runtime_paths(&spec.program, &spec.args, child_path, &protected);
        let confinement = match profile.backend {
            Backend::Landlock => {
                Confinement::landlock(spec, profile, scratch, &runtime, isolation)?
            }
            Backend::Bwrap => Confinement::bwrap(spec, profile, scratch, &runtime)?,
            // Profile::validate refused every backend Linux lacks.
            Backend::None | Backend::Seatbelt | Backend::JobObject => Confinement::none(spec),
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
        let drop_caps_to = confinement.drop_caps.then(|| {
            std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(63)
        });
        let nice = sys::nice_not_below_host(profile.nice());
        Ok(Self {
            program: confinement.program,
            args: confinement.args,
            setup: ChildSetup {
                ruleset: confinement.ruleset,
                rlimits,
                drop_caps_to,
                nice,
                seccomp: confinement.seccomp,
                cgroup: cgroup.as_ref().map(PidsCgroup::procs),
                view: confinement.view,
            },
            cgroup,
            nice,
        })
    }

    /// What to execute (the command, or its wrapper).
    pub fn program(&self) -> &str {
        &self.program
    }

    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// Spawns `cmd` (environment, directory and pipes set) in a process
    /// group of its own, applying the plan in the child before `exec`, and
    /// records it beside its scratch directory.
    pub fn spawn(
        self,
        mut cmd: Command,
        scratch: &mut ScratchDir,
    ) -> std::io::Result<(Child, Guard)> {
        cmd.process_group(0);
        child::install(&mut cmd, self.setup);
        // Until the tracker below is registered, no teardown may take this
        // child for an orphan (see `reaper::spawning`).
        let spawning = reaper::spawning();
        let child = cmd.spawn()?;
        let pid = child.id().map(|p| p as i32).unwrap_or(-1);
        let leader = ProcId::of(pid).unwrap_or(ProcId { pid, start: 0 });
        if let Err(e) = scratch.record(Some(leader), &[]) {
            tracing::warn!(error = %e, "child not recorded; a killed host leaves it to the cwd scan");
        }
        let tracker = Tracker::new(leader, scratch.path().to_path_buf());
        drop(spawning);
        Ok((
            child,
            Guard {
                tracker,
                cgroup: self.cgroup,
                nice: self.nice,
                host_session: nix::unistd::getsid(None).map_or(0, |s| s.as_raw()),
                reniced: Vec::new(),
            },
        ))
    }
}

/// What the Linux backend keeps of a running child: the descendants seen,
/// its pids cgroup (a root host) and its niceness.
#[derive(Debug)]
pub(crate) struct Guard {
    tracker: Tracker,
    /// Removed on drop, after teardown.
    cgroup: Option<PidsCgroup>,
    /// The profile's niceness, the host's session (the child's at spawn) and
    /// the processes already looked at (see [`Guard::renice_new_sessions`]).
    nice: i32,
    host_session: i32,
    reniced: Vec<ProcId>,
}

impl Guard {
    /// Every descendant of the child seen so far.
    pub fn descendants(&self) -> &[ProcId] {
        self.tracker.seen()
    }

    /// Records descendants seen (for the next start, should this host be
    /// killed), renices new sessions, and returns the bytes scratch holds.
    pub fn watch(&mut self, scratch: &mut ScratchDir, isolation: &Isolation) -> u64 {
        if self.tracker.refresh() {
            let _ = scratch.record(None, self.tracker.seen());
        }
        self.renice_new_sessions();
        let mut live = self.tracker.seen().iter().filter(|p| p.exists());
        // The tmpfs (under the read-only view, scratch is one) as any live
        // process of the child sees it, deleted files included (adding the
        // descriptors' count again killed servers at half their quota);
        // else the files deleted but held. The walk counts what reached
        // the disk beneath.
        let in_memory_or_held = if isolation.read_only_view {
            live.find_map(|p| procfs::fs_used(p.pid, scratch.path()))
                .unwrap_or(0)
        } else {
            procfs::deleted_but_held(live.map(|p| p.pid), scratch.path())
        };
        scratch
            .usage_bytes()
            .map_or(u64::MAX, |bytes| bytes.saturating_add(in_memory_or_held))
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

    /// Kills every descendant that left the group (setsid daemons), and
    /// what is still in the child's pids cgroup (root hosts), whether the
    /// tracker saw it or not. Returns how many there were.
    pub async fn kill_escaped(&mut self, pid: i32) -> usize {
        let before = self.tracker.seen().len();
        if !self.tracker.kill_all().await {
            tracing::warn!(pid, "descendants survived teardown");
        }
        self.tracker.seen().len().saturating_sub(before) + self.kill_cgroup().await
    }

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

    /// At once, without waiting (a dropped connection).
    pub fn kill_now(&self) {
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

/// Kills what a dead host's run left running: recorded processes that are
/// still the same ones, and anything working inside its directory. Waits
/// (bounded) for them to go, so the directory is removed after, not under them.
pub(crate) fn kill_leftovers(recorded: Vec<ProcId>, dir: &Path) -> Vec<ProcId> {
    let mut targets = recorded;
    targets.extend(
        procfs::all()
            .iter()
            .filter(|s| !s.is_zombie() && procfs::cwd_within(s.pid, dir))
            .map(|s| s.id()),
    );
    targets.sort();
    targets.dedup();
    let killed: Vec<ProcId> = targets.into_iter().filter(|p| p.kill_if_same()).collect();
    for _ in 0..200 {
        for p in &killed {
            procfs::reap(p.pid);
        }
        if killed.iter().all(|p| !p.is_live()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    killed
}

/// Lowers the calling thread's priority to `wanted` niceness (never below
/// the host's own); for the stderr reader thread.
pub(crate) fn lower_thread_priority(wanted: u8) -> std::io::Result<()> {
    sys::set_nice(sys::nice_not_below_host(wanted))
}
