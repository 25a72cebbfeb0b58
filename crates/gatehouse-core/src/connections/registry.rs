//! The connections one process started, by stored name: what a long-lived
//! host (the desktop app) keeps between commands.
//!
//! An entry stays after its server exits or is disconnected, so its stderr and
//! final record can still be read; connecting again replaces it. Dropping an
//! entry (or [`Registry::clear`]) drops its handle: the last handle kills the
//! process group.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

use serde::Serialize;

use crate::error::Result;
use crate::mcp::client::Connection;
use crate::mcp::client::lifecycle::ConnectionRun;
use crate::sync::lock;

/// Where a registered connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum LiveState {
    /// Running and usable.
    Connected,
    /// The server went away by itself (exit, kill, protocol failure).
    Exited,
    /// Closed through [`Registry::close`]; its final record is kept.
    Closed,
}

/// A connection this process started, and its final record once closed.
#[derive(Debug, Clone)]
pub struct LiveConnection {
    pub conn: Connection,
    pub record: Option<ConnectionRun>,
}

impl LiveConnection {
    pub fn state(&self) -> LiveState {
        match (&self.record, self.conn.is_closed()) {
            (Some(_), _) => LiveState::Closed,
            (None, true) => LiveState::Exited,
            (None, false) => LiveState::Connected,
        }
    }
}

/// Live connections by name. Locks are held only to read or swap an entry,
/// never across an `.await`.
#[derive(Debug, Default)]
pub struct Registry {
    live: Mutex<HashMap<String, LiveConnection>>,
}

impl Registry {
    /// The connection registered as `name`, running or not.
    pub fn get(&self, name: &str) -> Option<LiveConnection> {
        lock(&self.live).get(name).cloned()
    }

    /// Returns `name` if it is still running; otherwise awaits `connect` and
    /// registers the new connection in place of the old one.
    pub async fn open(
        &self,
        name: &str,
        connect: impl Future<Output = Result<Connection>>,
    ) -> Result<LiveConnection> {
        if let Some(live) = self.get(name).filter(|l| !l.conn.is_closed()) {
            return Ok(live);
        }
        let live = LiveConnection {
            conn: connect.await?,
            record: None,
        };
        lock(&self.live).insert(name.to_string(), live.clone());
        Ok(live)
    }

    /// Closes `name` gracefully once and keeps its final record; `None` if
    /// nothing is registered under that name.
    pub async fn close(&self, name: &str) -> Option<LiveConnection> {
        let mut live = self.get(name)?;
        if live.record.is_none() {
            live.record = Some(live.conn.clone().close().await);
            lock(&self.live).insert(name.to_string(), live.clone());
        }
        Some(live)
    }

    /// Forgets every connection (their process groups go with the last handle).
    pub fn clear(&self) {
        lock(&self.live).clear();
    }
}
