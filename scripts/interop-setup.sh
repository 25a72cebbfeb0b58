#!/usr/bin/env bash
# Installs the real MCP SDK clients the interop tests drive, at pinned versions:
#   - the official Python SDK (`mcp` on PyPI) into tests/interop/.venv
#   - the official TypeScript SDK (@modelcontextprotocol/sdk) into
#     tests/interop/node_modules, exactly as package-lock.json says
# Idempotent: each step is skipped when the pinned version is already there.
# crates/gatehouse-cli/tests/mcp_interop.rs uses them (and fails under CI=true
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

ts_version=$(node -p 'require("./tests/interop/package.json").dependencies["@modelcontextprotocol/sdk"]')
installed=$(node -p 'try { require("./tests/interop/node_modules/@modelcontextprotocol/sdk/package.json").version } catch { "" }')
if [ "$installed" != "$ts_version" ]; then
  echo "interop-setup: installing @modelcontextprotocol/sdk@$ts_version (TypeScript SDK)"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
