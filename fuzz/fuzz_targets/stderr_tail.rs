#![no_main]
//! The stderr head/tail, its budgets, redaction and live lines.

#[allow(dead_code)] // each target uses one of the checks
#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::stderr_tail(data));
