//! Where the pinned SDKs live and how an interop test skips when they are
//! missing; shared by the interop tests of both crates (`#[path]`-included).

use std::path::PathBuf;

/// `tests/interop`, from a crate under `crates/`.
pub fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop")
}

/// Whether to skip: true (with a message) when the dependency is missing;
/// under `CI` a missing dependency fails instead, so CI never skips.
pub fn missing(what: &str, present: bool) -> bool {
    if present {
        return false;
    }
    let msg = format!("{what} is not installed; run scripts/interop-setup.sh");
    assert!(
        std::env::var_os("CI").is_none(),
        "{msg} (CI must run the interop tests)"
    );
    eprintln!("SKIPPED: {msg}");
    true
}
