//! Token buckets: the one limiter of the process. Per-key call rates (one
//! bucket per key id, shared by every session and transport the process
//! serves: stdio and HTTP reach it through the same per-call gate), and the
//! HTTP server's per-key request rates, failed authentications and client
//! registrations per address (`mcp::server::http::rate`).
//!
//! A bucket holds up to its burst and refills at its rate, so a caller may
//! spend the whole burst and then proceeds at the steady rate. A refused
//! caller is told how long until the next token. Tokens are counted in
//! thousandths with integer arithmetic, and the time toward the next
//! thousandth is kept, so nothing drifts; the clock is
//! the caller's, in milliseconds, and a clock that steps back refills nothing.
//! Hand-written (a few dozen lines) rather than `governor`: only "take one, or
//! say when the next one comes" is needed, with a bounded map and a rate that
//! may change per key.
//!
//! # Caveats
//! Buckets live in memory: two server processes serving the same key each
//! allow the full rate, and a restart refills the bucket.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use crate::access::restrictions::Rate;
use crate::error::{Code, Error, Result};
use crate::sync::lock;

/// How a bucket fills: at most `burst` tokens, `refill` more every `per_ms`
/// milliseconds (both in thousandths of a token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refill {
    burst: i64,
    refill: i64,
    per_ms: i64,
}

impl Refill {
    /// `per_second` tokens a second, at most `burst` held (the HTTP server's
    /// limits, which may be fractions: one registration every six minutes).
    /// Kept as thousandths of a token per hour, so such rates are exact.
    pub fn per_second(per_second: f64, burst: f64) -> Refill {
        const HOUR_MS: i64 = 3_600_000;
        Refill {
            burst: ((burst * 1000.0).round() as i64).max(1000),
            // Thousandths per hour: per_second × 3,600 s × 1,000.
            refill: ((per_second * HOUR_MS as f64).round() as i64).max(0),
            per_ms: HOUR_MS,
        }
    }
}

/// A key's rate: its whole allowance is the burst.
impl From<Rate> for Refill {
    fn from(rate: Rate) -> Refill {
        let allowance = i64::from(rate.calls) * 1000;
        Refill {
            burst: allowance,
            refill: allowance,
            per_ms: rate.period.millis(),
        }
    }
}

/// One caller's bucket.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    fill: Refill,
    /// Tokens, in thousandths.
    milli_tokens: i64,
    /// When `milli_tokens` was last brought up to date (the caller's clock, ms).
    at: i64,
}

impl Bucket {
    fn full(fill: Refill, now: i64) -> Bucket {
        Bucket {
            fill,
            milli_tokens: fill.burst,
            at: now,
        }
    }

    /// Brings the tokens up to `now`. `at` advances by the time the whole
    /// thousandths earned took, so the remainder counts toward the next one.
    fn refresh(&mut self, now: i64) {
        let elapsed = now - self.at;
        if elapsed <= 0 {
            return;
        }
        let earned = i64::try_from(
            i128::from(elapsed) * i128::from(self.fill.refill) / i128::from(self.fill.per_ms),
        )
        .unwrap_or(i64::MAX);
        if earned == 0 {
            return;
        }
        if self.milli_tokens.saturating_add(earned) >= self.fill.burst {
            self.milli_tokens = self.fill.burst;
            self.at = now;
        } else {
            self.milli_tokens += earned;
            self.at += ceil_div(earned, self.fill.per_ms, self.fill.refill);
        }
    }

    /// The tokens held at `now` (thousandths), without spending any.
    fn held(&self, now: i64) -> i64 {
        let mut b = *self;
        b.refresh(now);
        b.milli_tokens
    }

    /// Spends `cost` thousandths if a whole token is there, or says how many
    /// milliseconds until one is (`i64::MAX` for a bucket that never refills).
    fn spend(&mut self, now: i64, cost: i64) -> std::result::Result<(), i64> {
        self.refresh(now);
        if self.milli_tokens >= 1000 {
            self.milli_tokens -= cost;
            return Ok(());
        }
        if self.fill.refill == 0 {
            return Err(i64::MAX);
        }
        let missing = 1000 - self.milli_tokens;
        let since = (now - self.at).max(0);
        Err((ceil_div(missing, self.fill.per_ms, self.fill.refill) - since).max(1))
    }
}

