//! A child's stderr, kept within budgets: a short head, a ring buffer of the
//! newest bytes, exact counters, and live subscribers that can never make the
//! reader wait.
//!
//! Map:
//! - [`budget`]: [`StderrBudget`], the process-wide pool every tail reserves from;
//! - [`tail`]: [`StderrTail`], the shared handle the connection's reader pushes
//!   into ([`drain`] reads a pipe to end-of-file), [`TailLimits`] (the
//!   per-connection and excerpt budgets) and [`TailSnapshot`] (what records and
//!   errors carry, with where the marker sits);
//! - [`ring`]: the byte ring buffer that keeps the newest bytes;
//! - [`render`]: the marker, fitting a budget, decoding and redaction at cuts;
//! - [`subscription`]: [`Subscription`], which receives new lines as [`TailEvent`]s;
//! - [`reader`]: the one thread, below the host's priority, that drains every child.
//!
//! Rules (see `stderr-design.md`): count bytes, not lines; keep the first
//! [`TailLimits::head_bytes`] bytes (start-up errors, versions) and the newest
//! [`TailLimits::tail_bytes`] bytes (the error, usually); decode only what is kept,
//! lossily, at the end, so the kept text does not depend on how the pipe chunked
//! the stream.
//!
//! # Truncation marker
//! When bytes were dropped, the rendered text carries a marker written by
//! Gatehouse, alone on its line, where the bytes are missing. `N` is the number
//! of tail bytes kept, `M` the number of bytes the child wrote, `H` the head kept:
//!
//! - no head kept: `[stderr truncated: kept last N of M bytes]` first, then the tail;
//! - head kept: the head, then `[stderr truncated: kept first H and last N of M bytes]`,
//!   then the tail.
//!
//! A newline is inserted before the marker if the head does not end with one, and
//! one always follows the marker. Numbers are raw byte counts, before decoding.
//!
//! # Caveats
//! A character cut in two by Gatehouse's own cut (the end of the head, the start of
//! the tail) is dropped rather than shown as U+FFFD, since the child did not write
//! it broken; bytes the child wrote invalid are shown as U+FFFD.
//!
//! # Secrets
//! A connection's secret values are replaced by `<redacted>` in every text handed
//! out. Where a cut (the end of the head, the start of the tail, the unfinished
//! end of a live stream) splits a secret, the piece left at the cut is redacted
//! too once it is at least [`MIN_PARTIAL_SECRET`] bytes long; a shorter piece
//! cannot be told from ordinary text and gives little away. Live line pieces are
//! cut before a secret, never through it, unless the secret is longer than a piece.

mod budget;
pub mod reader;
mod render;
mod ring;
mod subscription;
mod tail;
#[cfg(test)]
mod tests;

pub use budget::{DEFAULT_PROCESS_BUDGET, StderrBudget};
pub use render::{MIN_PARTIAL_SECRET, marker};
pub use subscription::{Subscription, TailEvent, coalesce};
pub use tail::{StderrCounters, StderrTail, TailLimits, TailSnapshot, drain};
