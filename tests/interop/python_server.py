"""A tiny MCP server on the official Python SDK (`mcp` on PyPI, pinned in
scripts/interop-setup.sh), driven by Gatehouse's client in
crates/gatehouse-core/tests/client_interop.rs.

Tools: `echo` (read-only: returns its message) and `add` (sums two integers).
It writes one known line to stderr at start-up and one per `add`, so the test
can check the client's stderr byte counts against what was really written.

Usage: python_server.py   (stdio transport; no arguments)
"""

import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

STARTUP_LINE = "python_server: ready\n"

server = MCPServer(name="gatehouse-interop-python", version="0.1.0")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(message: str) -> str:
    """Return the message unchanged."""
    return message


@server.tool(annotations=ToolAnnotations(readOnlyHint=False))
def add(a: int, b: int) -> int:
    """Add two integers (and say so on stderr)."""
    sys.stderr.write(f"python_server: add {a} {b}\n")
    sys.stderr.flush()
    return a + b


if __name__ == "__main__":
    sys.stderr.write(STARTUP_LINE)
    sys.stderr.flush()
    server.run("stdio")
