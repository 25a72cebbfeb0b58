// The official TypeScript SDK client (@modelcontextprotocol/sdk, pinned in
// package.json) running the same benchmark as crates/gatehouse-core/examples/bench.rs,
// so scripts/bench-client.sh can compare the two on one server. Prints one JSON line
// with bench.rs's keys and "mode":"ts-sdk".
//
// Usage: node bench_client.mjs [--calls 10000] [--conc 16] [--cold 5] [--tool echo]
//                              [--args '{"message":"hello"}'] -- CMD ARGS…

import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

function parse(argv) {
  const a = { calls: 10000, conc: 16, cold: 5, tool: "echo", args: { message: "hello" }, cmd: [] };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => argv[++i];
    if (flag === "--calls") a.calls = Number(value());
    else if (flag === "--conc") a.conc = Number(value());
    else if (flag === "--cold") a.cold = Number(value());
    else if (flag === "--tool") a.tool = value();
    else if (flag === "--args") a.args = JSON.parse(value());
    else if (flag === "--") {
      a.cmd = argv.slice(i + 1);
      break;
    } else throw new Error(`unknown flag ${flag}`);
  }
  if (a.cmd.length === 0) throw new Error("usage: bench_client.mjs [flags] -- CMD ARGS…");
  return a;
}

// Same definitions as bench.rs's `pct`, `summary` and `peak_rss_mib`, so the keys compare.
const pct = (sorted, p) => (sorted.length ? sorted[Math.round((sorted.length - 1) * p)] : 0);

// cpu: process.cpuUsage(since), user + system microseconds of this process.
function summary(prefix, lat, wallNs, cpu, out) {
  out[`${prefix}_cpu_us_per_call`] = Math.round(((cpu.user + cpu.system) / Math.max(lat.length, 1)) * 10) / 10;
  lat.sort((x, y) => x - y);
  out[`${prefix}_calls_per_s`] = Math.round(lat.length / (Number(wallNs) / 1e9));
  out[`${prefix}_p50_us`] = pct(lat, 0.5);
  out[`${prefix}_p99_us`] = pct(lat, 0.99);
}

function peakRssMib() {
  const line = readFileSync("/proc/self/status", "utf8").split("\n").find((l) => l.startsWith("VmHWM:"));
  return line ? Math.round((Number(line.split(/\s+/)[1]) / 1024) * 10) / 10 : 0;
}

async function connect(cmd) {
  // stderr ignored, as bench.rs's raw driver does.
  const transport = new StdioClientTransport({ command: cmd[0], args: cmd.slice(1), stderr: "ignore" });
  const client = new Client({ name: "gatehouse-bench-ts", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

const now = () => process.hrtime.bigint();
const micros = (since) => Number((now() - since) / 1000n);

async function call(client, a) {
  const r = await client.callTool({ name: a.tool, arguments: a.args });
  if (r.isError) throw new Error(`call failed: ${JSON.stringify(r)}`);
}

async function main() {
  const a = parse(process.argv.slice(2));
  const out = { mode: "ts-sdk" };

  const cold = [];
  for (let i = 0; i < a.cold; i++) {
    const t = now();
    const c = await connect(a.cmd);
    cold.push(Number(now() - t) / 1e6);
    await c.close();
  }
  cold.sort((x, y) => x - y);
  out.cold_start_ms = cold.length ? Math.round(cold[Math.floor(cold.length / 2)] * 10) / 10 : null;

  const client = await connect(a.cmd);
  for (let i = 0; i < 100; i++) await call(client, a); // warm-up

  let lat = [];
  let t = now();
  let cpu = process.cpuUsage();
  for (let i = 0; i < a.calls; i++) {
    const c = now();
    await call(client, a);
    lat.push(micros(c));
  }
  summary("seq", lat, now() - t, process.cpuUsage(cpu), out);

  const per = Math.floor(a.calls / Math.max(a.conc, 1));
  t = now();
  cpu = process.cpuUsage();
  const workers = Array.from({ length: a.conc }, async () => {
    const mine = [];
    for (let i = 0; i < per; i++) {
      const c = now();
      await call(client, a);
      mine.push(micros(c));
    }
    return mine;
  });
  lat = (await Promise.all(workers)).flat();
  summary("conc", lat, now() - t, process.cpuUsage(cpu), out);
  out.conc = a.conc;

  await client.close();
  out.peak_rss_mib = peakRssMib();
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
