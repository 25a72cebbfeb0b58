#!/usr/bin/env bash
# Regenerates ui/src/generated/ipc-types.ts from the Rust types (ts-rs); the test
# `generated_ipc_types_are_current` fails in scripts/test.sh while it is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
GATEHOUSE_WRITE_IPC_TYPES=1 cargo test --workspace --lib generated_ipc_types_are_current
