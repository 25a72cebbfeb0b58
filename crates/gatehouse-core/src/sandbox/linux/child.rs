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

use super::sys;

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

impl ChildSetup {
    /// Runs in the child: async-signal-safe calls only.
    fn apply(&mut self) -> std::io::Result<()> {
        sys::close_inherited_on_exec();
        if let Some(procs) = &self.cgroup {
            // "0" names the writing process.
            sys::write_file(procs, b"0")?;
        }
        sys::set_nice(self.nice)?;
        for (resource, limit) in &self.rlimits {
            setrlimit(*resource, *limit, *limit).map_err(std::io::Error::from)?;
        }
        if let Some(view) = &self.view {
            view.enter()?;
        }
        if let Some(last) = self.drop_caps_to {
            sys::drop_capabilities(last);
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
