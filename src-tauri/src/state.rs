//! What the app remembers between commands.

use std::collections::HashMap;
use std::sync::Mutex;

use gatehouse_core::Error;
use gatehouse_core::access::keys::RawKey;
use gatehouse_core::connections::registry::Registry;
use gatehouse_core::error::codes;
use gatehouse_core::site::Site;
use gatehouse_core::supervise::ServeSlot;
use gatehouse_core::sync::lock;

use crate::live::{Handles, Results};

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
    /// stderr streams the page opened, by the page's stream id.
    pub streams: Handles,
    /// Running calls started from the page, by the page's call token.
    pub calls: Handles,
    /// Full results of recent calls, for "save to a file".
    pub results: Results,
    /// The Serve panel's `gatehouse serve`, for the open site.
    pub serve: ServeSlot,
}

impl AppState {
    /// Makes `site` the one every screen works on; forgets the raw keys of the
    /// previous one.
    pub fn set_site(&self, site: Site) {
        let previous = lock(&self.site).replace(site);
        if let Some(previous) = previous {
            // A clean shutdown of the site left: core signs a checkpoint of
            // what this window added to its audit log.
            tauri::async_runtime::spawn(async move { previous.close().await });
        }
        lock(&self.minted).clear();
        // The old site's servers, streams, calls and results go with it.
        self.streams.cancel_all();
        self.calls.cancel_all();
        self.results.clear();
        self.connections.clear();
        // Its server served the site left.
        let serve = self.serve.clone();
        tauri::async_runtime::spawn(async move {
            let _ = serve.stop().await;
        });
    }

    /// Takes the open site out, at exit (see `lib.rs`).
    pub fn take_site(&self) -> Option<Site> {
        lock(&self.site).take()
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
    use gatehouse_core::access::{keys, permissions::Role};
    use gatehouse_core::site::{self, Settings, checkpoint};
    use gatehouse_core::store::audit;

    /// Opening another site is a clean shutdown of the one left: core signs
    /// a checkpoint of the head this window moved (as at exit, `lib.rs`), so
    /// `audit verify` on this machine vouches for every entry it wrote.
    #[test]
    fn switching_sites_signs_a_checkpoint_of_the_site_left() {
        tauri::async_runtime::block_on(async {
            let tmp = tempfile::tempdir().unwrap();
            let (a_dir, b_dir) = (tmp.path().join("a"), tmp.path().join("b"));
            let a = site::init(&a_dir, Some("a"), true, None).await.unwrap();
            let b = site::init(&b_dir, Some("b"), true, None).await.unwrap();
            let state = AppState::default();
            state.set_site(a.clone());
            keys::mint(
                &a.store,
                crate::commands::keys::DESKTOP_ACTOR,
                "left behind",
                &[Role::Viewer],
                None,
            )
            .await
            .unwrap();
            let (head, _) = audit::committed_head(&a.store).await.unwrap();
            let before = checkpoint::verify(&a, None).await.unwrap();
            assert!(before.anchored_at < Some(head), "{before:?}");
            state.set_site(b);
            // The close runs in the background: reopen the site left until
            // its head is vouched for.
            let settings = Settings {
                dir: a_dir,
                database_url: None,
            };
            for _ in 0..100 {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                let reopened = site::open(&settings).await.unwrap();
                let report = checkpoint::verify(&reopened, None).await.unwrap();
                reopened.store.close().await;
                if report.anchored_at == Some(head) {
                    return;
                }
            }
            panic!("no checkpoint of entry {head} after leaving the site");
        });
    }
}
