#!/usr/bin/env bash
# Regenerates ui/src/generated/ipc-types.ts from the Rust types (ts-rs); the snapshot
# test `generated_ipc_types_are_current` (expect-test) fails in scripts/test.sh while it
# is stale, and rewrites the file under UPDATE_EXPECT=1.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
UPDATE_EXPECT=1 cargo test --workspace generated_ipc_types_are_current
