"""A stdlib-only MCP echo server (no SDK), the floor the server bench compares
`gatehouse mcp` with: one `echo` tool, newline-delimited JSON-RPC on stdio,
answers `initialize` and `tools/call` and ignores notifications.

Usage: python3 stdlib_echo_server.py
"""

import json
import sys


def main():
    out = sys.stdout
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        method = msg.get("method")
        if method == "initialize":
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "stdlib-echo", "version": "1"},
            }
        elif method == "tools/call":
            text = msg["params"].get("arguments", {}).get("message", "")
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                                  "error": {"code": -32601, "message": "Method not found"}}) + "\n")
            out.flush()
            continue
        out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
        out.flush()


main()
