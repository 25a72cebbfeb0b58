#!/usr/bin/env bash
# Installs the real MCP SDK clients and servers the interop tests drive, at
# pinned versions:
#   - the official Python SDK (`mcp` on PyPI) into tests/interop/.venv
#   - the official TypeScript SDK (@modelcontextprotocol/sdk) and the reference
#     server @modelcontextprotocol/server-everything into
#     tests/interop/node_modules, exactly as package-lock.json says
# Idempotent: each step is skipped when the pinned version is already there.
# crates/gatehouse-cli/tests/it/mcp_interop.rs and
# crates/gatehouse-core/tests/it/client_interop.rs use them (and fail under CI=true
# if they are missing, rather than skipping).
set -euo pipefail
cd "$(dirname "$0")/.."

PY_MCP_VERSION=2.3.0
dir=tests/interop

if [ ! -x "$dir/.venv/bin/python" ]; then
  echo "interop-setup: creating $dir/.venv"
  python3 -m venv "$dir/.venv"
fi
if ! "$dir/.venv/bin/python" - "$PY_MCP_VERSION" <<'PY' 2>/dev/null; then
import importlib.metadata, sys
sys.exit(importlib.metadata.version("mcp") != sys.argv[1])
PY
  echo "interop-setup: installing mcp==$PY_MCP_VERSION (Python SDK)"
  "$dir/.venv/bin/pip" install -q --disable-pip-version-check "mcp==$PY_MCP_VERSION"
fi

# Every pinned npm package must be installed at its pinned version, else `npm ci`.
node_ok=$(node -p '
  const deps = require("./tests/interop/package.json").dependencies;
  Object.entries(deps).every(([name, want]) => {
    try { return require(`./tests/interop/node_modules/${name}/package.json`).version === want; }
    catch { return false; }
  })')
if [ "$node_ok" != "true" ]; then
  echo "interop-setup: installing $dir/package.json's pinned packages (TypeScript SDK, server-everything)"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
