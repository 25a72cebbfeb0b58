//! Sizes as an admin writes them (`512MiB`); durations are [`crate::time::parse_duration`].

use crate::error::{Error, Result, codes};

/// Parses a size such as `512MiB`, `1GiB`, `100MB`, `4096`.
pub fn parse_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| size_error(text))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        _ => return Err(size_error(text)),
    };
    n.checked_mul(mult).ok_or_else(|| size_error(text))
}

fn size_error(text: &str) -> Error {
    Error::invalid(
        codes::INPUT_INVALID,
        format!("{text:?} is not a size"),
        "write a size like 512MiB, 1GiB or 100MB",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("100MB").unwrap(), 100_000_000);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("12XB").is_err());
    }
}
