//! The macOS side of [`ProcId`] (PID + start time in microseconds since the
//! epoch) and [`ProcessGroup`] (members, usage, signals), through `libproc`.

use std::path::Path;
use std::time::Duration;

use libproc::bsd_info::BSDInfo;
use libproc::pid_rusage::{RUsageInfoV2, pidrusage};
use libproc::proc_pid::{pidcwd, pidinfo};
use libproc::processes::{ProcFilter, pids_by_type};
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::sandbox::process::{GroupUsage, ProcId, ProcessGroup};

/// `p_stat` of a zombie (`<sys/proc.h>`).
const SZOMB: u32 = 5;

fn bsd_info(pid: i32) -> Option<BSDInfo> {
    pidinfo::<BSDInfo>(pid, 0).ok()
}

fn id_of(info: &BSDInfo) -> ProcId {
    ProcId {
        pid: info.pbi_pid as i32,
        start: info.pbi_start_tvsec * 1_000_000 + info.pbi_start_tvusec,
    }
}

fn pids(filter: ProcFilter) -> Vec<i32> {
    pids_by_type(filter)
        .unwrap_or_default()
        .into_iter()
        .filter(|&p| p > 0)
        .map(|p| p as i32)
        .collect()
}

impl ProcId {
    /// The process as it is now, if it exists.
    pub fn of(pid: i32) -> Option<ProcId> {
        bsd_info(pid).map(|i| id_of(&i))
    }

    /// Whether this very process (not a recycled PID) still exists, zombie or not.
    pub fn exists(&self) -> bool {
        bsd_info(self.pid).is_some_and(|i| id_of(&i) == *self)
    }

    /// Whether this very process is running (exists and is not a zombie).
    pub fn is_live(&self) -> bool {
        bsd_info(self.pid).is_some_and(|i| id_of(&i) == *self && i.pbi_status != SZOMB)
    }

    /// SIGKILLs the process only if it is still the one recorded.
    pub fn kill_if_same(&self) -> bool {
        self.is_live() && kill(Pid::from_raw(self.pid), Signal::SIGKILL).is_ok()
    }
}

impl ProcessGroup {
    /// PIDs whose process group is this one (zombies included).
    pub fn members(&self) -> Vec<i32> {
        pids(ProcFilter::ByProgramGroup {
            pgrpid: self.pgid as u32,
        })
    }

    /// Members that are not zombies.
    pub fn live_members(&self) -> Vec<i32> {
        self.members()
            .into_iter()
            .filter(|&p| bsd_info(p).is_some_and(|i| i.pbi_status != SZOMB))
            .collect()
    }

    /// Memory and CPU of all live members.
    pub fn usage(&self) -> GroupUsage {
        self.usage_with(&[])
    }

    /// Memory (resident) and CPU (user + system, with reaped children's) of
    /// the live members and of the live processes in `tracked`.
    pub fn usage_with(&self, tracked: &[ProcId]) -> GroupUsage {
        let mut all = self.live_members();
        all.extend(tracked.iter().filter(|p| p.is_live()).map(|p| p.pid));
        all.sort_unstable();
        all.dedup();
        let (numer, denom) = super::sys::timebase();
        let mut usage = GroupUsage::default();
        for pid in all {
            let Ok(r) = pidrusage::<RUsageInfoV2>(pid) else {
                continue;
            };
            let ticks =
                r.ri_user_time + r.ri_system_time + r.ri_child_user_time + r.ri_child_system_time;
            usage.members += 1;
            usage.rss_bytes += r.ri_resident_size;
            usage.cpu_ms += (u128::from(ticks) * u128::from(numer)
                / u128::from(denom.max(1))
                / 1_000_000) as u64;
        }
        usage
    }

    /// Reaps members that are this process's children.
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

/// The live processes below `leader` (by parent links) and in its group.
pub(crate) fn descendants(leader: ProcId) -> Vec<ProcId> {
    let mut out = Vec::new();
    let mut frontier = vec![leader.pid];
    while let Some(p) = frontier.pop() {
        for child in pids(ProcFilter::ByParentProcess { ppid: p as u32 }) {
            if let Some(id) = ProcId::of(child).filter(|id| id.is_live() && !out.contains(id)) {
                out.push(id);
                frontier.push(child);
            }
        }
    }
    for pid in (ProcessGroup { pgid: leader.pid }).live_members() {
        if let Some(id) = ProcId::of(pid).filter(|id| *id != leader && !out.contains(id)) {
            out.push(id);
        }
    }
    out
}

/// Processes whose real user is `uid` (`RLIMIT_NPROC` counts them all).
pub(crate) fn count_of_user(uid: u32) -> u64 {
    pids(ProcFilter::ByRealUID { ruid: uid }).len() as u64
}

/// Reaps `pid` if it is a zombie child of this process.
pub(crate) fn reap(pid: i32) {
    let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
}

/// Kills what a dead host's run left running: recorded processes that are
/// still the same ones, and this user's processes working inside `dir`.
pub(crate) fn kill_leftovers(recorded: Vec<ProcId>, dir: &Path) -> Vec<ProcId> {
    let mut targets = recorded;
    let uid = nix::unistd::getuid().as_raw();
    targets.extend(
        pids(ProcFilter::ByRealUID { ruid: uid })
            .into_iter()
            .filter(|&p| pidcwd(p).is_ok_and(|cwd| cwd.starts_with(dir)))
            .filter_map(ProcId::of),
    );
    targets.sort();
    targets.dedup();
    let killed: Vec<ProcId> = targets.into_iter().filter(|p| p.kill_if_same()).collect();
    for _ in 0..200 {
        for p in &killed {
            reap(p.pid);
        }
        if killed.iter().all(|p| !p.is_live()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    killed
}
