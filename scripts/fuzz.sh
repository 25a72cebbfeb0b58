#!/usr/bin/env bash
# Runs the cargo-fuzz targets in fuzz/ (the stdout frame decoder and the stderr
# head/tail), each for SECONDS (default 60), then minimises the corpus into
# fuzz/corpus/<target>/, which crates/gatehouse-core/tests/it/fuzz_replay.rs
# replays on stable in every test run. Commit the corpus after a run.
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET…]
#
# cargo-fuzz needs nightly flags; this machine has one stable toolchain, so
# RUSTC_BOOTSTRAP=1 unlocks them (the same compiler, nothing downloaded).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(frame_decoder stderr_tail)

export PATH="$HOME/.cargo/bin:$PATH"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked --version "^0.13"
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$PWD/target}

for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  echo "fuzz: $t for ${secs}s"
  cargo fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -max_len=4096 -print_final_stats=1
  cargo fuzz cmin "$t" "corpus/$t" -- -max_len=4096
done
