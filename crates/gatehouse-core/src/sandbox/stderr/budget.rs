//! The process-wide stderr budget every tail reserves from.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Default for the process-wide pool: fifty flooding connections under their
/// own caps still fit in it, and it is small next to the host's memory.
pub const DEFAULT_PROCESS_BUDGET: usize = 8 * 1024 * 1024;

/// The process-wide stderr budget: every tail reserves the bytes it keeps from
/// it, and gives them back when dropped, so all connections together never keep
/// more than `limit` bytes of stderr.
#[derive(Debug)]
pub struct StderrBudget {
    limit: usize,
    used: AtomicUsize,
}

impl StderrBudget {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// The pool shared by every connection of this process unless a caller
    /// passes its own (tests do).
    pub fn process() -> Arc<Self> {
        static POOL: OnceLock<Arc<StderrBudget>> = OnceLock::new();
        POOL.get_or_init(|| StderrBudget::new(DEFAULT_PROCESS_BUDGET))
            .clone()
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes currently reserved by live tails.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// Grants up to `want` bytes (possibly 0) and returns how many.
    pub(super) fn reserve(&self, want: usize) -> usize {
        let mut granted = 0;
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                granted = want.min(self.limit.saturating_sub(used));
                (granted > 0).then_some(used + granted)
            });
        granted
    }

    pub(super) fn release(&self, n: usize) {
        if n > 0 {
            self.used.fetch_sub(n, Ordering::AcqRel);
        }
    }
}
