#!/usr/bin/env bash
# Copies the README's screenshots from the last E2E run (target/e2e-screenshots,
# written by tests/e2e) into docs/screenshots, so they show the window as it is.
# Run after `bash scripts/test.sh` (or the E2E alone: the smoke, desk and admin
# scenarios take these shots).
set -euo pipefail
cd "$(dirname "$0")/.."
src=${CARGO_TARGET_DIR:-target}/e2e-screenshots
while read -r from to; do
  cp "$src/$from" "docs/screenshots/$to"
done <<'MAP'
e2e-keys-minted.png keys-config.png
e2e-desk-connection-tools.png connection-tools.png
e2e-desk-connection-tail.png connection-tail.png
e2e-desk-actor-preview.png actor-preview.png
e2e-site-config.png site-config.png
MAP
echo "docs/screenshots updated from $src"
