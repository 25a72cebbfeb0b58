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
    let problems: Vec<String> = validator
        .iter_errors(args)
        .take(MAX_REPORTED)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() {
                "arguments".to_string()
            } else {
                at
            };
            format!("{at}: {}", e.masked())
        })
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
}
