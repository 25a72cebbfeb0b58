//! Tool arguments checked against the tool's declared `inputSchema`, for
//! every tool on one path, before the tool runs.
//!
//! The schemas the manifest publishes are the contract: lengths, ranges,
//! required and unknown properties, enums. Checking them with a JSON Schema
//! validator (the `jsonschema` crate, draft 2020-12) means a limit written in
//! the manifest is a limit enforced, with no second copy in serde attributes
//! to drift from it. Validators are compiled once per process.
//!
//! Messages never echo the argument's value (it may be a megabyte, or
//! something the caller would not want in an error): only where it failed
//! and why.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::LazyLock;

use serde_json::Value;

use crate::error::{Error, Result, codes};
use crate::mcp::server::manifest::{self, ToolSpec};

static VALIDATORS: LazyLock<HashMap<&'static str, jsonschema::Validator>> = LazyLock::new(|| {
    manifest::all()
        .iter()
        .map(|t| {
            let v = jsonschema::validator_for(&t.input_schema)
                .unwrap_or_else(|e| panic!("the input schema of {} is invalid: {e}", t.name));
            (t.name, v)
        })
        .collect()
});

/// At most this many problems are named in one refusal.
const MAX_REPORTED: usize = 5;

/// Refuses `args` (the request's own value, never a copy: it may be
/// megabytes) unless they match `spec`'s input schema.
pub fn check(spec: &ToolSpec, args: &Value) -> Result<()> {
    let validator = VALIDATORS
        .get(spec.name)
        .expect("every manifest tool has a validator");
    let mut nul = Vec::new();
    find_nul(args, &mut String::new(), &mut nul);
    let problems: Vec<String> = nul
        .into_iter()
        .chain(validator.iter_errors(args).map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() {
                "arguments".to_string()
            } else {
                at
            };
            format!("{at}: {}", e.masked())
        }))
        .take(MAX_REPORTED)
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    Err(Error::invalid(
        codes::TOOL_ARGUMENTS_INVALID,
        format!(
            "invalid arguments for {}: {}",
            spec.name,
            problems.join("; ")
        ),
        "check the arguments against the tool's inputSchema (tools/list)",
    )
    .detail(serde_json::json!({"problems": problems})))
}

/// Notes the strings (or objects' property names) under `v` holding U+0000,
/// by their JSON pointer, the first [`MAX_REPORTED`] of them. No text column
/// stores one (PostgreSQL refuses it outright), so such a value is the
/// caller's mistake, refused here with the rest, not a storage error after
/// the tool ran.
fn find_nul(v: &Value, at: &mut String, found: &mut Vec<String>) {
    if found.len() >= MAX_REPORTED {
        return;
    }
    let place = |at: &str| if at.is_empty() { "arguments" } else { at }.to_string();
    match v {
        Value::String(s) if s.contains('\0') => {
            found.push(format!(
                "{}: contains a NUL character (U+0000), which no text can hold",
                place(at)
            ));
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = at.len();
                let _ = write!(at, "/{i}");
                find_nul(item, at, found);
                at.truncate(len);
            }
        }
        Value::Object(map) => {
            if map.keys().any(|k| k.contains('\0')) {
                found.push(format!(
                    "{}: a property name contains a NUL character (U+0000)",
                    place(at)
                ));
            }
            for (k, item) in map {
                let len = at.len();
                let _ = write!(at, "/{}", k.replace('~', "~0").replace('/', "~1"));
                find_nul(item, at, found);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_schema_compiles() {
        for t in manifest::all() {
            assert!(VALIDATORS.contains_key(t.name));
        }
    }

    #[test]
    fn declared_lengths_are_enforced_without_echoing_the_value() {
        let search = manifest::find("content_search").unwrap();
        let long = "q".repeat(501);
        let e = check(search, &json!({"query": long})).unwrap_err();
        assert_eq!(e.code, codes::TOOL_ARGUMENTS_INVALID);
        assert!(e.message.contains("/query"), "{}", e.message);
        assert!(!e.message.contains("qqqq"), "{}", e.message);
        assert!(check(search, &json!({"query": "hello"})).is_ok());
        let e = check(search, &json!({"query": "x", "extra": 1})).unwrap_err();
        assert!(e.message.contains("extra"), "{}", e.message);
        let e = check(search, &json!({})).unwrap_err();
        assert!(e.message.contains("query"), "{}", e.message);
    }

    /// PostgreSQL refuses U+0000 in text: without this a slug holding one was
    /// a storage error there (and not found on SQLite).
    #[test]
    fn a_nul_anywhere_in_the_arguments_is_refused_by_its_place() {
        let read = manifest::find("content_read").unwrap();
        let e = check(read, &json!({"slug": "welcome\u{0}"})).unwrap_err();
        assert_eq!(e.code, codes::TOOL_ARGUMENTS_INVALID);
        assert!(
            e.message.contains("/slug: contains a NUL character"),
            "{}",
            e.message
        );
        let e = check(read, &json!({"slug": "a", "x\u{0}": 1})).unwrap_err();
        assert!(
            e.message
                .contains("arguments: a property name contains a NUL"),
            "{}",
            e.message
        );
        let nested = json!({"a/b": [{"c": "ok"}, {"c~": "no\u{0}"}]});
        let mut found = Vec::new();
        find_nul(&nested, &mut String::new(), &mut found);
        assert_eq!(
            found,
            ["/a~1b/1/c~0: contains a NUL character (U+0000), which no text can hold"]
        );
        // A megabyte of them is five problems, not a string for each.
        let many = Value::Array(vec![json!("\u{0}"); 100_000]);
        let mut found = Vec::new();
        find_nul(&many, &mut String::new(), &mut found);
        assert_eq!(found.len(), MAX_REPORTED);
        assert!(check(read, &json!({"slug": "welcome"})).is_ok());
    }
}
