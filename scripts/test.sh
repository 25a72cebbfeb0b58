#!/usr/bin/env bash
# The one test command (the README's, and what .ci/run calls): sets up, builds once,
# then runs formatting, lints, the UI checks and every test — on SQLite, then again
# on a private PostgreSQL cluster — and the desktop E2E in a real webview under Xvfb;
# last, it builds the .deb, the AppImage and the Windows MSI and tests them installed.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TERM_COLOR=never
# A run builds from scratch or after a change to every crate it tests, so incremental
# state buys little and took 8 of 52 GB (measured 2026-12-05); CI shares its disk.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
# Each step prints the time so far and the disk the run holds (target/) and has left.
step() {
  printf '\n==> [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"
  printf '    disk: target %s, free %s\n' "$(du -sh target 2>/dev/null | cut -f1)" \
    "$(df -h --output=avail . | tail -n 1 | tr -d ' ')"
}

step "setup"
bash scripts/setup.sh
# Real MCP SDK clients and servers from npm and PyPI, pinned.
bash scripts/interop-setup.sh
# The official MCP conformance suite (npm) and a Node.js >= 22 to run it.
bash scripts/conformance-setup.sh

step "cargo fmt --check"
cargo fmt --all --check

step "gatehouse-core has no shell dependencies"
if cargo tree -p gatehouse-core -e normal --prefix none | grep -E '^(tauri|clap)( |$)'; then
  echo "gatehouse-core must not depend on tauri or clap" >&2; exit 1
fi

step "build once: cargo test --workspace --no-run"
cargo test --workspace --no-run

step "clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "doc links resolve in core (a moved or renamed item breaks its doc links)"
# Core only: the CLI's doc comments are clap's help text, where `[limits]` is a TOML table.
RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links" cargo doc --no-deps -p gatehouse-core

step "cross clippy: core, CLI and the desktop app for Windows and macOS (scripts/cross-check.sh)"
bash scripts/cross-check.sh

step "generated IPC types are current (ui/src/generated/ipc-types.ts)"
# Fails when a Rust type that crosses IPC changed without `bash scripts/ipc-types.sh`.
# The same targets as the build step (`--lib` alone selects other features and
# recompiled the Tauri stack twice).
cargo test --workspace generated_ipc_types_are_current

step "UI type check and lint"
bash scripts/ui-check.sh

step "tests on SQLite (with the desktop E2E under Xvfb)"
xvfb-run -a cargo test --workspace -- --include-ignored

step "MCP conformance suite against gatehouse serve (scripts/conformance.sh)"
# Server scenarios for features Gatehouse offers must pass; the rest are listed
# with the feature each needs in tests/conformance/expected-failures.yml.
bash scripts/conformance.sh target/debug/gatehouse

step "the Windows build under Wine (scripts/wine-test.sh)"
# gatehouse.exe and core's tests built for x86_64-pc-windows-gnu, run under wine64.
bash scripts/wine-test.sh

step "tests on PostgreSQL"
bash scripts/pg.sh start
trap 'bash scripts/pg.sh stop' EXIT
bash scripts/pg.sh drop-test-dbs
# `--workspace`, as in the build step: selecting packages with `-p` unifies
# features differently and recompiled the whole dependency tree. The desktop E2E
# is `#[ignore]`d without `--include-ignored`, so it ran once, above.
GATEHOUSE_TEST_PG_URL="$(bash scripts/pg.sh url)" cargo test --workspace
# Kept when a test failed (set -e stops before this), for a look at its data.
bash scripts/pg.sh drop-test-dbs

# The debug build above, stripped and bundled into a .deb and an AppImage (the release
# build is scripts/package.sh's default), then installed with apt, used through
# /usr/bin, removed and purged.
step "packages: build (scripts/package.sh, from the debug build above)"
GATEHOUSE_PACKAGE_PROFILE=dev bash scripts/package.sh
step "packages: install, use, remove (scripts/package-test.sh)"
bash scripts/package-test.sh
# The Windows installer from a debug cross build: gatehouse.exe is the Wine step's (no
# rebuild), the desktop app is built here; the MSI's tables checked, then installed,
# used through PATH and uninstalled under Wine.
step "Windows installer: build (scripts/package-windows.sh, debug)"
GATEHOUSE_PACKAGE_PROFILE=dev bash scripts/package-windows.sh
step "Windows installer: install, use, uninstall under Wine (scripts/package-windows-test.sh)"
bash scripts/package-windows-test.sh
step "all checks passed"
