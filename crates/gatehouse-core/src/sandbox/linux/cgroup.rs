//! A pids cgroup per child, for the one case `RLIMIT_NPROC` cannot cover:
//! the kernel never applies that limit to uid 0 (in any user namespace), so
//! a host running as root would let a child fork without bound. Where a
//! pids controller is writable (cgroup v1's `pids` hierarchy, or v2 when the
//! host's own cgroup can delegate it) the child joins a cgroup of its own
//! whose `pids.max` is the profile's ceiling; otherwise the isolation status
//! says the ceiling is not enforced.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// One child's cgroup: made in the host, joined by the child before `exec`,
/// removed once its processes are gone.
#[derive(Debug)]
pub(crate) struct PidsCgroup {
    dir: PathBuf,
    /// `<dir>/cgroup.procs`, NUL-terminated for the child.
    procs: CString,
}

/// Where cgroups with a pids controller can be made for this process's
/// children: v1's `pids` hierarchy, else v2 (only if `pids` is, or can be,
/// delegated below the host's own cgroup).
fn pids_parent() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut v2 = None;
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "pids") {
            let dir = Path::new("/sys/fs/cgroup/pids").join(path);
            return dir.join("cgroup.procs").exists().then_some(dir);
        }
        if controllers.is_empty() {
            v2 = Some(Path::new("/sys/fs/cgroup").join(path));
        }
    }
    let dir = v2?;
    let control = dir.join("cgroup.subtree_control");
    let enabled = |c: &Path| {
        std::fs::read_to_string(c).is_ok_and(|s| s.split_whitespace().any(|w| w == "pids"))
    };
    (enabled(&control) || std::fs::write(&control, "+pids").is_ok()).then_some(dir)
}

/// Empty cgroups of hosts that died without removing theirs (a host killed
/// with SIGKILL); one still holding a process stays (the next start's sweep
/// kills its processes first, see `scratch`).
fn remove_dead_hosts_cgroups(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name();
        let Some(host) = name
            .to_str()
            .and_then(|n| n.strip_prefix("gatehouse-"))
            .and_then(|n| n.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{host}")).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// Whether children of this host can get a pids cgroup (tried once).
pub(crate) fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| pids_parent().is_some())
}

impl PidsCgroup {
    /// A fresh cgroup allowing `max` tasks (processes and threads, as
    /// `RLIMIT_NPROC` counts them); `None` where none can be made.
    pub fn create(max: u64) -> Option<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let parent = pids_parent()?;
        remove_dead_hosts_cgroups(&parent);
        let name = format!(
            "gatehouse-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = parent.join(name);
        std::fs::create_dir(&dir).ok()?;
        let made = Self {
            procs: CString::new(dir.join("cgroup.procs").as_os_str().as_bytes()).ok()?,
            dir,
        };
        std::fs::write(made.dir.join("pids.max"), max.to_string()).ok()?;
        Some(made)
    }

    /// `cgroup.procs` of this cgroup: the child joins by writing `0` to it.
    pub fn procs(&self) -> CString {
        self.procs.clone()
    }

    /// Processes still in the cgroup (escaped daemons included: a process
    /// cannot leave a cgroup it has no right to write elsewhere).
    pub fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }
}

impl Drop for PidsCgroup {
    /// Removes the cgroup. The kernel refuses while a process is in it;
    /// teardown has killed them, but the last may take a moment to exit.
    fn drop(&mut self) {
        for _ in 0..20 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        tracing::warn!(dir = %self.dir.display(), "pids cgroup left behind: a process is still in it");
    }
}
