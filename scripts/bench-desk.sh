#!/usr/bin/env bash
# The desktop app under load (the admin screens): ten connections flooding stderr with
# every tail side by side (frame times, input-to-paint latency), cold start to
# first paint and idle RSS, against the release build, under Xvfb.
# Prints one JSON line per round (tests/e2e/load.rs); BENCH_RUNS rounds (default 3).
#
# Usage: BENCH_RUNS=3 scripts/bench-desk.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f ui/dist/index.html ] || bash scripts/ui-build.sh
cargo build --release -q -p gatehouse-desktop -p gatehouse-cli
target=${CARGO_TARGET_DIR:-target}
for _ in $(seq "${BENCH_RUNS:-3}"); do
  # GATEHOUSE_BENCH_FLOOD_MB=0 gives the baseline (the same clicks, no flood);
  # GATEHOUSE_BENCH_NICE=0 runs the floods at the host's priority;
  # GATEHOUSE_BENCH_SPIN_S=30 has each server burn CPU for 30 s from its start;
  # GATEHOUSE_STDERR_READER_NICE=0 reads stderr at the app's own priority.
  GATEHOUSE_E2E_APP="$PWD/$target/release/gatehouse-desktop" \
    flock /tmp/e2e.lock xvfb-run -a cargo test -q -p gatehouse-desktop --test e2e load \
    -- --include-ignored --nocapture 2>&1 | grep '^desk-bench:'
done
