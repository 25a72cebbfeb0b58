//! What a message may cost before it is parsed, and the busy answer.
//!
//! A line is at most [`super::Limits::max_message_bytes`], but parsed into
//! `serde_json::Value` it can be far bigger: every array element is a 32-byte
//! value, so 4 MiB of `[0,0,0,…]` takes over 100 MiB. [`estimate`] counts the
//! values a line would become in one cheap pass (no allocation) and the
//! server refuses a line above [`super::Limits::max_request_cost`], and holds
//! each line's estimate against a process-wide budget
//! ([`super::Limits::max_total_cost`]) while it is served, answering "busy"
//! when the budget or the request slots are full instead of waiting (a
//! waiting reader is a reader that no longer sees cancellations or the end
//! of input).

use rmcp::model::{ErrorCode, ErrorData};
use serde::Deserialize;
use serde_json::{Value, json};

/// Bytes one parsed value costs beyond its text, roughly: the 32-byte
/// `Value`, a vector's spare capacity or a map entry's key and node.
const PER_VALUE: usize = 64;

/// The bytes `line` would occupy once parsed, over-estimated.
pub fn estimate(line: &[u8]) -> usize {
    let mut values = 1usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in line {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            // Each separator or opener starts another value (a key counts too).
            b',' | b':' | b'[' | b'{' => values += 1,
            _ => {}
        }
    }
    line.len().saturating_add(values.saturating_mul(PER_VALUE))
}

/// The request id of a line without building the rest of it (unknown fields
/// are skipped, not stored), so even a refused line gets a correlated answer.
pub fn id_of(line: &[u8]) -> Value {
    #[derive(Deserialize)]
    struct IdOnly {
        #[serde(default)]
        id: Value,
    }
    match serde_json::from_slice::<IdOnly>(line) {
        Ok(IdOnly { id }) if id.is_string() || id.is_number() => id,
        _ => Value::Null,
    }
}

/// JSON-RPC's implementation-defined server error, for "try again later".
pub const BUSY: ErrorCode = ErrorCode(-32000);

/// The answer when the slots or the memory budget are full.
pub fn busy(what: &str) -> ErrorData {
    ErrorData::new(
        BUSY,
        format!("Server busy: {what}; retry when an earlier request has finished"),
        Some(json!({"reason": "busy"})),
    )
}

/// The answer for a single line that would cost too much to parse.
pub fn too_costly(cost: usize, limit: usize) -> ErrorData {
    ErrorData::new(
        ErrorCode::INVALID_REQUEST,
        format!(
            "Invalid Request: the message would take about {} MiB to parse; the limit is {} MiB (send fewer, larger values)",
            cost.div_ceil(1 << 20),
            limit >> 20
        ),
        Some(json!({"reason": "too_costly", "estimated_bytes": cost, "limit_bytes": limit})),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_small_values_cost_more_than_one_big_string() {
        let mut array = b"[".to_vec();
        for _ in 0..100_000 {
            array.extend_from_slice(b"0,");
        }
        array.extend_from_slice(b"0]");
        let string = format!("\"{}\"", "x".repeat(array.len()));
        assert!(estimate(&array) > 30 * array.len());
        assert!(estimate(string.as_bytes()) < string.len() + 2 * PER_VALUE);
        // Separators inside strings (escaped quotes too) are text, not values.
        assert_eq!(estimate(br#""a,\",b""#), 8 + PER_VALUE);
    }

    #[test]
    fn the_id_is_read_without_the_rest() {
        assert_eq!(
            id_of(br#"{"jsonrpc":"2.0","id":7,"params":{"a":[1,2]}}"#),
            json!(7)
        );
        assert_eq!(id_of(br#"{"id":"x"}"#), json!("x"));
        assert_eq!(id_of(br#"{"id":[1]}"#), Value::Null);
        assert_eq!(id_of(b"not json"), Value::Null);
    }
}
