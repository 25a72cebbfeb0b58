#!/usr/bin/env bash
# Type-checks, lints and unit-tests (Vitest) the UI (needs ui/node_modules: run ui-build.sh first).
set -euo pipefail
cd "$(dirname "$0")/../ui"
npm run check
npm run lint
npm test
