//! Canonical JSON: one text per value, whatever order its keys were written
//! in, for digests and signatures (tool-call arguments in the audit log, a
//! pinned tool list, a signed site export).

use std::collections::BTreeMap;

use serde_json::Value;

/// JSON with object keys sorted at every level and no whitespace.
pub fn canonical(value: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let ordered: BTreeMap<&String, Value> =
                    m.iter().map(|(k, v)| (k, sorted(v))).collect();
                // serde_json's map may keep insertion order (preserve_order):
                // insert in sorted order so either way the text is sorted.
                Value::Object(ordered.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
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
}
