//! Spawning MCP server children confined, and tearing them down completely,
//! on every system: one interface, one backend per system.
//!
//! Map, shared by every system (one line per file):
//! - [`spec`]: what to run and exactly which environment the child gets.
//! - [`profile`]: a connection's isolation profile (backend, extra paths,
//!   network, scratch quota, process/file/memory ceilings), stored with it.
//! - [`scratch`]: per-connection scratch directories outside every site, with
//!   owner records; sweeps of dead hosts' runs; cleanup never follows symlinks.
//! - [`runtime`]: the paths a command needs to read to start.
//! - [`process`]: process identity (PID + start time), groups, usage.
//! - [`spawn`](mod@spawn): the one builder and the one teardown ([`Sandboxed`]).
//! - [`probe`]: what applied on this system ([`Isolation`]), for every status.
//! - [`stderr`]: the child's stderr, drained into a bounded tail.
//! - [`seatbelt`]: the macOS Seatbelt profile text, built by a pure function
//!   (compiled everywhere, so its tests run on every system).
//! - [`windows`]: the Windows backend (Job Object, restricted token); its
//!   pure plan, environment block and command line compile everywhere.
//!
//! Each system's mechanism lives in its own folder, chosen below and
//! nowhere else: `linux/` (Landlock, seccomp, read-only view, cgroup, bwrap,
//! reaper, procfs, the child's pre-exec, raw calls), `macos/` (Seatbelt via
//! `sandbox-exec`, rlimits, `libproc`), `windows/` (Job Object, restricted
//! token). Every `unsafe` block and raw system call is in those folders.
//!
//! # The backend interface (`os`)
//! A backend module provides, with these names:
//! - `Plan::new(spec, env, root, scratch, profile, isolation)`: the child's
//!   confinement and limits, built in the host; `Plan::program`/`args`: what
//!   to execute; `Plan::spawn(cmd, scratch)`: spawns the prepared command
//!   (environment, directory and pipes already set) in a group of its own
//!   and returns it with its `Guard`.
//! - `Guard`: what the backend keeps of a running child:
//!   `descendants()`, `watch(scratch, isolation) -> bytes used`,
//!   `kill_escaped(pid).await -> count`, `kill_now()`.
//! - `describe(profile) -> Isolation`: what applies for `profile` here,
//!   derived from what the plan does; what is weaker than asked in
//!   `warnings`. An option the backend cannot honour is refused by
//!   [`Profile::validate`] (code `SANDBOX_PROFILE_INVALID`, or
//!   `SANDBOX_UNAVAILABLE` for a backend this system lacks).
//! - inherent methods on [`ProcId`] (`of`, `exists`, `is_live`,
//!   `kill_if_same`) and [`ProcessGroup`] (`signal`, `members`,
//!   `live_members`, `usage_with`, `reap_children`).
//! - `kill_leftovers(recorded, dir)`: what a dead host's run left running.
//! - `harden_host()`, `become_subreaper()`, `lower_thread_priority(nice)`,
//!   `SYSTEM_READ_ONLY` (the system folders every child may read).

#[cfg(target_os = "linux")]
pub mod linux;
#[cfg(target_os = "linux")]
use linux as os;

#[cfg(target_os = "macos")]
pub mod macos;
#[cfg(target_os = "macos")]
use macos as os;

// Compiled everywhere: its plan, environment block and command line are
// pure and tested on every system; the mechanism is `cfg(windows)` inside.
pub mod windows;
#[cfg(windows)]
use windows as os;

pub mod probe;
pub mod process;
pub mod profile;
pub mod runtime;
pub mod scratch;
#[path = "macos/seatbelt.rs"]
pub mod seatbelt;
pub mod spawn;
pub mod spec;
pub mod stderr;

pub use os::{become_subreaper, harden_host};
pub use probe::Isolation;
pub use process::{GroupUsage, ProcId, ProcessGroup, Stop};
pub use profile::{Backend, DEFAULT_NICE, Profile};
pub use scratch::{DeadRun, Owner, ScratchDir, ScratchRoot, SweepReport};
pub use spawn::{ExitInfo, Grace, QuotaExceeded, Sandboxed, TeardownReport, spawn, spawn_with};
pub use spec::{ChildSpec, DEFAULT_PATH, EnvValue, ResolvedValue, SecretValue};
