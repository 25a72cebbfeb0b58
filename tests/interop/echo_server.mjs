// The server every client in scripts/bench-client.sh is measured against: the
// official TypeScript SDK (@modelcontextprotocol/sdk, pinned in package.json) with
// one tool, `echo`, so the figures compare clients and not servers.
//
// Usage: node echo_server.mjs   (stdio; no flags)

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
// zod is the SDK's own (peer) dependency, installed with it by package-lock.json.
import { z } from "zod";

const server = new McpServer({ name: "gatehouse-bench-echo", version: "1.0.0" });

server.registerTool(
  "echo",
  {
    description: "Returns the message it is given.",
    inputSchema: { message: z.string() },
    annotations: { readOnlyHint: true },
  },
  async ({ message }) => ({ content: [{ type: "text", text: message }] }),
);

await server.connect(new StdioServerTransport());
