//! Times as they leave the process: the store keeps Unix milliseconds, every
//! output (CLI `--json`, MCP results, the desktop's IPC) shows RFC 3339 text.
//!
//! Fields stay `i64` milliseconds in Rust; `#[serde(serialize_with = …)]` with
//! [`as_rfc3339`] or [`as_rfc3339_opt`] changes only what is printed.

use crate::error::{Error, Result, codes};

/// The longest duration accepted anywhere (36500 days, about 100 years): long
/// enough for any real expiry, grace period or timeout, short enough that
/// "now + duration" can never overflow a millisecond timestamp.
pub const MAX_DURATION_MS: i64 = 36_500 * 24 * 60 * 60 * 1000;

/// Parses a duration as an admin writes it (`500ms`, `30s`, `15m`, `24h`,
/// `30d`); one longer than [`MAX_DURATION_MS`] is refused rather than
/// overflowing later. The one duration parser of the CLI, the desktop and core.
pub fn parse_duration(text: &str) -> Result<std::time::Duration> {
    let d = humantime::parse_duration(text.trim()).map_err(|_| {
        Error::invalid(
            codes::DURATION_INVALID,
            format!("cannot read duration {text:?}"),
            "use forms such as 500ms, 30s, 15m, 24h, 30d",
        )
    })?;
    if d.as_millis() > MAX_DURATION_MS as u128 {
        return Err(Error::invalid(
            codes::DURATION_INVALID,
            format!("the duration {:?} is too long", text.trim()),
            "durations are at most 100 years (36500d)",
        ));
    }
    Ok(d)
}

/// [`parse_duration`] in store milliseconds.
pub fn parse_duration_ms(text: &str) -> Result<i64> {
    parse_duration(text).map(|d| d.as_millis() as i64)
}

/// Milliseconds since the Unix epoch: the one time format in the store.
pub fn now_ms() -> i64 {
    ::time::OffsetDateTime::now_utc().unix_timestamp_nanos() as i64 / 1_000_000
}

/// Formats a store timestamp (Unix milliseconds) as RFC 3339 in UTC, e.g.
/// `2026-01-31T12:00:00.123Z`; out-of-range values print as the number.
pub fn rfc3339(ms: i64) -> String {
    ::time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| {
            t.format(&::time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| ms.to_string())
}

/// `serialize_with` for an `i64` of Unix milliseconds.
pub fn as_rfc3339<S: serde::Serializer>(ms: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rfc3339(*ms))
}

/// `serialize_with` for an `Option<i64>` of Unix milliseconds (`null` stays `null`).
pub fn as_rfc3339_opt<S: serde::Serializer>(ms: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
    match ms {
        Some(ms) => s.serialize_str(&rfc3339(*ms)),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_print_as_utc_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_767_225_600_123), "2026-01-01T00:00:00.123Z");
    }
}
