#!/bin/sh
# For extension.test.mjs: runs fake-bridge.mjs with the Node that runs the tests ($FAKE_BRIDGE_NODE).
exec "$FAKE_BRIDGE_NODE" "$(dirname "$0")/fake-bridge.mjs" "$@"
