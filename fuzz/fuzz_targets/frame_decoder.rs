#![no_main]
//! The line framer under both oversize policies (and the JSON-RPC line parser behind it).

#[allow(dead_code)] // each target uses one of the checks
#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::frame_decoder(data));
