#!/usr/bin/env bash
# `cargo clippy --all-targets -D warnings` of the desktop app and the AppImage runtime for
# x86_64-pc-windows-gnu and aarch64-apple-darwin, from Linux (the Linux check is
# scripts/test.sh's own clippy step; core and the CLI are scripts/cross-check.sh's). The same
# target directory and C toolchains as scripts/cross-check.sh (scripts/cross-setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/cross-env.sh
export CARGO_TARGET_DIR="${GATEHOUSE_CROSS_TARGET_DIR:-$PWD/target/cross}"
[ -f ui/dist/index.html ] || bash scripts/ui-build.sh
for target in x86_64-pc-windows-gnu aarch64-apple-darwin; do
  echo "cross-clippy-desktop: clippy $target"
  cargo clippy --target "$target" -p gatehouse-desktop -p gatehouse-appimage-runtime --all-targets \
    -- -D warnings
done
