//! Reads `gatehouse serve`'s Prometheus exposition (`--metrics-listen`) into
//! [`Sample`], and turns successive samples into a request rate ([`Window`]).
//!
//! Only the server's own series are read, in the format its `Metrics::render`
//! writes: `name{label="value",…} number` lines and `#` comments. Label
//! values there are tool names, fixed outcomes and key ids, none of which
//! holds a quote, a comma or a backslash, so no escape handling is needed
//! (see docs/decisions.md, "Serve panel reads metrics").

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde::Serialize;

/// The counters of one scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// Requests to `/mcp` answered (the latency histogram's count).
    pub requests: u64,
    pub in_flight: u64,
    pub calls_ok: u64,
    /// Tool calls that ran and returned an error result, or did not finish
    /// within the request's bound.
    pub calls_error: u64,
    /// Tool calls refused (a JSON-RPC error: permission, arguments, …).
    pub calls_refused: u64,
    pub auth_failures: u64,
    pub rate_limited: u64,
    /// Requests refused for a key's rate, by key id, most first.
    pub limited_keys: Vec<LimitedKey>,
}

/// One key over its request rate, and how many requests it lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct LimitedKey {
    pub key_id: String,
    pub requests: u64,
}

/// The value of `label` in a `{a="x",b="y"}` label set.
fn label<'a>(labels: &'a str, name: &str) -> Option<&'a str> {
    labels.split(',').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k.trim() == name).then(|| v.trim().trim_matches('"'))
    })
}

/// Parses the exposition text; unknown series and malformed lines are
/// skipped (a newer server may add series).
pub fn parse(text: &str) -> Sample {
    let mut s = Sample::default();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((series, value)) = line.rsplit_once(char::is_whitespace) else {
            continue;
        };
        // Counters are integers; a float (the latency sum) is not read.
        let Ok(n) = value.trim().parse::<u64>() else {
            continue;
        };
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (name.trim(), rest.trim_end().trim_end_matches('}')),
            None => (series.trim(), ""),
        };
        match name {
            "gatehouse_http_request_seconds_count" => s.requests = n,
            "gatehouse_http_in_flight" => s.in_flight = n,
            "gatehouse_http_auth_failures_total" => s.auth_failures = n,
            "gatehouse_http_rate_limited_total" => s.rate_limited = n,
            "gatehouse_tool_calls_total" => match label(labels, "outcome") {
                Some("ok") => s.calls_ok += n,
                Some("error" | "timed_out") => s.calls_error += n,
                Some("refused") => s.calls_refused += n,
                _ => {}
            },
            "gatehouse_http_rate_limited_key_total" => {
                if let Some(key) = label(labels, "key_id") {
                    s.limited_keys.push(LimitedKey {
                        key_id: key.to_string(),
                        requests: n,
                    });
                }
            }
            _ => {}
        }
    }
    s.limited_keys
        .sort_by(|a, b| b.requests.cmp(&a.requests).then(a.key_id.cmp(&b.key_id)));
    s
}

/// How far back the rate looks.
pub const RATE_WINDOW: Duration = Duration::from_secs(5);

/// Recent request counts, for a rate over the last [`RATE_WINDOW`]: steady
/// under a page that polls every second, and still right after a pause (the
/// sample before the pause is kept, so the rate is the pause's average).
#[derive(Debug, Default)]
pub struct Window {
    samples: VecDeque<(Instant, u64)>,
}

impl Window {
    /// Adds the count read at `at` and returns the rate in requests per
    /// second (0 until two samples exist).
    pub fn push(&mut self, at: Instant, requests: u64) -> f64 {
        self.samples.push_back((at, requests));
        while self.samples.len() > 2
            && self
                .samples
                .get(1)
                .is_some_and(|(t, _)| at.duration_since(*t) >= RATE_WINDOW)
        {
            self.samples.pop_front();
        }
        let (Some(&(t0, n0)), Some(&(t1, n1))) = (self.samples.front(), self.samples.back()) else {
            return 0.0;
        };
        let secs = t1.duration_since(t0).as_secs_f64();
        if secs <= 0.0 {
            return 0.0;
        }
        n1.saturating_sub(n0) as f64 / secs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text the server's own renderer writes is read back whole.
    #[test]
    fn reads_what_the_server_renders() {
        let text = "# TYPE gatehouse_http_in_flight gauge\n\
            gatehouse_http_in_flight 2\n\
            gatehouse_http_auth_failures_total 3\n\
            gatehouse_http_rate_limited_total 7\n\
            gatehouse_http_rate_limited_key_total{key_id=\"abc\"} 2\n\
            gatehouse_http_rate_limited_key_total{key_id=\"xyz\"} 5\n\
            gatehouse_tool_calls_total{tool=\"content_read\",outcome=\"ok\"} 10\n\
            gatehouse_tool_calls_total{tool=\"content_update\",outcome=\"refused\"} 4\n\
            gatehouse_tool_calls_total{tool=\"content_read\",outcome=\"error\"} 1\n\
            gatehouse_tool_calls_total{tool=\"http_fetch\",outcome=\"timed_out\"} 2\n\
            gatehouse_tool_calls_total{tool=\"content_list\",outcome=\"ok\"} 5\n\
            gatehouse_http_request_seconds_bucket{le=\"+Inf\"} 31\n\
            gatehouse_http_request_seconds_sum 0.0123\n\
            gatehouse_http_request_seconds_count 31\n";
        let s = parse(text);
        assert_eq!(s.requests, 31);
        assert_eq!(s.in_flight, 2);
        assert_eq!((s.calls_ok, s.calls_error, s.calls_refused), (15, 3, 4));
        assert_eq!((s.auth_failures, s.rate_limited), (3, 7));
        let keys: Vec<_> = s
            .limited_keys
            .iter()
            .map(|k| (k.key_id.as_str(), k.requests))
            .collect();
        assert_eq!(keys, [("xyz", 5), ("abc", 2)]);
    }

    #[test]
    fn unknown_and_malformed_lines_are_skipped() {
        let s = parse("garbage\nother_total 5\ngatehouse_http_in_flight x\n\n");
        assert_eq!(s, Sample::default());
    }

    #[test]
    fn the_rate_covers_the_window_and_survives_a_pause() {
        let t = Instant::now();
        let mut w = Window::default();
        assert_eq!(w.push(t, 100), 0.0);
        assert_eq!(w.push(t + Duration::from_secs(1), 110), 10.0);
        assert_eq!(w.push(t + Duration::from_secs(2), 130), 15.0);
        // Samples older than the window go; the rate is over what is left.
        for i in 3..=8 {
            w.push(t + Duration::from_secs(i), 130 + 10 * (i - 2));
        }
        let r = w.push(t + Duration::from_secs(9), 200);
        assert_eq!(r, (200 - 150) as f64 / 5.0);
        // After a minute without polls, the rate is that minute's average.
        let r = w.push(t + Duration::from_secs(69), 260);
        assert_eq!(r, 1.0);
        // A restarted counter never shows a negative rate.
        assert_eq!(w.push(t + Duration::from_secs(70), 0), 0.0);
    }
}
