//! What the child does to itself between `fork` and `exec`: its niceness,
//! resource limits, its pids cgroup and read-only view (`cgroup`, `view`),
//! capabilities dropped (a host running as root would
//! otherwise hand them on: CAP_SYS_PTRACE reads any process's
//! `/proc/PID/environ`, CAP_NET_RAW sidesteps TCP rules), `no_new_privs`, the
//! socket filter, then Landlock. Everything is prepared in the host (the
//! ruleset is built, its paths opened and the filter compiled there), so the
//! child only makes system calls: nothing allocates or locks after the fork.

use std::ffi::CString;

use landlock::RulesetCreated;
use nix::sys::resource::{Resource, setrlimit};

/// Limits and ruleset for one child, applied by [`install`].
pub(crate) struct ChildSetup {
    pub ruleset: Option<RulesetCreated>,
    pub rlimits: Vec<(Resource, u64)>,
    /// Highest capability number (`/proc/sys/kernel/cap_last_cap`), read in
    /// the host; `None` keeps the bounding set (bwrap needs it to set up).
    pub drop_caps_to: Option<i32>,
    /// Scheduling niceness for the child (see `Profile::nice`).
    pub nice: i32,
    /// The socket filters (see `seccomp`), installed after `no_new_privs`.
    pub seccomp: Vec<seccompiler::BpfProgram>,
    /// `cgroup.procs` of the child's pids cgroup, joined first.
    pub cgroup: Option<CString>,
    /// The read-only view, entered after the limits (so the user namespace
    /// it makes inherits them) and before the capabilities are dropped.
    pub view: Option<super::view::ReadOnlyView>,
}

/// Empties the capability bounding set and the ambient set, so `exec` grants
/// no capability even to uid 0. Errors are ignored: a process without
/// CAP_SETPCAP has no capabilities to hand on in the first place.
#[allow(unsafe_code)]
fn drop_capabilities(last: i32) {
    use nix::libc::{PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, PR_CAPBSET_DROP, c_ulong, prctl};
    for cap in 0..=last {
        // SAFETY: prctl with integer arguments only; async-signal-safe.
        unsafe {
            prctl(
                PR_CAPBSET_DROP,
                cap as c_ulong,
                0 as c_ulong,
                0 as c_ulong,
                0 as c_ulong,
            );
        }
    }
    // SAFETY: as above.
    unsafe {
        prctl(
            PR_CAP_AMBIENT,
            PR_CAP_AMBIENT_CLEAR_ALL as c_ulong,
            0 as c_ulong,
            0 as c_ulong,
            0 as c_ulong,
        );
    }
}

/// `wanted` (capped at 19) or the host's own niceness, whichever is nicer:
/// an unprivileged process cannot go below its parent's, and a host already
/// niced must not fail every spawn.
#[allow(unsafe_code)]
pub(crate) fn nice_not_below_host(wanted: u8) -> i32 {
    nix::errno::Errno::clear();
    // SAFETY: getpriority with integer arguments only.
    let host = unsafe { nix::libc::getpriority(nix::libc::PRIO_PROCESS, 0) };
    let host = if host == -1 && nix::errno::Errno::last_raw() != 0 {
        0
    } else {
        host
    };
    host.max(i32::from(wanted.min(19)))
}

/// Sets the calling thread's niceness (Linux keeps it per thread; a child
/// process inherits it).
#[allow(unsafe_code)]
pub(crate) fn set_nice(nice: i32) -> std::io::Result<()> {
    // SAFETY: setpriority with integer arguments only; async-signal-safe.
    let rc = unsafe { nix::libc::setpriority(nix::libc::PRIO_PROCESS, 0, nice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Writes `content` to the existing file `path` in one `write` (a `/proc` or
/// cgroup control file); async-signal-safe, for the child before `exec`.
#[allow(unsafe_code)]
pub(crate) fn write_file(path: &std::ffi::CStr, content: &[u8]) -> std::io::Result<()> {
    // SAFETY: a NUL-terminated path and a live buffer; open/write/close are
    // async-signal-safe.
    unsafe {
        let fd = nix::libc::open(path.as_ptr(), nix::libc::O_WRONLY | nix::libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let written = nix::libc::write(fd, content.as_ptr().cast(), content.len());
        let err = std::io::Error::last_os_error();
        nix::libc::close(fd);
        if written != content.len() as isize {
            return Err(err);
        }
    }
    Ok(())
}

/// Marks every descriptor above stderr close-on-exec: the host may have
/// inherited open files from whatever started it (a shell redirect, a desktop
/// launcher), and Landlock does not rule what is already open. Kernels before
/// 5.11 lack `close_range`; there the std's own CLOEXEC is all there is.
#[allow(unsafe_code)]
fn close_inherited_on_exec() {
    const CLOSE_RANGE_CLOEXEC: nix::libc::c_uint = 4;
    // SAFETY: close_range with integer arguments only; async-signal-safe.
    unsafe {
        nix::libc::syscall(
            nix::libc::SYS_close_range,
            3 as nix::libc::c_uint,
            nix::libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        );
    }
}

impl ChildSetup {
    /// Runs in the child: async-signal-safe calls only.
    fn apply(&mut self) -> std::io::Result<()> {
        close_inherited_on_exec();
        if let Some(procs) = &self.cgroup {
            // "0" names the writing process.
            write_file(procs, b"0")?;
        }
        set_nice(self.nice)?;
        for (resource, limit) in &self.rlimits {
            setrlimit(*resource, *limit, *limit).map_err(std::io::Error::from)?;
        }
        if let Some(view) = &self.view {
            view.enter()?;
        }
        if let Some(last) = self.drop_caps_to {
            drop_capabilities(last);
        }
        nix::sys::prctl::set_no_new_privs().map_err(std::io::Error::from)?;
        for filter in &self.seccomp {
            seccompiler::apply_filter(filter)
                .map_err(|_| std::io::Error::from_raw_os_error(nix::errno::Errno::EPERM as i32))?;
        }
        if let Some(ruleset) = self.ruleset.take() {
            ruleset
                .restrict_self()
                .map_err(|_| std::io::Error::from_raw_os_error(nix::errno::Errno::EPERM as i32))?;
        }
        Ok(())
    }
}

/// Makes `cmd` apply `setup` in the child just before `exec`; a failure
/// there fails the spawn (the command never runs unconfined).
#[allow(unsafe_code)]
pub(crate) fn install(cmd: &mut tokio::process::Command, mut setup: ChildSetup) {
    // SAFETY: `pre_exec` runs the closure in the forked child before exec.
    // It must be async-signal-safe: `apply` only calls close_range, open/write/close,
    // setpriority, setrlimit, unshare, mount, mount_setattr, prctl, seccomp and
    // landlock_restrict_self on what the parent built, takes no lock
    // and allocates nothing on its success path; its errors are raw OS errors.
    unsafe {
        cmd.pre_exec(move || setup.apply());
    }
}
