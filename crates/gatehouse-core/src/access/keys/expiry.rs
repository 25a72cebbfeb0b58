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

pub use crate::time::{MAX_DURATION_MS, parse_duration_ms, rfc3339};

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
