#!/usr/bin/env bash
# Builds ui/dist, which every default-feature cargo build embeds (run it first).
# Installs ui/node_modules with `npm ci` only when it is missing or
# ui/package-lock.json changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/../ui"

stamp=node_modules/.gatehouse-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [[ ! -d node_modules || ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  npm ci --no-audit --no-fund
  echo "$want" >"$stamp"
fi

npm run build
