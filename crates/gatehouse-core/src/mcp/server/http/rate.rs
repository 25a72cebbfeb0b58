//! The HTTP server's limits: per-key request rates, failed authentications
//! and client registrations per address. Each is a set of the process's one
//! token bucket ([`crate::access::rate`]) at a fixed rate, on a monotonic
//! clock, with a bounded map (docs/decisions.md, "gatehouse serve").

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use crate::access::rate::{Buckets as Map, Refill};

/// A sustained rate and the burst allowed above it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub per_second: f64,
    pub burst: f64,
}

/// Buckets by name, at most `capacity` of them, all at one rate.
pub struct Buckets {
    fill: Refill,
    map: Map,
}

/// Milliseconds on the process's monotonic clock (the wall clock may step).
fn now_ms() -> i64 {
    static START: LazyLock<Instant> = LazyLock::new(Instant::now);
    i64::try_from(START.elapsed().as_millis()).unwrap_or(i64::MAX)
}

/// A refusal's wait, never more than an hour (a client is told when to come
/// back, not that it never may).
fn wait(ms: i64) -> Duration {
    Duration::from_millis(ms.clamp(0, 3_600_000) as u64)
}

impl Buckets {
    pub fn new(rate: Rate, capacity: usize) -> Buckets {
        Buckets {
            fill: Refill::per_second(rate.per_second, rate.burst),
            map: Map::bounded(capacity),
        }
    }

    /// Takes a token for `who`, or says how long until one is there.
    pub fn take(&self, who: &str) -> Result<(), Duration> {
        self.map.take(who, self.fill, now_ms()).map_err(wait)
    }

    /// Whether `who` has a token, without taking it.
    pub fn check(&self, who: &str) -> Result<(), Duration> {
        self.map.check(who, self.fill, now_ms()).map_err(wait)
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
}
