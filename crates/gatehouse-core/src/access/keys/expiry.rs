//! Expiries and durations as an admin writes them, refused before they overflow.

use crate::error::{Error, Result, codes};

/// Parses an expiry: a duration from now (`30d`, `12h`) or an RFC 3339 time.
pub fn parse_expiry(text: &str, now_ms: i64) -> Result<i64> {
    if let Ok(at) =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
    {
        return Ok((at.unix_timestamp_nanos() / 1_000_000) as i64);
    }
    match parse_duration_ms(text) {
        Ok(d) => after(now_ms, d),
        Err(e) if e.message.contains("too long") => Err(e),
        Err(_) => Err(Error::invalid(
            codes::EXPIRY_INVALID,
            format!("cannot read expiry {text:?}"),
            "give a duration such as 30d, 12h, 90m, or an RFC 3339 time such as 2027-01-31T00:00:00Z",
        )),
    }
}

/// The longest duration accepted anywhere (36500 days, about 100 years): long enough for any
/// real expiry or grace period, short enough that "now + duration" can never
/// overflow a millisecond timestamp.
pub const MAX_DURATION_MS: i64 = 36_500 * 24 * 60 * 60 * 1000;

/// Parses a duration such as `24h`, `30d` or `90s` into milliseconds; one
/// longer than [`MAX_DURATION_MS`] is refused rather than overflowing later.
pub fn parse_duration_ms(text: &str) -> Result<i64> {
    let ms = humantime::parse_duration(text.trim())
        .ok()
        .map(|d| d.as_millis())
        .ok_or_else(|| {
            Error::invalid(
                codes::DURATION_INVALID,
                format!("cannot read duration {text:?}"),
                "use forms such as 30s, 15m, 24h, 30d",
            )
        })?;
    i64::try_from(ms)
        .ok()
        .filter(|ms| *ms <= MAX_DURATION_MS)
        .ok_or_else(|| {
            Error::invalid(
                codes::DURATION_INVALID,
                format!("the duration {:?} is too long", text.trim()),
                "durations are at most 100 years (36500d)",
            )
        })
}

pub use crate::time::rfc3339;

/// `now + duration`, refused instead of overflowing.
pub fn after(now_ms: i64, duration_ms: i64) -> Result<i64> {
    now_ms.checked_add(duration_ms).ok_or_else(|| {
        Error::invalid(
            codes::DURATION_INVALID,
            "the duration reaches past the last representable time",
            "durations are at most 100 years (36500d)",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_forms() {
        assert_eq!(parse_expiry("30d", 0).unwrap(), 30 * 86_400_000);
        assert_eq!(parse_expiry("1970-01-01T00:00:01Z", 0).unwrap(), 1000);
        assert_eq!(
            parse_expiry("soon", 0).unwrap_err().code,
            codes::EXPIRY_INVALID
        );
    }
}
