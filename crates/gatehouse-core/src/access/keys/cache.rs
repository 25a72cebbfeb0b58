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
/// A running verification's answer, and the access generation read before it
/// started (a request that read a later one rechecks the row it was given).
type Answer = (
    i64,
    tokio::sync::watch::Receiver<Option<Result<VerifiedKey>>>,
);

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
    /// [`verify`] refuses, with the same errors. `pay` runs only in the one
    /// request that starts argon2 for a key neither remembered nor being
    /// verified for another request (which answer for it instead); when it
    /// refuses, its `Err` is returned and nothing runs.
    pub async fn verify<E>(
        &self,
        store: &Store,
        raw: &RawKey,
        pay: impl FnOnce() -> std::result::Result<(), E>,
    ) -> std::result::Result<Result<CheckedKey>, E> {
        let Ok(parsed) = parse(raw.expose()) else {
            return Ok(Err(Refusal::Malformed.error(None)));
        };
        let digest = self.digest(parsed.secret);
        // Read before anything else: a change committed after this read moves
        // the generation past it, so the next request rechecks.
        let generation = match crate::store::access::generation(store).await {
            Ok(g) => g,
            Err(e) => return Ok(Err(e)),
        };
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
                return Ok(Ok(c));
            }
            return Ok(match recheck(store, parsed.id).await {
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
            });
        }
        let flight = (parsed.id.to_string(), digest);
        let (started_at, mut answer) = self.answer_for(flight, generation, store, raw, pay)?;
        let mut result = match answer.wait_for(Option::is_some).await {
            Ok(done) => done.clone().expect("waited for an answer"),
            Err(_) => Err(crate::error::Error::new(
                crate::error::codes::KEY_VERIFY_FAILED,
                "the key's check ended without an answer",
            )
            .hint("send the request again")),
        };
        // The check began before this request's generation: a revocation or
        // role change between the two is read from the key's row (no argon2).
        if started_at != generation && result.is_ok() {
            result = recheck(store, parsed.id).await;
        }
        Ok(result.map(|key| {
            let checked = CheckedKey { key, generation };
            self.remember(parsed.id, digest, &checked);
            checked
        }))
    }

    /// The running verification of `flight`, or one started now, after
    /// `pay`, on a task of its own: a request cancelled meanwhile (its client
    /// gone) never leaves the others waiting for an answer that cannot come.
    fn answer_for<E>(
        &self,
        flight: Flight,
        generation: i64,
        store: &Store,
        raw: &RawKey,
        pay: impl FnOnce() -> std::result::Result<(), E>,
    ) -> std::result::Result<Answer, E> {
        let mut running = lock(&self.in_flight);
        if let Some(answer) = running.get(&flight) {
            return Ok(answer.clone());
        }
        pay()?;
        let (tell, answer) = tokio::sync::watch::channel(None);
        let answer = (generation, answer);
        running.insert(flight.clone(), answer.clone());
        let landed = Landed {
            flight,
            in_flight: self.in_flight.clone(),
        };
        let (store, raw) = (store.clone(), raw.clone());
        self.verifications.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            let _landed = landed;
            tell.send_replace(Some(verify(&store, &raw).await));
        });
        Ok(answer)
    }

    /// Remembers a verified key, making room within the capacity.
    fn remember(&self, id: &str, digest: [u8; 32], checked: &CheckedKey) {
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
    }

    /// How many keys are remembered.
    pub fn len(&self) -> usize {
        lock(&self.entries).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
