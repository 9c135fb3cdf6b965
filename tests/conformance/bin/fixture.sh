#!/bin/sh
# The conformance suite's fixture tools, as one exec tool program with
# `output = "content"`: stdout is a JSON array of MCP content blocks; JSON
# lines on stderr are progress and log records (see src/tools/exec.rs).
# Only tests/conformance/ serves these; no real configuration does.
set -eu

# A 1x1 red PNG and a 44-byte silent WAV.
PNG='iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=='
WAV='UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA='

case "${1:-}" in
simple_text)
  printf '%s' '[{"type":"text","text":"This is a simple text response for testing."}]'
  ;;
image)
  printf '[{"type":"image","data":"%s","mimeType":"image/png"}]' "$PNG"
  ;;
audio)
  printf '[{"type":"audio","data":"%s","mimeType":"audio/wav"}]' "$WAV"
  ;;
embedded_resource)
  printf '%s' '[{"type":"resource","resource":{"uri":"test://embedded-resource","mimeType":"text/plain","text":"This is an embedded resource content."}}]'
  ;;
mixed)
  printf '[{"type":"text","text":"Multiple content types test:"},{"type":"image","data":"%s","mimeType":"image/png"},{"type":"resource","resource":{"uri":"test://mixed-content-resource","mimeType":"application/json","text":"{\\"test\\":\\"data\\",\\"value\\":123}"}}]' "$PNG"
  ;;
logging)
  echo '{"log":{"level":"info","data":"Tool execution started"}}' >&2
  sleep 0.05
  echo '{"log":{"level":"info","data":"Tool processing data"}}' >&2
  sleep 0.05
  echo '{"log":{"level":"info","data":"Tool execution completed"}}' >&2
  printf '%s' '[{"type":"text","text":"Tool with logging executed successfully"}]'
  ;;
progress)
  echo '{"progress":0,"total":100}' >&2
  sleep 0.05
  echo '{"progress":50,"total":100}' >&2
  sleep 0.05
  echo '{"progress":100,"total":100}' >&2
  printf '%s' '[{"type":"text","text":"Tool with progress executed successfully"}]'
  ;;
error)
  echo 'This tool intentionally returns an error for testing' >&2
  exit 1
  ;;
reconnection)
  # The suite's SSE polling scenario calls this; toolgate answers on the
  # POST stream (it never closes a stream mid-call), which the suite
  # reports as information, not a failure.
  printf '%s' '[{"type":"text","text":"Reconnection test completed"}]'
  ;;
json_schema)
  printf '%s' '[{"type":"text","text":"JSON Schema 2020-12 tool called"}]'
  ;;
*)
  echo "unknown fixture: ${1:-}" >&2
  exit 2
  ;;
esac
