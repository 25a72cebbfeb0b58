//! The macOS backend's raw calls, each behind a safe function with its
//! SAFETY note: the child's limits between `fork` and `exec` (the
//! `pre_exec` hook), the host's niceness, and the Mach timebase that turns
//! `proc_pid_rusage` times into nanoseconds.

#![allow(unsafe_code)]

use std::sync::OnceLock;

use nix::libc;

/// The resource limits the child sets (libc's numbers: nix's `Resource`
/// lacks `RLIMIT_NPROC` on macOS).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Rlimit {
    OpenFiles,
    Processes,
    FileSize,
    CoreSize,
}

impl Rlimit {
    fn resource(self) -> libc::c_int {
        match self {
            Rlimit::OpenFiles => libc::RLIMIT_NOFILE,
            Rlimit::Processes => libc::RLIMIT_NPROC,
            Rlimit::FileSize => libc::RLIMIT_FSIZE,
            Rlimit::CoreSize => libc::RLIMIT_CORE,
        }
    }
}

/// Sets the soft and hard limit of `which` to `limit`.
fn set_rlimit(which: Rlimit, limit: u64) -> std::io::Result<()> {
    let value = libc::rlimit {
        rlim_cur: limit,
        rlim_max: limit,
    };
    // SAFETY: a live, correctly laid out struct; setrlimit is async-signal-safe.
    let rc = unsafe { libc::setrlimit(which.resource(), &value) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `wanted` (capped at 19) or the host's own niceness, whichever is nicer:
/// an unprivileged process cannot go below its parent's.
pub(crate) fn nice_not_below_host(wanted: u8) -> i32 {
    nix::errno::Errno::clear();
    // SAFETY: getpriority with integer arguments only.
    let host = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    let host = if host == -1 && nix::errno::Errno::last_raw() != 0 {
        0
    } else {
        host
    };
    host.max(i32::from(wanted.min(19)))
}

/// The calling process's niceness.
fn set_nice(nice: i32) -> std::io::Result<()> {
    // SAFETY: setpriority with integer arguments only; async-signal-safe.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Makes `cmd` set `nice` and `rlimits` on itself just before `exec`; a
/// failure there fails the spawn.
pub(crate) fn install(cmd: &mut tokio::process::Command, nice: i32, rlimits: Vec<(Rlimit, u64)>) {
    // SAFETY: `pre_exec` runs the closure in the forked child before exec;
    // it only calls setpriority and setrlimit (async-signal-safe) on values
    // built in the parent, takes no lock and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            set_nice(nice)?;
            for (which, limit) in &rlimits {
                set_rlimit(*which, *limit)?;
            }
            Ok(())
        });
    }
}

/// `mach_timebase_info`: Mach time units to nanoseconds (numerator,
/// denominator); 1/1 on Intel, 125/3 on Apple silicon.
pub(crate) fn timebase() -> (u32, u32) {
    static TIMEBASE: OnceLock<(u32, u32)> = OnceLock::new();
    *TIMEBASE.get_or_init(|| {
        let mut info = mach2::mach_time::mach_timebase_info { numer: 0, denom: 0 };
        // SAFETY: a live, correctly laid out struct the call fills in.
        let rc = unsafe { mach2::mach_time::mach_timebase_info(&mut info) };
        if rc == 0 && info.denom != 0 {
            (info.numer, info.denom)
        } else {
            (1, 1)
        }
    })
}
