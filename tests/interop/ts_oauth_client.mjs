// Connect to `gatehouse serve --public-url` with the official TypeScript SDK's
// OAuth support (@modelcontextprotocol/sdk, pinned in package.json), headless:
// discovery from the 401, dynamic registration, authorize with PKCE, the
// consent form submitted as a browser would (the key pasted), finishAuth,
// calls as the key's actor, a refresh after a 401, and the grant revoked
// through the CLI.
//
// With INTEROP_OAUTH_DOC_PORT, _CERT and _KEY set, the client identifies
// itself by a client ID metadata document instead of registering: this
// script serves the document over HTTPS on 127.0.0.1 at that port (the SDK
// takes only an https URL) with that certificate, and the SDK's
// clientMetadataUrl names it.
//
// Usage: node ts_oauth_client.mjs GATEHOUSE_BIN SITE_DIR URL
// The key to paste comes from the environment (INTEROP_OAUTH_KEY, an editor
// key), never argv. Prints one line per check and exits non-zero on the first failure.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:https";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const [BIN, SITE, URL_TEXT] = process.argv.slice(2);
const BASE = URL_TEXT.replace(/\/mcp$/, "");
const KEY = process.env.INTEROP_OAUTH_KEY;
const REDIRECT = "http://127.0.0.1:9/ts-callback";
const EDITOR = ["content_list", "content_read", "content_search", "media_list", "media_read", "http_fetch",
  "content_write_draft", "media_write", "content_publish", "site_config_read"];

function check(cond, what) {
  if (!cond) {
    console.log(`FAIL ${what}`);
    process.exit(1);
  }
  console.log(`ok   ${what}`);
}

const same = (a, b) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());

// What the person's browser does: open the consent page, paste the key, allow.
async function browser(url) {
  check(url.searchParams.get("code_challenge_method") === "S256", "the SDK asks with PKCE S256");
  check(url.searchParams.get("resource") === URL_TEXT, "the SDK names this server as the resource");
  const page = await fetch(url, { redirect: "manual" });
  check(page.status === 200, "the consent page renders");
  const html = await page.text();
  const cookie = page.headers.get("set-cookie").split(";")[0];
  const field = (name) => html.match(new RegExp(`name="${name}" value="([^"]+)"`))[1];
  const form = new URLSearchParams({ request: field("request"), csrf: field("csrf"), api_key: KEY, decision: "approve" });
  const answer = await fetch(`${BASE}/authorize`, {
    method: "POST",
    redirect: "manual",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: cookie, Origin: BASE },
    body: form,
  });
  check(answer.status === 303, `the consent form redirects back (${answer.status})`);
  const back = new URL(answer.headers.get("location"));
  check(back.searchParams.get("iss") === BASE, "the answer carries iss (RFC 9207)");
  return back.searchParams.get("code");
}

const METADATA = {
  client_name: "TypeScript SDK interop",
  redirect_uris: [REDIRECT],
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  token_endpoint_auth_method: "none",
};

// The metadata document, served over HTTPS when asked for; counts fetches.
const DOC_PORT = process.env.INTEROP_OAUTH_DOC_PORT;
const DOC_URL = DOC_PORT ? `https://127.0.0.1:${DOC_PORT}/client.json` : undefined;
let docFetches = 0;
let docServer;
if (DOC_URL) {
  docServer = createServer(
    { cert: readFileSync(process.env.INTEROP_OAUTH_DOC_CERT), key: readFileSync(process.env.INTEROP_OAUTH_DOC_KEY) },
    (req, res) => {
      docFetches += 1;
      if (req.url !== "/client.json") {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ client_id: DOC_URL, ...METADATA }));
    },
  );
  await new Promise((resolve) => docServer.listen(Number(DOC_PORT), "127.0.0.1", resolve));
}

class Provider {
  constructor() {
    this.consents = 0;
  }
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata() {
    return METADATA;
  }
  get clientMetadataUrl() {
    return DOC_URL;
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
  }
  saveCodeVerifier(v) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
  async redirectToAuthorization(url) {
    this.consents += 1;
    this.code = await browser(url);
  }
}

async function connect(provider) {
  const transport = new StreamableHTTPClientTransport(new URL(URL_TEXT), { authProvider: provider });
  const client = new Client({ name: "gatehouse-interop-ts-oauth", version: "1.0.0" });
  await client.connect(transport);
  return [client, transport];
}

const provider = new Provider();
let first = new StreamableHTTPClientTransport(new URL(URL_TEXT), { authProvider: provider });
try {
  await new Client({ name: "gatehouse-interop-ts-oauth", version: "1.0.0" }).connect(first);
  check(false, "the first connection is refused until authorized");
} catch (e) {
  check(e instanceof UnauthorizedError, "the first connection asks for authorization");
}
await first.finishAuth(provider.code);
if (DOC_URL) {
  check(provider.client?.client_id === DOC_URL, "identified by its metadata document, not registered");
  check(docFetches === 1, `the server fetched the document once (${docFetches})`);
} else {
  check(provider.client?.client_id?.startsWith("gh_"), "registered dynamically");
}
{
  const [client] = await connect(provider);
  const tools = (await client.listTools()).tools.map((t) => t.name);
  check(same(tools, EDITOR), "the token sees the editor key's tools");
  const r = await client.callTool({ name: "content_write_draft", arguments: { slug: "ts-oauth", title: "Via OAuth", body: "from TS" } });
  check(!r.isError, "a write as the key's actor");
  await client.close();
}

// The access token stops working: the SDK refreshes on the 401, no second consent.
const before = provider.saved.refresh_token;
provider.saved = { ...provider.saved, access_token: "gatehouse_at_" + "A".repeat(43) };
{
  const [client] = await connect(provider);
  const r = await client.callTool({ name: "content_read", arguments: { slug: "ts-oauth" } });
  check(!r.isError, "a call after the refresh");
  await client.close();
}
check(provider.consents === 1, "the refresh needed no consent");
check(provider.saved.refresh_token !== before, "the refresh token rotated");

// The admin revokes the grant: the token is refused at once.
const grants = JSON.parse(execFileSync(BIN, ["--site", SITE, "oauth", "grants", "--json"], { encoding: "utf8" }));
const live = grants.filter((g) => g.revoked_at === null && g.client_name === "TypeScript SDK interop");
check(live.length === 1, "the grant is listed for the admin");
execFileSync(BIN, ["--site", SITE, "oauth", "revoke", live[0].id]);
const refused = await fetch(URL_TEXT, {
  method: "POST",
  headers: {
    Authorization: `Bearer ${provider.saved.access_token}`,
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-06-18",
  },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
});
check(
  refused.status === 401 && (refused.headers.get("www-authenticate") || "").includes("invalid_token"),
  `the revoked grant's token is refused (${refused.status}, ${refused.headers.get("www-authenticate")}, ${(await refused.text()).slice(0, 200)})`,
);
if (DOC_URL) {
  check(docFetches === 1, `the document was fetched once for the whole flow, refresh included (${docFetches})`);
  docServer.closeAllConnections();
  docServer.close();
}
