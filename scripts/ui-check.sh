#!/usr/bin/env bash
# Type-checks and lints the UI (needs ui/node_modules: run ui-build.sh first).
set -euo pipefail
cd "$(dirname "$0")/../ui"
npm run check
npm run lint
