#!/usr/bin/env bash
# Installs the real MCP clients the tests drive (tests/mcp_clients.rs and
# tests/conformance/run.sh): the Python SDK, and from npm (pinned in
# package-lock.json) the Inspector CLI, the conformance suite and Node 22.
set -euo pipefail
cd "$(dirname "$0")"
# The Python SDK goes into a venv of its own (tests/mcp/.venv), so running
# the tests never changes the machine's Python.
if ! .venv/bin/python -c 'import importlib.metadata as m; assert m.version("mcp") == "2.3.0"' 2>/dev/null; then
  python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check mcp==2.3.0
fi
# `npm install` installs what package-lock.json pins (`npm ci` refuses this
# lock over an optional Windows-only dependency npm leaves out of it). Only
# node@22's install script runs (package.json's allowScripts): it links the
# platform's Node binary into node_modules/node/bin.
npm install --no-audit --no-fund --no-save --loglevel=error
test -x node_modules/node/bin/node
node_modules/node/bin/node --version
