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
    /// Moved by [`Registry::clear`]: a connection that finishes starting
    /// after it (the host switched sites meanwhile) is not registered.
    cleared: std::sync::atomic::AtomicU64,
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
        let before = self.cleared.load(std::sync::atomic::Ordering::SeqCst);
        let live = LiveConnection {
            conn: connect.await?,
            record: None,
        };
        let mut registered = lock(&self.live);
        // Started for what the host left while it started (another site's
        // server, under a name this site may use too): never registered, and
        // stopped, not left running for the next site to call.
        if self.cleared.load(std::sync::atomic::Ordering::SeqCst) != before {
            drop(registered);
            live.conn.close().await;
            return Err(crate::error::Error::new(
                crate::error::codes::SITE_NOT_OPEN,
                format!(
                    "connection {name} finished starting after its site was closed; it was stopped"
                ),
            )
            .hint("connect again on the site open now"));
        }
        registered.insert(name.to_string(), live.clone());
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

    /// Forgets every connection (their process groups go with the last
    /// handle), and any still starting.
    pub fn clear(&self) {
        drop(self.take_all());
    }

    /// Closes every running connection gracefully and forgets them all, as
    /// the host exits: its process may end without dropping what it holds,
    /// and a server that ignores the end of its input would outlive it.
    pub async fn close_all(&self) {
        for live in self.take_all().into_iter().filter(|l| l.record.is_none()) {
            live.conn.close().await;
        }
    }

    /// Every connection, forgotten here; one still starting is not
    /// registered when it finishes.
    fn take_all(&self) -> Vec<LiveConnection> {
        let mut live = lock(&self.live);
        self.cleared
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        live.drain().map(|(_, l)| l).collect()
    }
}
