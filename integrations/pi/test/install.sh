#!/usr/bin/env bash
# Installs the real Pi 1.6 the Pi extension's tests drive offline
# (integrations/pi/test/, run by tests/pi_extension.rs): the pinned
# @earendil-works/pi-coding-agent and pi-ai 1.6.0 from package-lock.json.
# They run on the Node 22 that tests/mcp/install.sh installs (Pi 1.6 needs
# Node >= 22.19), which this script runs first. Idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/../../../tests/mcp/install.sh" >/dev/null
cd "$here"
want=1.6.0
have=$(node -p 'require("./node_modules/@earendil-works/pi-coding-agent/package.json").version' 2>/dev/null || true)
if [ "$have" != "$want" ] || [ ! -d node_modules/@earendil-works/pi-ai ]; then
  # The system npm installs what the lock pins; its EBADENGINE warnings
  # (Pi wants Node 22, npm may run on 20) are harmless: the tests run on 22.
  npm ci --no-audit --no-fund --loglevel=error
fi
test -f node_modules/@earendil-works/pi-coding-agent/package.json
"$here/../../../tests/mcp/node_modules/node/bin/node" --version
