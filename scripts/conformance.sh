#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios against
# `gatehouse serve` on a fresh scratch site. The scenarios for features Gatehouse
# does not offer are listed, each with the feature, in
# tests/conformance/expected-failures.yml; any other failure fails this script.
# Usage: scripts/conformance.sh [GATEHOUSE_BIN]   (default: target/debug/gatehouse)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-target/debug/gatehouse}")
dir=tests/conformance
node=$(bash scripts/conformance-setup.sh --node)
tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
export GATEHOUSE_CONFIG_DIR="$tmp/config"
"$bin" site init "$tmp/site" --scratch >/dev/null
"$bin" --site "$tmp/site" serve --listen 127.0.0.1:0 2>"$tmp/serve.log" &
pid=$!
url=""
for _ in $(seq 300); do
  url=$(sed -n 's/^gatehouse serve: listening on //p' "$tmp/serve.log")
  [ -n "$url" ] && break
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "gatehouse serve did not start:" >&2; cat "$tmp/serve.log" >&2; exit 1
fi
"$node" "$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js" server \
  --url "$url" --expected-failures "$dir/expected-failures.yml" -o "$tmp/results"
