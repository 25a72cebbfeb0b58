//! Canonical JSON: one text per value, whatever order its keys were written
//! in, for digests and signatures (tool-call arguments in the audit log, a
//! pinned tool list, a signed site export).

use std::io;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// JSON with object keys sorted at every level and no whitespace.
pub fn canonical(value: &Value) -> String {
    let mut out = Vec::new();
    write(&mut out, value).expect("a Vec takes every write");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// The SHA-256 of [`canonical`]'s text, in hex, with the text written
/// straight into the hash: a call's megabyte argument is digested without
/// a second megabyte (and a growing buffer's third) held while it waits.
pub fn canonical_sha256(value: &Value) -> String {
    // Buffered: a value's text comes in writes of a few bytes each.
    let mut out = io::BufWriter::with_capacity(16 * 1024, Sha256::new());
    write(&mut out, value).expect("a hash takes every write");
    let hash = out.into_inner().expect("a hash takes every write");
    hex_digest(&hash.finalize())
}

/// A digest in lowercase hex, as `hex::encode` writes it, through its
/// table-driven slice encoder: `hex::encode` collects an iterator of chars,
/// which every call paid twice (its argument digest, its entry's hash).
pub(crate) fn hex_digest(digest: &[u8]) -> String {
    let mut out = vec![0; digest.len() * 2];
    hex::encode_to_slice(digest, &mut out).expect("twice the digest's length");
    String::from_utf8(out).expect("hex digits are ASCII")
}

/// Written in place, without a sorted copy of the value: keys and scalars
/// as serde_json writes them.
fn write(out: &mut impl io::Write, value: &Value) -> io::Result<()> {
    match value {
        Value::Object(m) => write_object(out, m),
        Value::Array(a) => {
            out.write_all(b"[")?;
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write(out, v)?;
            }
            out.write_all(b"]")
        }
        scalar => Ok(serde_json::to_writer(out, scalar)?),
    }
}

fn write_object(out: &mut impl io::Write, map: &Map<String, Value>) -> io::Result<()> {
    // serde_json's map may keep insertion order (preserve_order): sort.
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.write_all(b"{")?;
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, k)?;
        out.write_all(b":")?;
        write(out, v)?;
    }
    out.write_all(b"}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_hex_digest_is_what_hex_encode_writes() {
        let digest = Sha256::digest(b"gatehouse");
        assert_eq!(hex_digest(&digest), hex::encode(digest));
        assert_eq!(hex_digest(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
    }

    #[test]
    fn keys_are_sorted_at_every_level() {
        let a = json!({"b": 1, "a": {"y": [1, {"d": 2, "c": 3}], "x": "s"}});
        assert_eq!(
            canonical(&a),
            r#"{"a":{"x":"s","y":[1,{"c":3,"d":2}]},"b":1}"#
        );
    }

    /// The text written in place is the text of the value with its keys
    /// sorted (how `canonical` was first written), escapes and numbers included.
    #[test]
    fn the_text_is_the_sorted_values_serialisation() {
        fn sorted(v: &Value) -> Value {
            match v {
                Value::Object(m) => {
                    let ordered: std::collections::BTreeMap<&String, Value> =
                        m.iter().map(|(k, v)| (k, sorted(v))).collect();
                    Value::Object(ordered.into_iter().map(|(k, v)| (k.clone(), v)).collect())
                }
                Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
                other => other.clone(),
            }
        }
        let v = json!({"z\"q": [true, null, -1.5e300, 18446744073709551615u64, "é\u{1}\n\\"],
            "": {}, "B": [], "a": {"é": 0, "e": -0}});
        assert_eq!(canonical(&v), sorted(&v).to_string());
        assert_eq!(
            canonical_sha256(&v),
            hex::encode(Sha256::digest(canonical(&v).as_bytes()))
        );
    }
}
