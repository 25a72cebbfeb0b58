//! Per-key call rates: one token bucket per key id, in this process, shared
//! by every session and transport the process serves (stdio and HTTP alike
//! reach it through the same per-call gate).
//!
//! A bucket holds up to `calls` tokens and refills at `calls` per period, so
//! a key may burst its whole allowance and then proceeds at the steady rate.
//! A refused call is told how long until the next token.
//!
//! # Caveats
//! Buckets live in memory: two server processes serving the same key each
//! allow the full rate, and a restart refills the bucket.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use crate::access::restrictions::Rate;
use crate::error::{Code, Error, Result};

/// One key's bucket.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    rate: Rate,
    /// Tokens, in thousandths (integer arithmetic, no drift).
    milli_tokens: i64,
    /// When `milli_tokens` was last brought up to date (store milliseconds).
    at: i64,
}

impl Bucket {
    fn full(rate: Rate, now: i64) -> Bucket {
        Bucket {
            rate,
            milli_tokens: i64::from(rate.calls) * 1000,
            at: now,
        }
    }

    /// Takes one token, or says how many milliseconds until one is there.
    fn take(&mut self, now: i64) -> std::result::Result<(), i64> {
        let cap = i64::from(self.rate.calls) * 1000;
        let per = self.rate.period.millis();
        let elapsed = (now - self.at).max(0);
        // calls tokens per `per` ms = calls*1000 milli-tokens per `per` ms.
        let refill = elapsed.saturating_mul(i64::from(self.rate.calls)) * 1000 / per;
        if refill > 0 {
            self.milli_tokens = (self.milli_tokens + refill).min(cap);
            self.at = now;
        }
        if self.milli_tokens >= 1000 {
            self.milli_tokens -= 1000;
            return Ok(());
        }
        let missing = 1000 - self.milli_tokens;
        // Milliseconds for `missing` milli-tokens, rounded up.
        let per_token = i64::from(self.rate.calls) * 1000;
        let wait = (missing * per + per_token - 1) / per_token;
        Err(wait.max(1))
    }
}

/// Buckets by key id. A key's bucket is made full on its first call and made
/// again whenever its rate changes.
#[derive(Debug, Default)]
pub struct Buckets {
    by_key: Mutex<HashMap<String, Bucket>>,
}

impl Buckets {
    /// Takes one call from `key_id`'s allowance at `rate`, at time `now`.
    pub fn take(&self, key_id: &str, rate: Rate, now: i64) -> Result<()> {
        let mut map = self.by_key.lock().expect("lock");
        let bucket = map
            .entry(key_id.to_string())
            .or_insert_with(|| Bucket::full(rate, now));
        if bucket.rate != rate {
            *bucket = Bucket::full(rate, now);
        }
        bucket
            .take(now)
            .map_err(|wait_ms| limited(key_id, rate, wait_ms))
    }
}

fn limited(key_id: &str, rate: Rate, wait_ms: i64) -> Error {
    let secs = (wait_ms as f64 / 1000.0).max(0.001);
    Error::new(
        Code::KeyRateLimited,
        format!(
            "key {key_id} made more calls than its rate allows ({})",
            rate.describe()
        ),
    )
    .hint(format!("retry in {secs:.3} s"))
    .detail(serde_json::json!({"rate": rate, "retry_after_ms": wait_ms}))
}

/// The process's buckets.
static BUCKETS: LazyLock<Buckets> = LazyLock::new(Buckets::default);

/// Takes one call from `key_id`'s allowance now (see [`Buckets::take`]).
pub fn take(key_id: &str, rate: Rate) -> Result<()> {
    BUCKETS.take(key_id, rate, crate::time::now_ms())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(s: &str) -> Rate {
        s.parse().unwrap()
    }

    #[test]
    fn a_burst_of_the_allowance_then_the_steady_rate() {
        let b = Buckets::default();
        let r = rate("3/s");
        for _ in 0..3 {
            b.take("k", r, 1_000).unwrap();
        }
        let e = b.take("k", r, 1_000).unwrap_err();
        assert_eq!(e.code, Code::KeyRateLimited);
        // One token every 333.4 ms.
        assert_eq!(e.detail.as_ref().unwrap()["retry_after_ms"], 334);
        assert!(e.hint.unwrap().starts_with("retry in 0.334"));
        assert!(b.take("k", r, 1_300).is_err());
        b.take("k", r, 1_334).unwrap();
        assert!(b.take("k", r, 1_334).is_err());
        // Refills never exceed the allowance.
        for _ in 0..3 {
            b.take("k", r, 100_000).unwrap();
        }
        assert!(b.take("k", r, 100_000).is_err());
    }

    #[test]
    fn keys_have_their_own_buckets_and_a_new_rate_starts_full() {
        let b = Buckets::default();
        b.take("a", rate("1/min"), 0).unwrap();
        assert!(b.take("a", rate("1/min"), 10).is_err());
        b.take("b", rate("1/min"), 10).unwrap();
        let e = b.take("a", rate("1/min"), 30_000).unwrap_err();
        assert_eq!(e.detail.unwrap()["retry_after_ms"], 30_000);
        b.take("a", rate("2/min"), 30_000).unwrap();
    }

    #[test]
    fn a_clock_that_steps_back_refills_nothing() {
        let b = Buckets::default();
        b.take("k", rate("1/s"), 5_000).unwrap();
        assert!(b.take("k", rate("1/s"), 1_000).is_err());
    }
}
