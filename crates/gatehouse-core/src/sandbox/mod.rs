//! Spawning MCP server children confined, and tearing them down completely.
//!
//! Map, one line per file:
//! - [`spec`]: what to run and exactly which environment the child gets.
//! - [`profile`]: a connection's isolation profile (backend, extra paths,
//!   network, scratch quota, process/file/memory ceilings), stored with it.
//! - [`scratch`]: per-connection scratch directories outside every site, with
//!   owner records; sweeps of dead hosts' runs; cleanup never follows symlinks.
//! - [`isolation`]: the Landlock layer and the paths a command needs to start.
//! - `seccomp`: the socket filter under Landlock (UDP, UNIX sockets, io_uring).
//! - `view`: the read-only view of the file system under Landlock (modes and
//!   times, which Landlock does not rule).
//! - `cgroup`: the pids cgroup holding the process ceiling for a root host.
//! - [`bwrap`]: the optional bubblewrap backend.
//! - `child`: what the child applies to itself before `exec` (with `view`,
//!   the only `unsafe`).
//! - [`spawn`]: the one builder and the one teardown ([`Sandboxed`]).
//! - [`reaper`]: every descendant of a child, escaped daemons included.
//! - [`procfs`]: what `/proc` says (groups, usage, PID + start time).
//! - [`host`]: hardening of the host process (non-dumpable, subreaper).
//! - [`stderr`]: the child's stderr, drained into a bounded tail.
//! - [`windows`]: the Windows backend (Job Object, restricted token); its
//!   pure plan, environment block and command line compile everywhere.
//!
//! # Caveats
//! Linux only. The Landlock layer confines files, TCP, signals and ptrace; the
//! socket filter beside it confines UDP and UNIX sockets (by family and type,
//! not by address: an allowed UNIX socket family reaches every socket file).
//! A re-parented
//! orphan is attributed to a connection by what was seen of it (see
//! [`reaper`]); with several live connections in one host, an orphan nobody
//! saw is taken by the first teardown that finds it.

mod cgroup;
mod child;
mod seccomp;
mod view;

pub mod bwrap;
pub mod host;
pub mod isolation;
pub mod procfs;
pub mod profile;
pub mod reaper;
pub mod scratch;
pub mod spawn;
pub mod spec;
pub mod stderr;
pub mod windows;

pub use host::harden_host;
pub use isolation::{Isolation, LandlockSupport};
pub use procfs::{GroupUsage, ProcId, ProcessGroup};
pub use profile::{Backend, DEFAULT_NICE, Profile};
pub use reaper::become_subreaper;
pub use scratch::{DeadRun, Owner, ScratchDir, ScratchRoot, SweepReport};
pub use spawn::{ExitInfo, Grace, QuotaExceeded, Sandboxed, TeardownReport, spawn, spawn_with};
pub use spec::{ChildSpec, DEFAULT_PATH, EnvValue, ResolvedValue, SecretValue};
