#!/usr/bin/env bash
# Measures `gatehouse serve` over loopback HTTP (SQLite with a key and keyless,
# PostgreSQL with one and two instances) next to the TypeScript SDK, Python SDK
# and rmcp stateless Streamable HTTP echo servers, all driven by one load
# generator (crates/gatehouse-cli/benches/http.rs) at 1, 16 and 64 clients.
#
# Usage: BENCH_RUNS=3 BENCH_CALLS=5000 scripts/bench-http.sh
# The rmcp server (tests/interop/rmcp_echo_http) is built in release mode in
# its own target dir (RMCP_ECHO_TARGET, default target/rmcp-echo-http), apart
# from Gatehouse's dependency set. PostgreSQL: GATEHOUSE_TEST_PG_URL if set,
# else scripts/pg.sh start; the postmaster's pid (BENCH_PG_PID) lets the bench
# count PostgreSQL's CPU per call. BENCH_INSTANCE_CPU=0.25 caps each server
# process at a quarter of a core (a cgroup each, as root): a second instance
# then has CPU of its own. Respects CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d tests/interop/node_modules/@modelcontextprotocol/sdk ] || bash scripts/interop-setup.sh
export GATEHOUSE_TEST_PG_URL=${GATEHOUSE_TEST_PG_URL:-$(bash scripts/pg.sh start)}
pid_file=${GATEHOUSE_PG_DIR:-target/pg}/data/postmaster.pid
if [ -z "${BENCH_PG_PID:-}" ] && [ -r "$pid_file" ]; then
  export BENCH_PG_PID=$(head -n 1 "$pid_file")
fi
rmcp_target=${RMCP_ECHO_TARGET:-${CARGO_TARGET_DIR:-target}/rmcp-echo-http}
CARGO_TARGET_DIR="$rmcp_target" cargo build -q --release \
  --manifest-path tests/interop/rmcp_echo_http/Cargo.toml
# Absolute: cargo bench runs the bench in the package directory.
export BENCH_RMCP_ECHO="$(realpath "$rmcp_target")/release/rmcp-echo-http"
cargo bench -q -p gatehouse-cli --bench http
