//! The Windows backend: one Job Object per connection and a restricted token.
//!
//! Map, one line per file:
//! - [`plan`]: the job plan (limits and token flags) from a profile, and the
//!   status derived from what was applied. Pure: tested on every system.
//! - [`env_block`]: the child's exact environment as a UTF-16 block. Pure.
//! - [`command_line`]: the program found with `PATHEXT`, the command line
//!   quoted for the C runtime or for `cmd.exe` (`.cmd`/`.bat`). Pure.
//! - `backend`: the backend interface (`Plan`, `Guard`, `describe`, the
//!   host-level calls), tying the files below together.
//! - `job`: the Job Object (limits, assignment, counters, termination).
//! - `token`: the restricted token and the write grants on scratch.
//! - `process`: the pipes, the handle list, the suspended start.
//! - `child`: the started child behind the surface of tokio's `Child`.
//! - `procs`: the Windows side of `ProcId` and `ProcessGroup` (the job).
//!
//! Every `unsafe` block of the backend is in those last five files.
//!
//! # Caveats
//! Reads are not confined (a write-restricted token limits writes only), and
//! the network is open: see docs/decisions.md.

pub mod command_line;
pub mod env_block;
pub mod plan;

#[cfg(windows)]
mod backend;
#[cfg(windows)]
mod child;
#[cfg(windows)]
mod job;
#[cfg(windows)]
mod process;
#[cfg(windows)]
mod procs;
#[cfg(windows)]
mod token;

#[cfg(windows)]
pub(crate) use backend::{Guard, Plan, kill_leftovers, lower_thread_priority};
#[cfg(windows)]
pub use backend::{SYSTEM_READ_ONLY, become_subreaper, describe, harden_host};
#[cfg(windows)]
pub(crate) use child::Child;
