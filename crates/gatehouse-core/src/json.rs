//! Canonical JSON: one text per value, whatever order its keys were written
//! in, for digests and signatures (tool-call arguments in the audit log, a
//! pinned tool list, a signed site export).

use serde_json::{Map, Value};

/// JSON with object keys sorted at every level and no whitespace.
pub fn canonical(value: &Value) -> String {
    let mut out = Vec::new();
    write(&mut out, value);
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// [`canonical`] of an object held as its map (a tool call's arguments),
/// without copying it into a [`Value`] first.
pub fn canonical_object(map: &Map<String, Value>) -> String {
    let mut out = Vec::new();
    write_object(&mut out, map);
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// Written in place, without a sorted copy of the value: keys and scalars
/// as serde_json writes them.
fn write(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Object(m) => write_object(out, m),
        Value::Array(a) => {
            out.push(b'[');
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(out, v);
            }
            out.push(b']');
        }
        scalar => serde_json::to_writer(&mut *out, scalar).expect("a scalar serialises"),
    }
}

fn write_object(out: &mut Vec<u8>, map: &Map<String, Value>) {
    // serde_json's map may keep insertion order (preserve_order): sort.
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push(b'{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, k).expect("a key serialises");
        out.push(b':');
        write(out, v);
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let Value::Object(m) = &v else { unreachable!() };
        assert_eq!(canonical_object(m), canonical(&v));
    }
}
