//! What `/proc` says about processes: one parser of `/proc/<pid>/stat`
//! ([`ProcStat`]), the Linux side of [`ProcId`] (PID + start time in clock
//! ticks) and [`ProcessGroup`] (members, usage, signals), the descendants of
//! a process, and the host's re-parented orphans.

use std::fs;
use std::path::Path;

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::sandbox::process::{GroupUsage, ProcId, ProcessGroup};

impl ProcId {
    /// The process as it is now, if it exists.
    pub fn of(pid: i32) -> Option<ProcId> {
        read_stat(pid).map(|s| s.id())
    }

    /// Whether this very process (not a recycled PID) still exists, zombie or not.
    pub fn exists(&self) -> bool {
        read_stat(self.pid).is_some_and(|s| s.start == self.start)
    }

    /// Whether this very process is running (exists and is not a zombie).
    pub fn is_live(&self) -> bool {
        read_stat(self.pid).is_some_and(|s| s.start == self.start && !s.is_zombie())
    }

    /// SIGKILLs the process only if it is still the one recorded. The check
    /// and the kill are not atomic, but a PID is recycled only after its owner
    /// is reaped, and a recorded child of a dead host is reaped by init long
    /// before the PID space wraps.
    pub fn kill_if_same(&self) -> bool {
        if !self.is_live() {
            return false;
        }
        kill(Pid::from_raw(self.pid), Signal::SIGKILL).is_ok()
    }
}

pub(crate) struct ProcStat {
    pub pid: i32,
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
    pub ticks: u64,
    pub start: u64,
    pub rss_pages: u64,
}

impl ProcStat {
    pub fn id(&self) -> ProcId {
        ProcId {
            pid: self.pid,
            start: self.start,
        }
    }

    pub fn is_zombie(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }
}

/// Parses `/proc/<pid>/stat`; the command name may hold spaces and parens,
/// so fields are counted from the last `)`.
pub(crate) fn read_stat(pid: i32) -> Option<ProcStat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) pgrp(2) session(3) ... utime(11) stime(12)
    // cutime(13) cstime(14) ... starttime(19) vsize(20) rss(21)
    let num = |i: usize| {
        f.get(i)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0)
            .max(0) as u64
    };
    Some(ProcStat {
        pid,
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        session: f.get(3)?.parse().ok()?,
        ticks: num(11) + num(12) + num(13) + num(14),
        start: f.get(19)?.parse().ok()?,
        rss_pages: num(21),
    })
}

/// Every process on the system, as `stat` says now.
pub(crate) fn all() -> Vec<ProcStat> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .collect()
}

/// `root` and every live process below it, by parent links, from one snapshot.
pub(crate) fn tree(procs: &[ProcStat], root: i32) -> Vec<ProcId> {
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for s in procs.iter().filter(|s| s.ppid == p && !s.is_zombie()) {
            out.push(s.id());
            frontier.push(s.pid);
        }
    }
    out
}

/// Whether the process set `no_new_privs` (every sandboxed child does; the
/// host never does), from `/proc/<pid>/status`.
pub(crate) fn no_new_privs(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("NoNewPrivs:").map(|v| v.trim() == "1"))
        })
        .unwrap_or(false)
}

/// Whether the process's working directory is `dir` or below it.
pub(crate) fn cwd_within(pid: i32, dir: &Path) -> bool {
    fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(dir))
}

/// Number of processes whose real user is `uid` (for `RLIMIT_NPROC`, which
/// counts them all, not just the child's).
pub(crate) fn count_of_user(uid: u32) -> u64 {
    let Ok(dir) = fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<i32>().is_ok())
        })
        .filter(|e| {
            fs::read_to_string(e.path().join("status"))
                .ok()
                .and_then(|s| {
                    s.lines().find_map(|l| {
                        l.strip_prefix("Uid:")
                            .and_then(|v| v.split_whitespace().next()?.parse::<u32>().ok())
                    })
                })
                == Some(uid)
        })
        .count() as u64
}

impl ProcessGroup {
    /// PIDs whose process group is this one (zombies included), from `/proc`.
    pub fn members(&self) -> Vec<i32> {
        self.scan().into_iter().map(|s| s.pid).collect()
    }

    /// Members that are not zombies.
    pub fn live_members(&self) -> Vec<i32> {
        self.scan()
            .into_iter()
            .filter(|s| !s.is_zombie())
            .map(|s| s.pid)
            .collect()
    }

    /// Memory and CPU of all live members.
    pub fn usage(&self) -> GroupUsage {
        self.usage_with(&[])
    }

    /// Memory and CPU of all live members and of the live processes in
    /// `tracked` (descendants that left the group: `setpgid` took an attack
    /// run's 600 MiB out of a poll that summed the group alone).
    pub fn usage_with(&self, tracked: &[ProcId]) -> GroupUsage {
        let page = page_size();
        let tick_ms = 1000 / clock_ticks().max(1);
        let mut usage = GroupUsage::default();
        for s in all() {
            if s.is_zombie() || (s.pgrp != self.pgid && !tracked.contains(&s.id())) {
                continue;
            }
            usage.members += 1;
            usage.rss_bytes += s.rss_pages * page;
            usage.cpu_ms += s.ticks * tick_ms;
        }
        usage
    }

