// The TypeScript SDK peer of the HTTP benchmark (crates/gatehouse-cli/benches/http.rs):
// the official SDK (@modelcontextprotocol/sdk, pinned in package.json) serving
// Streamable HTTP statelessly as its documentation shows (a fresh McpServer and
// transport per request, no session id, JSON responses), with one `echo` tool.
//
// Usage: node echo_http_server.mjs PORT   (127.0.0.1:PORT/mcp; 0 picks a port)

import http from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

function build() {
  const server = new McpServer({ name: "gatehouse-bench-echo-http", version: "1.0.0" });
  server.registerTool(
    "echo",
    {
      description: "Returns the message it is given.",
      inputSchema: { message: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ message }) => ({ content: [{ type: "text", text: message }] }),
  );
  return server;
}

const listener = http.createServer(async (req, res) => {
  if (req.url !== "/mcp" || req.method !== "POST") {
    res.writeHead(405, { Allow: "POST" }).end();
    return;
  }
  const chunks = [];
  for await (const c of req) chunks.push(c);
  let body;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    res.writeHead(400).end();
    return;
  }
  const server = build();
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  res.on("close", () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
});
listener.keepAliveTimeout = 60_000;
listener.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => {
  console.error(`echo_http_server: listening on http://127.0.0.1:${listener.address().port}/mcp`);
});
