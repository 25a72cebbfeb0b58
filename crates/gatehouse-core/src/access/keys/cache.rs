//! Keys a long-running HTTP server has verified, so argon2 (tens of
//! milliseconds at the OWASP cost) runs once per key, not once per request.
//!
//! Per key id the cache keeps a SHA-256 of the secret keyed with a random
//! per-process salt (never the secret, never a hash usable outside this
//! process), the verified key, and the access generation it was read at.
//! A request whose secret hashes the same and whose generation has not moved
//! is served from memory; a moved generation (a revocation or role change in
//! any process on the same database) rechecks the key's row, without argon2,
//! before the request goes on. Entries live [`VerifyCache::ttl`] at most and
//! the cache holds at most `capacity` of them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::RngExt;
use rand::rand_core::UnwrapErr;
use rand::rngs::SysRng;
use sha2::{Digest, Sha256};

use super::format::{RawKey, parse};
use super::verify::{Refusal, VerifiedKey, recheck, verify};
use crate::error::Result;
use crate::store::Store;
use crate::sync::lock;
use crate::time::now_ms;

/// A key that passed, and the access generation it stands at.
#[derive(Debug, Clone)]
pub struct CheckedKey {
    pub key: VerifiedKey,
    pub generation: i64,
}

struct Entry {
    digest: [u8; 32],
    checked: CheckedKey,
    at: Instant,
}

/// See the module doc.
pub struct VerifyCache {
    salt: [u8; 32],
    entries: Mutex<HashMap<String, Entry>>,
    capacity: usize,
    ttl: Duration,
    /// Full verifications (argon2 runs) so far: shown by `/metrics`, so an
    /// operator can see that a key costs one, not one per request.
    verifications: Arc<AtomicU64>,
    /// Verifications running now, by key id and secret digest: requests
    /// with the same key meanwhile wait for that one's answer instead of
    /// running argon2 (and paying the failed-authentication limit) again.
    in_flight: Arc<Mutex<HashMap<Flight, Answer>>>,
}

type Flight = (String, [u8; 32]);
type Answer = tokio::sync::watch::Receiver<Option<Result<CheckedKey>>>;

/// Takes a finished (or abandoned) verification out of the running ones.
struct Landed {
    flight: Flight,
    in_flight: Arc<Mutex<HashMap<Flight, Answer>>>,
}

impl Drop for Landed {
    fn drop(&mut self) {
        lock(&self.in_flight).remove(&self.flight);
    }
}

impl VerifyCache {
    pub fn new(capacity: usize, ttl: Duration) -> VerifyCache {
        VerifyCache {
            salt: UnwrapErr(SysRng).random(),
            entries: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
            ttl,
            verifications: Arc::default(),
            in_flight: Arc::default(),
        }
    }

    /// The count of full verifications (argon2 runs), shared with its reader.
    pub fn verifications(&self) -> Arc<AtomicU64> {
        self.verifications.clone()
    }

    /// How long an entry is trusted before the key is verified again in full.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn digest(&self, secret: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(self.salt);
        h.update(secret.as_bytes());
        h.finalize().into()
    }

    /// [`verify`], remembered; see the module doc. Refuses exactly what
    /// [`verify`] refuses, with the same errors.
    pub async fn verify(&self, store: &Store, raw: &RawKey) -> Result<CheckedKey> {
        let parsed = parse(raw.expose()).map_err(|_| Refusal::Malformed.error(None))?;
        let digest = self.digest(parsed.secret);
        // Read before anything else: a change committed after this read moves
        // the generation past it, so the next request rechecks.
        let generation = crate::store::access::generation(store).await?;
        let cached = {
            let entries = lock(&self.entries);
            entries
                .get(parsed.id)
                .filter(|e| e.digest == digest && e.at.elapsed() < self.ttl)
                .map(|e| e.checked.clone())
        };
        if let Some(c) = cached {
            let live = c.key.expires_at.is_none_or(|e| e > now_ms());
            if c.generation == generation && live {
                return Ok(c);
            }
            return match recheck(store, parsed.id).await {
                Ok(key) => {
                    let checked = CheckedKey { key, generation };
                    if let Some(e) = lock(&self.entries).get_mut(parsed.id) {
                        e.checked = checked.clone();
                    }
                    Ok(checked)
                }
                Err(e) => {
                    lock(&self.entries).remove(parsed.id);
                    Err(e)
                }
            };
        }
        let flight: Flight = (parsed.id.to_string(), digest);
        let running = lock(&self.in_flight).get(&flight).cloned();
        if let Some(mut answer) = running {
            // Another request verifies this very key: its answer is ours. If
            // it was dropped before answering, verify anew.
            if let Ok(done) = answer.wait_for(Option::is_some).await
                && let Some(result) = done.clone()
            {
                return result;
            }
        }
        let (tell, answer) = tokio::sync::watch::channel(None);
        lock(&self.in_flight).insert(flight.clone(), answer);
        let _landed = Landed {
            flight,
            in_flight: self.in_flight.clone(),
        };
        let result = self
            .verify_in_full(store, raw, parsed.id, digest, generation)
            .await;
        tell.send_replace(Some(result.clone()));
        result
    }

    /// argon2, then the answer remembered.
    async fn verify_in_full(
        &self,
        store: &Store,
        raw: &RawKey,
        id: &str,
        digest: [u8; 32],
        generation: i64,
    ) -> Result<CheckedKey> {
        self.verifications.fetch_add(1, Ordering::Relaxed);
        let key = verify(store, raw).await?;
        let checked = CheckedKey { key, generation };
        let mut entries = lock(&self.entries);
        if entries.len() >= self.capacity && !entries.contains_key(id) {
            entries.retain(|_, e| e.at.elapsed() < self.ttl);
            if entries.len() >= self.capacity
                && let Some(victim) = entries.keys().next().cloned()
            {
                entries.remove(&victim);
            }
        }
        entries.insert(
            id.to_string(),
            Entry {
                digest,
                checked: checked.clone(),
                at: Instant::now(),
            },
        );
        Ok(checked)
    }

    /// Whether `raw` would be served without argon2 (its id remembered with
    /// this secret, within the entry's time); a malformed key is not.
    pub fn is_cached(&self, raw: &RawKey) -> bool {
        let Ok(parsed) = parse(raw.expose()) else {
            return false;
        };
        let digest = self.digest(parsed.secret);
        lock(&self.entries)
            .get(parsed.id)
            .is_some_and(|e| e.digest == digest && e.at.elapsed() < self.ttl)
    }

    /// Whether `raw` is being verified by another request now (which will
    /// answer for it too).
    pub fn is_verifying(&self, raw: &RawKey) -> bool {
        let Ok(parsed) = parse(raw.expose()) else {
            return false;
        };
        let flight = (parsed.id.to_string(), self.digest(parsed.secret));
        lock(&self.in_flight).contains_key(&flight)
    }

    /// How many keys are remembered.
    pub fn len(&self) -> usize {
        lock(&self.entries).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
