//! Token buckets by name: per-key request rates and per-address failed
//! authentications. Hand-written (forty lines) rather than `governor`: the
//! server needs only "take one, or say when the next one comes", a bounded
//! map and no clock of its own (docs/decisions.md, "gatehouse serve").

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A sustained rate and the burst allowed above it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub per_second: f64,
    pub burst: f64,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Buckets by name, at most `capacity` of them (full buckets are the first
/// to go: forgetting one loses nothing).
pub struct Buckets {
    rate: Rate,
    capacity: usize,
    map: Mutex<HashMap<String, Bucket>>,
}

impl Buckets {
    pub fn new(rate: Rate, capacity: usize) -> Buckets {
        Buckets {
            rate,
            capacity: capacity.max(1),
            map: Mutex::new(HashMap::new()),
        }
    }

    fn refill(&self, b: &mut Bucket, now: Instant) {
        let earned = now.duration_since(b.at).as_secs_f64() * self.rate.per_second;
        b.tokens = (b.tokens + earned).min(self.rate.burst);
        b.at = now;
    }

    /// Takes a token for `who`, or says how long until one is there.
    pub fn take(&self, who: &str) -> Result<(), Duration> {
        self.spend(who, 1.0)
    }

    /// Whether `who` has a token, without taking it.
    pub fn check(&self, who: &str) -> Result<(), Duration> {
        self.spend(who, 0.0)
    }

    fn spend(&self, who: &str, cost: f64) -> Result<(), Duration> {
        let now = Instant::now();
        let mut map = self.map.lock().expect("lock");
        if !map.contains_key(who) && map.len() >= self.capacity {
            let burst = self.rate.burst;
            let rate = self.rate.per_second;
            map.retain(|_, b| b.tokens + now.duration_since(b.at).as_secs_f64() * rate < burst);
            if map.len() >= self.capacity
                && let Some(k) = map.keys().next().cloned()
            {
                map.remove(&k);
            }
        }
        let b = map.entry(who.to_string()).or_insert(Bucket {
            tokens: self.rate.burst,
            at: now,
        });
        self.refill(b, now);
        if b.tokens >= 1.0 {
            b.tokens -= cost;
            return Ok(());
        }
        let wait = (1.0 - b.tokens) / self.rate.per_second.max(f64::MIN_POSITIVE);
        Err(Duration::from_secs_f64(wait.min(3600.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_passes_then_the_rate_applies() {
        let b = Buckets::new(
            Rate {
                per_second: 1.0,
                burst: 3.0,
            },
            10,
        );
        for _ in 0..3 {
            assert!(b.take("k").is_ok());
        }
        let wait = b.take("k").unwrap_err();
        assert!(wait > Duration::from_millis(900) && wait <= Duration::from_secs(1));
        // Another name has its own bucket.
        assert!(b.take("other").is_ok());
        // check never spends.
        assert!(b.check("fresh").is_ok());
        assert!(b.check("k").is_err());
    }

    #[test]
    fn the_map_stays_bounded() {
        let b = Buckets::new(
            Rate {
                per_second: 1.0,
                burst: 1.0,
            },
            4,
        );
        for i in 0..100 {
            let _ = b.take(&format!("k{i}"));
        }
        assert!(b.map.lock().unwrap().len() <= 4);
    }
}
