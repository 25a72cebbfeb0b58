#!/usr/bin/env bash
# Measures four MCP clients against one server, the TypeScript SDK echo server
# (tests/interop/echo_server.mjs):
#   raw       bench.rs's hand-written pipe driver (the baseline)
#   gatehouse bench.rs `client`: gatehouse_core::client::Connection (sandboxed)
#   rmcp      bench.rs `rmcp`: the official Rust SDK's client
#   ts-sdk    tests/interop/bench_client.mjs: the official TypeScript SDK's client
# Each mode runs BENCH_RUNS times (default 3), interleaved so background noise
# spreads over all of them; every JSON line is printed, then a table of
# per-key medians with calls/s as a ratio to raw.
#
# Usage: scripts/bench-client.sh [bench flags, e.g. --calls 2000 --conc 8]
# Flags given here override the defaults (--calls 10000 --conc 16 --cold 5).
# Respects CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
runs=${BENCH_RUNS:-3}
flags=(--calls 10000 --conc 16 --cold 5 "$@")

# The same build as scripts/bench-server.sh (and `cargo bench`): the bench
# profile (release with symbols for perf), one set of dependencies.
cargo build --profile bench -q -p gatehouse-cli -p gatehouse-core --bins --benches --examples
target=$(cargo metadata --format-version 1 --no-deps | node -e \
  'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).target_directory))')
bench="$target/release/examples/bench"

interop="$root/tests/interop"
[ -d "$interop/node_modules/@modelcontextprotocol/sdk" ] || bash scripts/interop-setup.sh
# Every client passes the server a different environment (gatehouse: PATH only,
# the TS SDK: HOME/PATH/USER…, raw and rmcp: all of ours), and node's start-up
# depends on it (NODE_EXTRA_CA_CERTS alone costs tens of ms), so the server always
# starts with PATH only, whichever client spawns it.
server=("$(command -v env)" -i "PATH=$PATH" node "$interop/echo_server.mjs")

lines=$(mktemp)
trap 'rm -f "$lines"' EXIT
for run in $(seq "$runs"); do
  for mode in raw client rmcp ts-sdk; do
    if [ "$mode" = ts-sdk ]; then
      line=$(node "$interop/bench_client.mjs" "${flags[@]}" -- "${server[@]}")
    else
      line=$("$bench" "$mode" "${flags[@]}" -- "${server[@]}")
    fi
    echo "run $run: $line"
    echo "$line" >>"$lines"
  done
done

node - "$lines" <<'JS'
const rows = require("fs").readFileSync(process.argv[2], "utf8").trim().split("\n").map(JSON.parse);
const sorted = (xs) => xs.filter((x) => typeof x === "number").sort((a, b) => a - b);
const median = (xs) => sorted(xs)[Math.floor(sorted(xs).length / 2)];
const modes = ["raw", "client", "rmcp", "ts-sdk"];
const of = (mode, k) => rows.filter((r) => r.mode === mode).map((r) => r[k]);
const med = (mode, k) => median(of(mode, k));
// The spread says how far to trust a median on a noisy machine.
const spread = (mode, k) => { const s = sorted(of(mode, k)); return `${s[0]}-${s[s.length - 1]}`; };
const ratio = (mode, k) => (med(mode, k) / med("raw", k)).toFixed(2) + "x";
const head = ["client", "seq calls/s (min-max)", "seq vs raw", "seq p50/p99 us", `conc ${rows[0].conc} calls/s (min-max)`,
  "conc vs raw", "conc p50/p99 us", "client CPU us/call seq/conc", "cold start ms", "peak RSS MiB"];
console.log(`\nmedians of ${rows.length / modes.length} run(s) per client, each key on its own:`);
console.log(`| ${head.join(" | ")} |\n|${head.map(() => "---").join("|")}|`);
for (const mode of modes) {
  const m = (k) => med(mode, k);
  console.log(`| ${[mode === "client" ? "gatehouse" : mode,
    `${m("seq_calls_per_s")} (${spread(mode, "seq_calls_per_s")})`, ratio(mode, "seq_calls_per_s"), `${m("seq_p50_us")}/${m("seq_p99_us")}`,
    `${m("conc_calls_per_s")} (${spread(mode, "conc_calls_per_s")})`, ratio(mode, "conc_calls_per_s"), `${m("conc_p50_us")}/${m("conc_p99_us")}`,
    `${m("seq_cpu_us_per_call")}/${m("conc_cpu_us_per_call")}`, m("cold_start_ms"), m("peak_rss_mib")].join(" | ")} |`);
}
JS
