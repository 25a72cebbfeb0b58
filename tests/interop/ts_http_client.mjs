// Drive `gatehouse serve` (Streamable HTTP) with the official TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in package.json): its default handshake over
// a stateless server (initialize per request, no session id).
//
// Usage: node ts_http_client.mjs GATEHOUSE_BIN SITE_DIR URL
// Keys come from the environment, never argv: INTEROP_VIEWER_KEY, INTEROP_EDITOR_KEY,
// INTEROP_REVOKE_KEY and INTEROP_REVOKE_ID (revoked by this script while connected).
// Prints one line per check and exits non-zero on the first failure.

import { execFileSync } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [BIN, SITE, URL_TEXT] = process.argv.slice(2);
const PUBLIC = ["content_list", "content_read", "content_search"];
const VIEWER = [...PUBLIC, "media_list", "media_read", "http_fetch"];
const EDITOR = [...VIEWER, "content_write_draft", "media_write", "content_publish", "site_config_read"];

function check(cond, what) {
  if (!cond) {
    console.log(`FAIL ${what}`);
    process.exit(1);
  }
  console.log(`ok   ${what}`);
}

const same = (a, b) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());

function errorCode(result) {
  if (!result.isError) throw new Error(`expected a tool error: ${JSON.stringify(result)}`);
  return JSON.parse(result.content[0].text).error.code;
}

async function connect(key) {
  const headers = key ? { Authorization: `Bearer ${key}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(URL_TEXT), { requestInit: { headers } });
  const client = new Client({ name: "gatehouse-interop-ts-http", version: "1.0.0" });
  await client.connect(transport);
  return [client, transport];
}

const names = async (c) => (await c.listTools()).tools.map((t) => t.name);

async function main() {
  let [c, t] = await connect();
  check(c.getServerVersion()?.name === "gatehouse", "public: initialize answered by gatehouse");
  check(t.sessionId === undefined, "no session id was minted");
  check(same(await names(c), PUBLIC), "public sees only published-content reads");
  let r = await c.callTool({ name: "content_read", arguments: { slug: "welcome" } });
  check(!r.isError && r.structuredContent.slug === "welcome", "public reads a published entry");
  await c.close();

  [c] = await connect(process.env.INTEROP_VIEWER_KEY);
  check(same(await names(c), VIEWER), "viewer key manifest");
  r = await c.callTool({ name: "content_publish", arguments: { slug: "roadmap-draft" } });
  check(errorCode(r) === "PERMISSION_DENIED", "viewer content_publish refused by the permission layer");
  await c.close();

  [c] = await connect(process.env.INTEROP_EDITOR_KEY);
  check(same(await names(c), EDITOR), "editor key manifest: the gate differs from public's");
  r = await c.callTool({ name: "content_write_draft", arguments: { slug: "ts-http", title: "TS over HTTP", body: "written by the ts sdk" } });
  check(!r.isError && r.structuredContent.status === "draft", "editor writes a draft");
  r = await c.callTool({ name: "content_publish", arguments: { slug: "ts-http" } });
  check(!r.isError && r.structuredContent.status === "published", "editor publishes");
  await c.close();

  [c] = await connect(process.env.INTEROP_REVOKE_KEY);
  r = await c.callTool({ name: "content_list", arguments: {} });
  check(!r.isError, "key works before revocation");
  execFileSync(BIN, ["--site", SITE, "keys", "revoke", process.env.INTEROP_REVOKE_ID]);
  let refused = false;
  try {
    r = await c.callTool({ name: "content_list", arguments: {} });
    refused = r.isError;
  } catch (e) {
    refused = /401|revoked|Unauthorized/i.test(String(e));
    if (!refused) console.log(`     unexpected error: ${e}`);
  }
  check(refused, "revoked key refused on its next request");
  await c.close().catch(() => {});
}

main().catch((e) => {
  console.log(`FAIL ${e?.stack ?? e}`);
  process.exit(1);
});
