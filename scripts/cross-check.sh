#!/usr/bin/env bash
# Clippy (-D warnings, every target) of gatehouse-core and gatehouse-cli for the
# other systems: Windows (x86_64-pc-windows-gnu) and macOS (aarch64-apple-darwin),
# plus `cargo check` for Intel macOS; then the desktop app and the AppImage runtime
# for the same two (scripts/cross-clippy-desktop.sh). One target directory,
# target/cross, so the host build's artifacts stay warm and the desktop reuses core's.
# Each part prints its time. Needs scripts/cross-setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/cross-env.sh
export CARGO_TARGET_DIR="${GATEHOUSE_CROSS_TARGET_DIR:-$PWD/target/cross}"
t=$SECONDS
took() { echo "cross-check: $1 took $((SECONDS - t)) s"; t=$SECONDS; }
for target in x86_64-pc-windows-gnu aarch64-apple-darwin; do
  echo "cross-check: clippy $target"
  cargo clippy -p gatehouse-core -p gatehouse-cli --all-targets --target "$target" -- -D warnings
  took "core and CLI clippy for $target"
done
echo "cross-check: check x86_64-apple-darwin"
cargo check -p gatehouse-core -p gatehouse-cli --all-targets --target x86_64-apple-darwin
took "core and CLI check for x86_64-apple-darwin"
# Measured 2026-12-04 on top of the above in the same target directory: 21 min wall on a
# 2-core machine shared by five builds (9 min of CPU) cold, under a minute warm.
GATEHOUSE_CROSS_TARGET_DIR="$CARGO_TARGET_DIR" bash scripts/cross-clippy-desktop.sh
took "desktop app and AppImage runtime clippy for Windows and macOS"
