//! The one mutex policy, for core and the desktop shell alike: every value
//! behind a `Mutex` stays consistent across a panic (a table, a counter, a
//! handle, a connection whose transaction rolls back as it unwinds), so a
//! poisoned lock is taken rather than turned into a second panic.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, taking the guard even when a panicking holder poisoned it: the
/// guarded values (tables, counters, handles) are whole after every write, so
/// a panic elsewhere must not take the connection or the registry down with it.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
