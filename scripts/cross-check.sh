#!/usr/bin/env bash
# Clippy (-D warnings, every target) of gatehouse-core and gatehouse-cli for the
# other systems: Windows (x86_64-pc-windows-gnu) and macOS (aarch64-apple-darwin),
# plus `cargo check` for Intel macOS. Their own target directory, so the host
# build's artifacts stay warm. Needs scripts/cross-setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/cross-env.sh
export CARGO_TARGET_DIR="${GATEHOUSE_CROSS_TARGET_DIR:-$PWD/target/cross}"
for t in x86_64-pc-windows-gnu aarch64-apple-darwin; do
  echo "cross-check: clippy $t"
  cargo clippy -p gatehouse-core -p gatehouse-cli --all-targets --target "$t" -- -D warnings
done
echo "cross-check: check x86_64-apple-darwin"
cargo check -p gatehouse-core -p gatehouse-cli --all-targets --target x86_64-apple-darwin
