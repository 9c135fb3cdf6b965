#!/usr/bin/env bash
# The functions a hook process runs, in the order the linker should lay them
# out (.cargo/startup-order.txt, read by .cargo/static-bin.sh through LLD's
# --symbol-ordering-file). Laid out together, the code a hook start touches
# sits in a few pages instead of being spread over the 17 MB of .text, so the
# process takes ~60 fewer page faults (docs/performance.md, "Stop 28").
#
#   bash benches/hooks/startup-order.sh generate BIN   # rewrite the list from BIN's runs
#   bash benches/hooks/startup-order.sh check BIN      # is BIN laid out by the list?
#
# generate: BIN is a release build; every function callgrind sees in
# `toolgate --version` and in `toolgate hook claude` on the saved payloads
# (Bash allowed and asked, Read, PostToolUse with a secret) and on a Bash
# call in a workspace, first seen first. Symbol names carry rustc's hashes:
# most stay the same across edits, a refactor renames some, a compiler
# update renames all. Regenerate after either (a stale list costs only
# speed, never correctness).
#
# check (run by .ci/run on the release binary): fails when the listed
# functions BIN has are not in the list's order (the ordering was not
# applied); prints how much of the list BIN has.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
order="$repo/.cargo/startup-order.txt"
mode="${1:-}"
bin="${2:-}"
if [ -z "$mode" ] || [ -z "$bin" ]; then
  echo "usage: $0 generate|check BIN" >&2
  exit 2
fi

case "$mode" in
generate)
  command -v valgrind >/dev/null || { echo "generate needs valgrind" >&2; exit 2; }
  ws="$(mktemp -d)"
  trap 'rm -rf "$ws"' EXIT
  out="$ws/callgrind"
  mkdir -p "$out"
  cp "$bin" "$ws/toolgate"
  printf '{"session_id":"s","transcript_path":"/tmp/t.jsonl","cwd":"%s","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git reset --hard && cat README.md","description":"d"},"tool_use_id":"toolu_01"}\n' "$ws" > "$ws/ask.json"
  run() { # name, args...
    local name="$1"; shift
    (cd "$ws" && valgrind -q --tool=callgrind --demangle=no --compress-strings=no \
      --callgrind-out-file="$out/$name" ./toolgate "$@" > /dev/null 2>&1 || true)
  }
  run version --version
  for payload in pre-bash pre-read post-secret; do
    run "$payload" hook claude --input "$repo/benches/hooks/$payload.json"
  done
  run ask hook claude --input "$ws/ask.json"
  # Function names in first-seen order, without callgrind's "(id) " prefix;
  # addresses without a symbol are left out.
  cat "$out/version" "$out/pre-bash" "$out/ask" "$out/pre-read" "$out/post-secret" \
    | sed -nE 's/^c?fn=(\([0-9]+\) )?//p' \
    | grep -v '^0x' \
    | awk '!seen[$0]++' > "$order.new"
  mv "$order.new" "$order"
  echo "$(wc -l < "$order") functions written to .cargo/startup-order.txt"
  ;;
check)
  # nm lists BIN's function symbols with addresses; walk the list in order
  # and count the places where a listed function sits below the previous one.
  nm "$bin" | awk -v list="$order" '
    ($2 == "t" || $2 == "T" || $2 == "W" || $2 == "w") { addr[$3] = $1 }
    END {
      prev = ""; found = 0; total = 0; back = 0
      while ((getline name < list) > 0) {
        total++
        # Rust functions only: each has a section of its own, which the
        # linker places as listed; C library functions share the section of
        # their object file and move with it.
        if (name !~ /^_(ZN|R)/ || !(name in addr)) continue
        a = addr[name]
        if (a in placed) continue   # an alias of a function already counted
        placed[a] = 1
        found++
        if (prev != "" && length(a) == length(prev) && a < prev) back++
        if (prev != "" && length(a) < length(prev)) back++
        prev = a
      }
      printf "startup order: %d of %d listed functions are Rust functions in the binary, %d of them out of order\n", found, total, back
      if (found < 20) {
        print "startup order: too few listed functions found: the list is stale for this compiler; regenerate it (benches/hooks/startup-order.sh generate)"
        exit 0
      }
      if (back > found / 20) {
        print "startup order: the binary is not laid out by .cargo/startup-order.txt (see .cargo/static-bin.sh)"
        exit 1
      }
    }'
  ;;
*)
  echo "usage: $0 generate|check BIN" >&2
  exit 2
  ;;
esac
