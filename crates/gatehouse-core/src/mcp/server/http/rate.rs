//! The HTTP server's limits: per-key request rates, failed authentications
//! and client registrations per address, and each client network's share of
//! what the server bounds for everyone ([`Shares`]). Each is a set of the process's one
//! token bucket ([`crate::access::rate`]) at a fixed rate, on a monotonic
//! clock, with a bounded map (docs/decisions.md, "gatehouse serve").

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use crate::access::rate::{Buckets as Map, Refill};
use crate::sync::lock;

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

    /// Gives back the token a request took, when it was then refused unserved.
    pub fn give_back(&self, who: &str) {
        self.map.give_back(who, self.fill, now_ms());
    }
}

/// The network a client address is limited as, named by its first address:
/// its IPv4 /24 or IPv6 /64, so that the many addresses one machine or one
/// customer of a host can take count as one (an IPv6 /64 alone holds more
/// addresses than any limit).
pub fn network(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            IpAddr::V4(Ipv4Addr::new(a, b, c, 0))
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => network(IpAddr::V4(v4)),
            None => IpAddr::V6(Ipv6Addr::from_bits(v6.to_bits() & !u128::from(u64::MAX))),
        },
    }
}

/// A client network's share of a bound the server keeps for everyone: a
/// quarter, so one network alone never takes it all, and a load test or a
/// team behind one address still has room.
pub fn per_network(bound: usize) -> usize {
    (bound / 4).max(1)
}

/// At most `max` of a bounded thing held at once per client network
/// (connections, request slots, event streams) or per key (event streams):
/// the server bounds each for everyone, and one client holding them all
/// (idle connections, held calls, streams left open) would shut everyone
/// else out.
pub struct Shares<K = IpAddr> {
    max: usize,
    held: Arc<Mutex<HashMap<K, usize>>>,
}

/// One share, given back when dropped.
pub struct Share<K: Eq + std::hash::Hash = IpAddr> {
    who: K,
    held: Arc<Mutex<HashMap<K, usize>>>,
}

impl<K: Eq + std::hash::Hash + Clone> Shares<K> {
    pub fn new(max: usize) -> Shares<K> {
        Shares {
            max,
            held: Arc::default(),
        }
    }

    /// A share for `who`, unless it holds `max` already.
    pub fn take_for(&self, who: K) -> Option<Share<K>> {
        let mut held = lock(&self.held);
        let n = held.entry(who.clone()).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(Share {
            who,
            held: self.held.clone(),
        })
    }
}

impl Shares<IpAddr> {
    /// A share for `ip`'s network.
    pub fn take(&self, ip: IpAddr) -> Option<Share> {
        self.take_for(network(ip))
    }
}

impl<K: Eq + std::hash::Hash> Drop for Share<K> {
    fn drop(&mut self) {
        let mut held = lock(&self.held);
        if let Some(n) = held.get_mut(&self.who) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.who);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_of_one_network_share_a_limit() {
        let n = |s: &str| network(s.parse().unwrap());
        assert_eq!(n("127.1.0.1"), n("127.1.0.110"));
        assert_ne!(n("127.1.0.1"), n("127.1.1.1"));
        assert_eq!(n("2001:db8:1:2::1"), n("2001:db8:1:2:ffff::9"));
        assert_ne!(n("2001:db8:1:2::1"), n("2001:db8:1:3::1"));
        assert_eq!(n("::ffff:192.0.2.7"), n("192.0.2.200"));
    }

    #[test]
    fn a_network_holds_at_most_its_shares_and_gets_them_back() {
        let shares = Shares::new(2);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.9".parse().unwrap();
        let first = shares.take(a).unwrap();
        let _second = shares.take(b).unwrap();
        assert!(shares.take(a).is_none(), "a third from the same /24");
        assert!(shares.take("198.51.100.1".parse().unwrap()).is_some());
        drop(first);
        assert!(shares.take(a).is_some());
    }

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
    }
}
