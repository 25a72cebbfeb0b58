#!/usr/bin/env bash
# Measures `gatehouse mcp` (SQLite and PostgreSQL; content_read and
# content_write_draft) next to the TypeScript SDK, stdlib Python and Rust echo
# servers, all through one raw pipe driver (crates/gatehouse-cli/benches/mcp.rs),
# then the sqlx `Any` layer against the concrete drivers (benches/sqlx_any.rs).
#
# Usage: BENCH_RUNS=5 BENCH_CALLS=10000 scripts/bench-server.sh [mcp|sqlx_any]
# PostgreSQL: GATEHOUSE_TEST_PG_URL if set, else scripts/pg.sh start (its
# port from GATEHOUSE_PG_PORT). Respects CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d tests/interop/node_modules/@modelcontextprotocol/sdk ] || bash scripts/interop-setup.sh
export GATEHOUSE_TEST_PG_URL=${GATEHOUSE_TEST_PG_URL:-$(bash scripts/pg.sh start)}
for bench in ${1:-mcp sqlx_any}; do
  # The same build as scripts/bench-client.sh: the bench profile, one dependency set.
  cargo bench -q -p gatehouse-cli -p gatehouse-core --bench "$bench"
done
