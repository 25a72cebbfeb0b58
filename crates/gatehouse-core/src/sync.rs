//! One mutex policy for state that stays consistent across a panic.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, taking the guard even when a panicking holder poisoned it: the
/// guarded values (tables, counters, handles) are whole after every write, so
/// a panic elsewhere must not take the connection or the registry down with it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
