#!/usr/bin/env bash
# Installs the real upstream MCP servers tests/upstream.rs fronts, pinned in
# package.json: @modelcontextprotocol/server-everything and
# @modelcontextprotocol/server-filesystem (into tests/upstream/node_modules).
# They run on Node 22, which tests/mcp/install.sh provides. Idempotent.
set -euo pipefail
cd "$(dirname "$0")"
bash ../mcp/install.sh >/dev/null
export PATH="$PWD/../mcp/node_modules/node/bin:$PATH"
if [ ! -x node_modules/.bin/mcp-server-everything ] || [ ! -x node_modules/.bin/mcp-server-filesystem ]; then
  npm install --no-audit --no-fund --loglevel=error --ignore-scripts
fi
test -x node_modules/.bin/mcp-server-everything
test -x node_modules/.bin/mcp-server-filesystem
