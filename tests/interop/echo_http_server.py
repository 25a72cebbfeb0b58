"""The Python SDK peer of the HTTP benchmark (crates/gatehouse-cli/benches/http.rs):
the official SDK (`mcp` on PyPI, pinned in scripts/interop-setup.sh) serving
Streamable HTTP statelessly with JSON responses under uvicorn, one `echo` tool.

Usage: echo_http_server.py PORT   (127.0.0.1:PORT/mcp)
"""

import sys

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer(name="gatehouse-bench-echo-http", version="0.1.0")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(message: str) -> str:
    """Returns the message it is given."""
    return message


if __name__ == "__main__":
    port = int(sys.argv[1])
    app = server.streamable_http_app(stateless_http=True, json_response=True)
    sys.stderr.write(f"echo_http_server.py: listening on http://127.0.0.1:{port}/mcp\n")
    sys.stderr.flush()
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
