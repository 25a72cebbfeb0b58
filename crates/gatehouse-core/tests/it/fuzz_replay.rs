//! The cargo-fuzz properties (`fuzz/checks.rs`) on stable Rust: every input in
//! the committed corpus (`fuzz/corpus/<target>/`, grown by `scripts/fuzz.sh`),
//! then random inputs, so a regression a fuzzer once found fails here.

#[path = "../../../../fuzz/checks.rs"]
mod checks;

use proptest::prelude::*;
use std::path::PathBuf;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

fn replay(target: &str, check: fn(&[u8])) {
    let inputs = corpus(target);
    assert!(!inputs.is_empty(), "the {target} corpus is empty");
    for (path, bytes) in inputs {
        if std::panic::catch_unwind(|| check(&bytes)).is_err() {
            panic!("{target}: {} fails", path.display());
        }
    }
}

#[test]
fn frame_decoder_corpus() {
    replay("frame_decoder", checks::frame_decoder);
}

#[test]
fn stderr_tail_corpus() {
    replay("stderr_tail", checks::stderr_tail);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn frame_decoder_random(data in proptest::collection::vec(prop_oneof![Just(b'\n'), any::<u8>()], 0..600)) {
        checks::frame_decoder(&data);
    }

    #[test]
    fn stderr_tail_random(
        data in proptest::collection::vec(
            prop_oneof![Just(b'\n'), Just(b'a'), Just(b'b'), 0xc3u8..0xc4, any::<u8>()], 0..600),
    ) {
        checks::stderr_tail(&data);
    }
}