    fn scan(&self) -> Vec<ProcStat> {
        all().into_iter().filter(|s| s.pgrp == self.pgid).collect()
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

/// The user namespace `pid` is in (the inode of `/proc/<pid>/ns/user`).
pub fn user_ns(pid: i32) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(format!("/proc/{pid}/ns/user"))
        .ok()
        .map(|m| m.ino())
}

/// An open handle on the user namespace `pid` is in, and its number: the
/// namespace (and so its number) lives at least as long as the handle.
pub fn user_ns_handle(pid: i32) -> Option<(fs::File, u64)> {
    use std::os::unix::fs::MetadataExt;
    let file = fs::File::open(format!("/proc/{pid}/ns/user")).ok()?;
    let ino = file.metadata().ok()?.ino();
    Some((file, ino))
}

/// Bytes used on the tmpfs mounted at `path` as process `pid` sees it
/// (through its mount namespace): a child's scratch, of which the host's own
/// view shows only the empty directory beneath. `None` when that is not a
/// tmpfs (the disk beneath is the walk's to count).
pub fn fs_used(pid: i32, path: &Path) -> Option<u64> {
    let seen = Path::new(&format!("/proc/{pid}/root")).join(path.strip_prefix("/").ok()?);
    let st = nix::sys::statfs::statfs(&seen).ok()?;
    if st.filesystem_type() != nix::sys::statfs::TMPFS_MAGIC {
        return None;
    }
    let free = st.blocks_free();
    Some(st.blocks().saturating_sub(free) * st.block_size() as u64)
}

/// Disk held by files under `dir` that were deleted while one of `pids`
/// still has them open or mapped: a child can unlink a file and keep
/// writing to it, past a quota that walks the directory. Each file counts
/// once (device and inode); a mapped file with no descriptor left counts its
/// size where `/proc/PID/map_files` may be read (root), else the length of
/// its mappings. A descriptor in flight on a socket is in no process's
/// table and is not seen: the tmpfs of the read-only view ([`fs_used`])
/// holds that quota where user namespaces allow it (docs/decisions.md).
pub fn deleted_but_held(pids: impl IntoIterator<Item = i32>, dir: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let prefix = dir.as_os_str().as_bytes();
    let held = |target: &[u8]| {
        target.starts_with(prefix)
            && target.get(prefix.len()) == Some(&b'/')
            && target.ends_with(b" (deleted)")
    };
    let scratch_dev = fs::metadata(dir).map(|m| m.dev()).ok();
    let mut counted = std::collections::HashSet::new();
    let mut total = 0;
    for pid in pids {
        for fd in fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
        {
            // `metadata` follows the descriptor to the file itself, deleted
            // or not. Its link text names the path, unless the path is longer
            // than PATH_MAX (a server nested 2,100 folders to hide its files):
            // then a deleted file on scratch's file system counts.
            let Ok(m) = fs::metadata(fd.path()) else {
                continue;
            };
            let held_here = match fs::read_link(fd.path()) {
                Ok(target) => held(target.as_os_str().as_bytes()),
                Err(_) => m.nlink() == 0 && Some(m.dev()) == scratch_dev,
            };
            if held_here && m.is_file() && counted.insert((m.dev(), m.ino())) {
                total += m.blocks() * 512;
            }
        }
        let maps = fs::read(format!("/proc/{pid}/maps")).unwrap_or_default();
        let mut lengths = std::collections::HashMap::new();
        for line in String::from_utf8_lossy(&maps).lines() {
            // start-end perms offset major:minor inode          path
            let mut parts = line.splitn(6, ' ');
            let (Some(range), Some(_), Some(_), Some(device), Some(inode)) = (
                parts.next(),
                parts.next(),
                parts.next(),
                parts.next(),
                parts.next(),
            ) else {
                continue;
            };
            if !held(parts.next().unwrap_or("").trim_start().as_bytes()) {
                continue;
            }
            let hex = |s: &str| u64::from_str_radix(s, 16).ok();
            let (Some((start, end)), Some((major, minor)), Ok(inode)) = (
                range
                    .split_once('-')
                    .and_then(|(a, b)| Some((hex(a)?, hex(b)?))),
                device
                    .split_once(':')
                    .and_then(|(a, b)| Some((hex(a)?, hex(b)?))),
                inode.parse::<u64>(),
            ) else {
                continue;
            };
            let key = (nix::libc::makedev(major as u32, minor as u32), inode);
            // The file's own size where `map_files` may be read (a privilege):
            // a one-page mapping kept a 40 MiB deleted file alive.
            let whole = fs::metadata(format!("/proc/{pid}/map_files/{range}"))
                .map(|m| m.blocks() * 512)
                .unwrap_or(0);
            let length = lengths.entry(key).or_insert(0);
            *length = (*length + end.saturating_sub(start)).max(whole);
        }
        for (key, length) in lengths {
            if counted.insert(key) {
                total += length;
            }
        }
    }
    total
}

/// Reaps `pid` if it is a zombie child of this process (a re-parented orphan).
pub(crate) fn reap(pid: i32) {
    let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_parses_names_with_spaces_and_parens() {
        let me = read_stat(std::process::id() as i32).unwrap();
        assert_eq!(me.pid, std::process::id() as i32);
        assert!(me.rss_pages > 0);
        assert!(me.start > 0);
        let id = ProcId::of(me.pid).unwrap();
        assert!(id.is_live());
        // The same PID with another start time is another process.
        let recycled = ProcId {
            pid: id.pid,
            start: id.start + 1,
        };
        assert!(!recycled.exists());
        assert!(!recycled.kill_if_same());
    }
}
