//! The names every backend gives processes: one process that survives PID
//! reuse ([`ProcId`]), a child's process group ([`ProcessGroup`]) and what it
//! uses ([`GroupUsage`]), and how hard teardown asks it to stop ([`Stop`]).
//!
//! The data is shared; how a system finds, measures and signals processes
//! is its backend's (`linux/procfs.rs`, `macos/process.rs`,
//! `windows/mod.rs`), as inherent methods on these types.

use serde::{Deserialize, Serialize};

/// One process, named so that a recycled PID never matches: the start time
/// (Linux: clock ticks since boot; macOS: microseconds since the epoch;
/// Windows: the creation time) differs for the new process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProcId {
    pub pid: i32,
    pub start: u64,
}

/// A child's process group, addressed by its id (the leader's PID). On
/// Windows the "group" is the connection's Job Object, found by the same id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessGroup {
    pub pgid: i32,
}

/// Memory and CPU of a whole group at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupUsage {
    pub members: usize,
    pub rss_bytes: u64,
    /// User + system time of live members and of children they have reaped.
    pub cpu_ms: u64,
}

/// How teardown asks a group to stop: politely (SIGTERM; where a system has
/// no polite request, its backend says it sent nothing), or at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Term,
    Kill,
}

/// Signalling a group is the same `killpg` on every Unix backend.
#[cfg(unix)]
impl ProcessGroup {
    /// Sends the signal of `stop` to every member; `Ok(false)` if the group
    /// has none.
    pub fn signal(&self, stop: Stop) -> crate::error::Result<bool> {
        use nix::errno::Errno;
        use nix::sys::signal::{Signal, killpg};
        use nix::unistd::Pid;

        let signal = match stop {
            Stop::Term => Signal::SIGTERM,
            Stop::Kill => Signal::SIGKILL,
        };
        match killpg(Pid::from_raw(self.pgid), signal) {
            Ok(()) => Ok(true),
            Err(Errno::ESRCH) => Ok(false),
            Err(e) => Err(crate::error::Error::new(
                crate::error::codes::IO_ERROR,
                format!("could not signal process group {}: {e}", self.pgid),
            )),
        }
    }
}
