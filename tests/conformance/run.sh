#!/usr/bin/env bash
# Runs the official MCP conformance suite (every scenario, pending ones too)
# over Streamable HTTP against `toolgate serve` with the fixture
# configuration in this folder, and fails on anything not in baseline.yml.
#
#   bash tests/conformance/run.sh [TOOLGATE_BINARY]   (default: target/release/toolgate)
#
# Needs `bash tests/mcp/install.sh` first (Node 22 and the suite from npm).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${1:-${CARGO_TARGET_DIR:-$repo/target}/release/toolgate}"
mcp="$repo/tests/mcp"
if [ ! -x "$mcp/node_modules/node/bin/node" ] || [ ! -e "$mcp/node_modules/.bin/conformance" ]; then
  echo "conformance: the suite is not installed; run: bash tests/mcp/install.sh" >&2
  exit 1
fi
export PATH="$mcp/node_modules/node/bin:$PATH"

log="$(mktemp)"
"$bin" serve --http 127.0.0.1:0 --no-watch \
  --workspace "$here" \
  --policies "$here/policies" --manifests "$here/tool-manifests" \
  --decision-log /dev/null 2>"$log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -f "$log"' EXIT

url=""
for _ in $(seq 1 100); do
  url="$(sed -n 's/^toolgate: serving MCP on \(http:[^ ]*\).*/\1/p' "$log" | head -1)"
  [ -n "$url" ] && break
  if ! kill -0 "$server" 2>/dev/null; then cat "$log" >&2; exit 1; fi
  sleep 0.1
done
if [ -z "$url" ]; then echo "conformance: the server did not start" >&2; cat "$log" >&2; exit 1; fi

echo "conformance: $url ($("$bin" --version))"
cd "$mcp"
node_modules/.bin/conformance server --url "$url" --suite all \
  --expected-failures "$here/baseline.yml"
