//! Finding and killing every descendant of a child, not only its process
//! group: the host is a subreaper, so a daemon that double-forks and calls
//! `setsid` is re-parented to the host, where [`Tracker`] finds it; each
//! process seen is recorded (PID + start time) next to the scratch directory,
//! so a host killed with SIGKILL leaves the next start what to kill.
//!
//! Attribution of the host's re-parented orphans: a process seen below the
//! child, or in the child's own user namespace (the read-only view gives
//! each Landlock child one, and descendants inherit it), is this
//! connection's. Otherwise an orphan of the host with `no_new_privs` set
//! (every sandboxed child has it; the host and the programs it starts
//! otherwise do not) that is not another live connection's leader, not in
//! another's record and not working in another's scratch is this
//! connection's when it is the only live connection started before the
//! orphan; when several could own it, nobody records it, and the first
//! teardown among them kills it (a daemon never outlives its own connection;
//! it may die early with a sibling's).

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use super::procfs::{self, ProcStat};
use crate::error::{Error, Result, codes};
use crate::sandbox::process::ProcId;

/// Makes this process the reaper of orphaned descendants, so escaped
/// daemons of a sandboxed child are re-parented here (where teardown finds
/// them) instead of to init. Process-wide; call once at start.
pub fn become_subreaper() -> Result<()> {
    nix::sys::prctl::set_child_subreaper(true).map_err(|e| {
        Error::new(
            codes::IO,
            format!("could not become the subreaper of child processes: {e}"),
        )
    })
}

struct Live {
    leader: i32,
    start: u64,
    scratch: PathBuf,
    tracked: Vec<ProcId>,
    userns: Option<u64>,
}

/// Live connections of this host, for attributing re-parented orphans.
static LIVE: Mutex<Vec<Live>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<Live>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Held from a child's fork until its [`Tracker`] is registered, and by every
/// scan for orphans: otherwise a child another connection just spawned (a host
/// child with `no_new_privs`, not yet anyone's leader) looks like an orphan,
/// and a teardown running at that moment kills it.
static SPAWNING: Mutex<()> = Mutex::new(());

/// Hold while spawning a child and registering its [`Tracker`].
pub fn spawning() -> std::sync::MutexGuard<'static, ()> {
    SPAWNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// The descendants of one child, as seen so far.
#[derive(Debug)]
pub struct Tracker {
    leader: ProcId,
    scratch: PathBuf,
    seen: Vec<ProcId>,
    /// The child's own user namespace (the read-only view makes one), which
    /// every descendant inherits: it names an orphan's owner exactly. The
    /// open handle keeps the namespace, so its number cannot be given to a
    /// later child's while this tracker exists (they are reused: a tracker
    /// whose child had exited took a new child for its own and killed it).
    userns: Option<u64>,
    _userns_handle: Option<std::fs::File>,
}

impl Tracker {
    pub fn new(leader: ProcId, scratch: PathBuf) -> Self {
        let host = procfs::user_ns(std::process::id() as i32);
        let handle = procfs::user_ns_handle(leader.pid).filter(|(_, ns)| Some(*ns) != host);
        let userns = handle.as_ref().map(|(_, ns)| *ns);
        live().push(Live {
            leader: leader.pid,
            start: leader.start,
            scratch: scratch.clone(),
            tracked: Vec::new(),
            userns,
        });
        Self {
            leader,
            scratch,
            seen: Vec::new(),
            userns,
            _userns_handle: handle.map(|(file, _)| file),
        }
    }

    pub fn seen(&self) -> &[ProcId] {
        &self.seen
    }

