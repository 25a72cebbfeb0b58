//! What the app remembers between commands.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

use gatehouse_core::Error;
use gatehouse_core::access::keys::RawKey;
use gatehouse_core::error::codes;
use gatehouse_core::mcp::client::Registry;
use gatehouse_core::site::Site;

/// Shared by every command through `tauri::State`.
///
/// `std` mutexes are enough: commands hold them only to read or swap a value
/// (a `Site` is cheap to clone: its store is a pool handle), never across an
/// `.await`.
#[derive(Debug, Default)]
pub struct AppState {
    /// The site the user opened last, if any.
    site: Mutex<Option<Site>>,
    /// Raw keys minted or rolled in this window since the site was opened, by
    /// key id, so the Client config panel can write one into a config after the
    /// page has shown it once. Memory only: the store keeps just a hash, and
    /// the page never has to send a raw key back over IPC.
    minted: Mutex<HashMap<String, RawKey>>,
    /// Connections started from this window, by stored name (core's registry).
    pub connections: Registry,
    /// The page shows one stderr stream at a time: a new watch ends the last.
    pub watch: WatchSlot,
}

/// Which stderr watch is current (a generation number); the others stop forwarding.
#[derive(Debug)]
pub struct WatchSlot(watch::Sender<u64>);

impl Default for WatchSlot {
    fn default() -> Self {
        Self(watch::Sender::new(0))
    }
}

impl WatchSlot {
    /// Starts a watch, superseding every earlier one; returns its generation.
    pub fn begin(&self) -> u64 {
        let mut mine = 0;
        self.0.send_modify(|g| {
            *g += 1;
            mine = *g;
        });
        mine
    }

    /// Resolves once a later watch began.
    pub async fn superseded(&self, mine: u64) {
        let mut rx = self.0.subscribe();
        // The sender lives as long as `self`, so this cannot fail while awaited.
        let _ = rx.wait_for(|g| *g != mine).await;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl AppState {
    /// Makes `site` the one every screen works on; forgets the raw keys of the
    /// previous one.
    pub fn set_site(&self, site: Site) {
        *lock(&self.site) = Some(site);
        lock(&self.minted).clear();
        // The old site's servers go with it.
        self.connections.clear();
    }

    /// The open site, or `SITE_NOT_OPEN`.
    pub fn site(&self) -> Result<Site, Error> {
        lock(&self.site).clone().ok_or_else(|| {
            Error::invalid(
                codes::SITE_NOT_OPEN,
                "no site is open",
                "open a site folder on the Overview screen first",
            )
        })
    }

    pub fn remember_key(&self, id: &str, key: RawKey) {
        lock(&self.minted).insert(id.to_string(), key);
    }

    pub fn forget_key(&self, id: &str) {
        lock(&self.minted).remove(id);
    }

    /// The raw key minted in this session with id `id`, if any.
    pub fn minted_key(&self, id: &str) -> Option<RawKey> {
        lock(&self.minted).get(id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_new_watch_supersedes_the_old_one_only() {
        let slot = WatchSlot::default();
        let first = slot.begin();
        let waiting = slot.superseded(first);
        tokio::pin!(waiting);
        // Still current: not resolved.
        assert!(futures_poll_once(waiting.as_mut()).await.is_none());
        let second = slot.begin();
        waiting.await;
        let still = slot.superseded(second);
        tokio::pin!(still);
        assert!(futures_poll_once(still.as_mut()).await.is_none());
    }

    /// Polls `fut` once; `Some` if it was ready.
    async fn futures_poll_once<F: std::future::Future + Unpin>(fut: F) -> Option<F::Output> {
        let mut fut = fut;
        std::future::poll_fn(|cx| {
            std::task::Poll::Ready(match std::pin::Pin::new(&mut fut).poll(cx) {
                std::task::Poll::Ready(v) => Some(v),
                std::task::Poll::Pending => None,
            })
        })
        .await
    }
}
