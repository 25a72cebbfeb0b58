// Drive `gatehouse mcp` with the official TypeScript SDK (@modelcontextprotocol/sdk,
// pinned in package.json / package-lock.json). This SDK line speaks the handshake
// revisions (initialize negotiates 2025-11-25).
//
// Usage: node ts_client.mjs GATEHOUSE_BIN SITE_DIR
// Keys come from the environment, never argv: INTEROP_VIEWER_KEY, INTEROP_REVOKE_KEY
// and INTEROP_REVOKE_ID (revoked by this script mid-session). Prints one line per
// check and exits non-zero on the first failure.

import { execFileSync } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [BIN, SITE] = process.argv.slice(2);
const PUBLIC = ["content_list", "content_read", "content_search"];
const VIEWER = [...PUBLIC, "media_list", "media_read", "http_fetch"];
const AUTHOR = [...VIEWER, "content_write_draft", "media_write"];

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

async function connect(actorArgs, key) {
  const env = { ...getDefaultEnvironment(), GATEHOUSE_LOG: "warn" };
  if (key) env.GATEHOUSE_API_KEY = key;
  const transport = new StdioClientTransport({ command: BIN, args: ["--site", SITE, "mcp", ...actorArgs], env, stderr: "inherit" });
  const client = new Client({ name: "gatehouse-interop-ts", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

const names = async (c) => (await c.listTools()).tools.map((t) => t.name);

async function main() {
  let c = await connect([]);
  check(c.getServerVersion()?.name === "gatehouse", "public: initialize answered by gatehouse");
  check(same(await names(c), PUBLIC), "public sees only published-content reads");
  let r = await c.callTool({ name: "content_read", arguments: { slug: "welcome" } });
  check(!r.isError && r.structuredContent.slug === "welcome", "public reads a published entry");
  check(errorCode(await c.callTool({ name: "site_config_read", arguments: {} })) === "PERMISSION_DENIED", "public site_config_read refused");
  await c.close();

  c = await connect(["--role", "viewer"]);
  check(same(await names(c), VIEWER), "synthetic viewer manifest");
  r = await c.callTool({ name: "content_publish", arguments: { slug: "roadmap-draft" } });
  check(errorCode(r) === "PERMISSION_DENIED", "viewer content_publish refused by the permission layer");
  await c.close();

  c = await connect([], process.env.INTEROP_VIEWER_KEY);
  check(same(await names(c), VIEWER), "API key (viewer) manifest");
  r = await c.callTool({ name: "site_config_read", arguments: {} });
  check(errorCode(r) === "PERMISSION_DENIED", "viewer key may not read site config (editors and admins only)");
  await c.close();

  // A role change while the server runs: the next call sees it, and list_changed arrives.
  execFileSync(BIN, ["--site", SITE, "users", "create", "--email", "ts-author@example.com", "--roles", "author"]);
  c = await connect(["--email", "ts-author@example.com"]);
  check(same(await names(c), AUTHOR), "user author manifest");
  const changed = new Promise((resolve) => c.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve(true)));
  execFileSync(BIN, ["--site", SITE, "users", "update", "--email", "ts-author@example.com", "--roles", "editor"]);
  r = await c.callTool({ name: "content_publish", arguments: { slug: "roadmap-draft" } });
  check(!r.isError && r.structuredContent.status === "published", "promoted to editor mid-session: publish allowed on the next call");
  check(await changed, "notifications/tools/list_changed received");
  check((await names(c)).includes("content_publish"), "the new manifest lists content_publish");
  await c.close();

  c = await connect([], process.env.INTEROP_REVOKE_KEY);
  r = await c.callTool({ name: "content_list", arguments: {} });
  check(!r.isError, "key works before revocation");
  execFileSync(BIN, ["--site", SITE, "keys", "revoke", process.env.INTEROP_REVOKE_ID]);
  r = await c.callTool({ name: "content_list", arguments: {} });
  check(errorCode(r) === "ACTOR_API_KEY_INVALID", "key revoked mid-session is refused on the next call");
  await c.close();

  console.log("typescript interop: all checks passed");
}

main().catch((e) => {
  console.log(`FAIL ${e.stack || e}`);
  process.exit(1);
});