/// `a * b / c` rounded up, without overflow (`c` > 0).
fn ceil_div(a: i64, b: i64, c: i64) -> i64 {
    let (n, c) = (i128::from(a) * i128::from(b), i128::from(c));
    i64::try_from(n / c + i128::from(n % c != 0)).unwrap_or(i64::MAX)
}

/// Buckets by name (a key id, a client address). A bucket is made full on
/// its name's first use and made again whenever its rate changes. A bounded
/// map forgets full buckets first (forgetting one loses nothing), then any.
#[derive(Debug)]
pub struct Buckets {
    by_name: Mutex<HashMap<String, Bucket>>,
    capacity: usize,
}

impl Default for Buckets {
    fn default() -> Buckets {
        Buckets::bounded(usize::MAX)
    }
}

impl Buckets {
    /// At most `capacity` buckets at once.
    pub fn bounded(capacity: usize) -> Buckets {
        Buckets {
            by_name: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// Takes a token from `name`'s bucket at time `now` (ms), or says how many
    /// milliseconds until one is there.
    pub fn take(&self, name: &str, fill: Refill, now: i64) -> std::result::Result<(), i64> {
        self.spend(name, fill, now, 1000)
    }

    /// Whether `name` has a token at `now`, without taking it.
    pub fn check(&self, name: &str, fill: Refill, now: i64) -> std::result::Result<(), i64> {
        self.spend(name, fill, now, 0)
    }

    /// Gives back a token [`Buckets::take`] took from `name` for a request
    /// that was then refused without being served (never above the burst).
    pub fn give_back(&self, name: &str, fill: Refill, now: i64) {
        let mut map = lock(&self.by_name);
        if let Some(b) = map.get_mut(name)
            && b.fill == fill
        {
            b.refresh(now);
            b.milli_tokens = (b.milli_tokens + 1000).min(b.fill.burst);
        }
    }

    fn spend(&self, name: &str, fill: Refill, now: i64, cost: i64) -> std::result::Result<(), i64> {
        let mut map = lock(&self.by_name);
        if !map.contains_key(name) && map.len() >= self.capacity {
            map.retain(|_, b| b.held(now) < b.fill.burst);
            if map.len() >= self.capacity
                && let Some(k) = map.keys().next().cloned()
            {
                map.remove(&k);
            }
        }
        let bucket = map
            .entry(name.to_string())
            .or_insert_with(|| Bucket::full(fill, now));
        if bucket.fill != fill {
            *bucket = Bucket::full(fill, now);
        }
        bucket.spend(now, cost)
    }
}

/// Takes one call from `key_id`'s allowance at `rate` from `buckets`, at `now`.
fn take_at(buckets: &Buckets, key_id: &str, rate: Rate, now: i64) -> Result<()> {
    buckets
        .take(key_id, rate.into(), now)
        .map_err(|wait_ms| limited(key_id, rate, wait_ms))
}

fn limited(key_id: &str, rate: Rate, wait_ms: i64) -> Error {
    let secs = (wait_ms as f64 / 1000.0).max(0.001);
    Error::new(
        Code::KEY_RATE_LIMITED,
        format!(
            "key {key_id} made more calls than its rate allows ({})",
            rate.describe()
        ),
    )
    .hint(format!("retry in {secs:.3} s"))
    .detail(serde_json::json!({"rate": rate, "retry_after_ms": wait_ms}))
}

/// The process's key buckets.
static BUCKETS: LazyLock<Buckets> = LazyLock::new(Buckets::default);

/// Takes one call from `key_id`'s allowance now; a refusal is
/// `KEY_RATE_LIMITED` with `retry_after_ms`.
pub fn take(key_id: &str, rate: Rate) -> Result<()> {
    take_at(&BUCKETS, key_id, rate, crate::time::now_ms())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(s: &str) -> Rate {
        s.parse().unwrap()
    }

    /// A token given back can be spent once more, never past the burst.
    #[test]
    fn a_token_given_back_returns_once_and_never_past_the_burst() {
        let b = Buckets::default();
        let f = Refill::per_second(1.0, 2.0);
        let spend = |now| b.take("k", f, now);
        assert!(spend(0).is_ok() && spend(0).is_ok() && spend(0).is_err());
        b.give_back("k", f, 0);
        assert!(spend(0).is_ok());
        assert!(spend(0).is_err());
        b.give_back("k", f, 60_000);
        b.give_back("k", f, 60_000);
        assert!(spend(60_000).is_ok() && spend(60_000).is_ok());
        assert!(spend(60_000).is_err());
        // A bucket never taken from has nothing to give back.
        b.give_back("other", f, 0);
        assert!(spend(60_000).is_err());
    }

    #[test]
    fn a_burst_of_the_allowance_then_the_steady_rate() {
        let b = Buckets::default();
        let r = rate("3/s");
        for _ in 0..3 {
            take_at(&b, "k", r, 1_000).unwrap();
        }
        let e = take_at(&b, "k", r, 1_000).unwrap_err();
        assert_eq!(e.code, Code::KEY_RATE_LIMITED);
        // One token every 333.4 ms.
        assert_eq!(e.detail.as_ref().unwrap()["retry_after_ms"], 334);
        assert!(e.hint.unwrap().starts_with("retry in 0.334"));
        assert!(take_at(&b, "k", r, 1_300).is_err());
        take_at(&b, "k", r, 1_334).unwrap();
        assert!(take_at(&b, "k", r, 1_334).is_err());
        // Refills never exceed the allowance.
        for _ in 0..3 {
            take_at(&b, "k", r, 100_000).unwrap();
        }
        assert!(take_at(&b, "k", r, 100_000).is_err());
    }

    #[test]
    fn keys_have_their_own_buckets_and_a_new_rate_starts_full() {
        let b = Buckets::default();
        take_at(&b, "a", rate("1/min"), 0).unwrap();
        assert!(take_at(&b, "a", rate("1/min"), 10).is_err());
        take_at(&b, "b", rate("1/min"), 10).unwrap();
        let e = take_at(&b, "a", rate("1/min"), 30_000).unwrap_err();
        assert_eq!(e.detail.unwrap()["retry_after_ms"], 30_000);
        take_at(&b, "a", rate("2/min"), 30_000).unwrap();
    }

    #[test]
    fn a_clock_that_steps_back_refills_nothing() {
        let b = Buckets::default();
        take_at(&b, "k", rate("1/s"), 5_000).unwrap();
        assert!(take_at(&b, "k", rate("1/s"), 1_000).is_err());
    }

    #[test]
    fn fractional_rates_and_a_separate_burst_are_exact() {
        let b = Buckets::default();
        // Ten at once, then one every six minutes.
        let f = Refill::per_second(1.0 / 360.0, 10.0);
        for _ in 0..10 {
            b.take("a", f, 0).unwrap();
        }
        assert_eq!(b.take("a", f, 0), Err(360_000));
        assert_eq!(b.take("a", f, 359_999), Err(1));
        b.take("a", f, 360_000).unwrap();
        // check never spends.
        assert!(b.check("fresh", f, 0).is_ok());
        assert!(b.check("a", f, 360_000).is_err());
        // A bucket that never refills says so.
        let never = Refill::per_second(0.0, 1.0);
        b.take("n", never, 0).unwrap();
        assert_eq!(b.take("n", never, 10_000_000), Err(i64::MAX));
    }

    #[test]
    fn a_bounded_map_forgets_full_buckets_first() {
        let b = Buckets::bounded(4);
        let f = Refill::per_second(1.0, 1.0);
        b.take("busy", f, 0).unwrap();
        for i in 0..100 {
            let _ = b.check(&format!("k{i}"), f, 0);
            assert!(lock(&b.by_name).len() <= 4);
        }
        // The spent bucket outlived the full ones.
        assert!(b.take("busy", f, 0).is_err());
    }
}