    /// Live processes that belong to this child now: below it, recorded, or
    /// orphans of the host attributed to it.
    fn current(&self, procs: &[ProcStat], take_shared: bool) -> Vec<ProcId> {
        let mut out = procfs::tree(procs, self.leader.pid);
        if self.leader.is_live() {
            out.push(self.leader);
        }
        out.extend(self.seen.iter().filter(|p| p.is_live()));
        let host = std::process::id() as i32;
        let live = live();
        for s in procs.iter().filter(|s| s.ppid == host) {
            if self.claims(s, &live, take_shared) {
                out.push(s.id());
                out.extend(procfs::tree(procs, s.pid));
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// Whether `s`, an orphan re-parented to the host, is this child's (see
    /// the module doc): live, not another live connection's leader, record or
    /// scratch, sandboxed (`no_new_privs`), and not shared with an older
    /// live connection unless `take_shared`.
    fn claims(&self, s: &ProcStat, live: &[Live], take_shared: bool) -> bool {
        if s.is_zombie() {
            return false;
        }
        if let Some(ns) = procfs::user_ns(s.pid) {
            if self.userns == Some(ns) {
                return s.pid != self.leader.pid;
            }
            if live
                .iter()
                .any(|l| l.leader != self.leader.pid && l.userns == Some(ns))
            {
                return false;
            }
        }
        let id = s.id();
        let others = || live.iter().filter(|l| l.leader != self.leader.pid);
        let theirs = others().any(|l| {
            l.leader == s.pid || l.tracked.contains(&id) || procfs::cwd_within(s.pid, &l.scratch)
        });
        let shared = others().any(|l| l.start <= s.start);
        !theirs
            && (take_shared || !shared)
            && s.pid != self.leader.pid
            && procfs::no_new_privs(s.pid)
    }

    /// Stops this child's orphans as fast as they are re-parented here. A
    /// process that forks and exits in a tight loop after `setsid` (found by
    /// an attack run) outran the full `/proc` scan between two hops and
    /// outlived teardown; the host's own `children` files are a few small
    /// reads, and a stopped process forks no more, so the kill that follows
    /// finds it. Call with [`spawning`] held.
    fn freeze_orphans(&self) {
        let mut stopped: Vec<i32> = Vec::new();
        for _ in 0..10_000 {
            let fresh: Vec<i32> = {
                let live = live();
                host_children()
                    .into_iter()
                    .filter(|p| !stopped.contains(p))
                    .filter_map(procfs::read_stat)
                    .filter(|s| self.claims(s, &live, true))
                    .map(|s| s.pid)
                    .collect()
            };
            if fresh.is_empty() {
                return;
            }
            for pid in fresh {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGSTOP,
                );
                stopped.push(pid);
            }
        }
    }

    /// Adds what is new; true when the record changed.
    pub fn refresh(&mut self) -> bool {
        let now = {
            let _spawning = spawning();
            self.current(&procfs::all(), false)
        };
        let before = self.seen.len();
        for p in now {
            if !self.seen.contains(&p) {
                self.seen.push(p);
            }
        }
        let changed = self.seen.len() != before;
        if changed && let Some(l) = live().iter_mut().find(|l| l.leader == self.leader.pid) {
            l.tracked = self.seen.clone();
        }
        changed
    }

    /// SIGKILLs everything that belongs to the child but the leader (which
    /// its owner waits for) until nothing is left (bounded), reaping what was
    /// re-parented here; true when none is left.
    pub async fn kill_all(&mut self) -> bool {
        for _ in 0..300 {
            let now = {
                let _spawning = spawning();
                self.freeze_orphans();
                self.current(&procfs::all(), true)
            };
            for p in &now {
                if !self.seen.contains(p) {
                    self.seen.push(*p);
                }
            }
            let targets: Vec<ProcId> = now.into_iter().filter(|p| *p != self.leader).collect();
            if targets.is_empty() {
                return true;
            }
            for p in &targets {
                p.kill_if_same();
                procfs::reap(p.pid);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    /// SIGKILLs them once, synchronously, for drop handlers.
    pub fn kill_all_now(&self) {
        let _spawning = spawning();
        for p in self.current(&procfs::all(), true) {
            p.kill_if_same();
        }
    }

    pub fn scratch(&self) -> &std::path::Path {
        &self.scratch
    }
}

/// The host's direct children, from every thread's `children` file (an
/// orphan is re-parented to one thread of the subreaper).
fn host_children() -> Vec<i32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
                out.extend(
                    text.split_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok()),
                );
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

impl Drop for Tracker {
    fn drop(&mut self) {
        live().retain(|l| l.leader != self.leader.pid);
    }
}
