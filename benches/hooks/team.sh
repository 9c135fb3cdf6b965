#!/usr/bin/env bash
# Spawn-to-answer time of `toolgate hook claude` (PreToolUse, Bash, stdin)
# with a team's policy (benches/fixtures/team-policy) and with the embedded
# default, for an allowed (`ls -la`) and a denied (`git reset --hard`)
# command; with DCG=/path/to/dcg, destructive_command_guard on the same
# payloads. The hook reads its payload on stdin as Claude Code sends it, so
# each command is `PROGRAM < payload.json` in hyperfine's shell mode (which
# measures the shell's own start and subtracts it). Run from the repository
# root after `cargo build --release`; see docs/performance.md.
set -euo pipefail
repo="$(pwd)"
built="${TOOLGATE:-${CARGO_TARGET_DIR:-$repo/target}/release/toolgate}"
ws="$(mktemp -d)"
state="$(mktemp -d)"
# An installed copy (see run.sh for why the page cache makes this matter).
mkdir -p "$ws/bin" && cp "$built" "$ws/bin/toolgate"
bin="$ws/bin/toolgate"
team="$repo/benches/fixtures/team-policy/policies"
mkdir -p "$ws/default" "$ws/team"
for dir in default team; do
  for cmd in "ls -la" "git reset --hard"; do
    name="$(echo "$cmd" | tr -c 'a-z\n' '-' | tr -s '-')"
    printf '{"session_id":"s","transcript_path":"/tmp/t.jsonl","cwd":"%s","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"%s","description":"d"},"tool_use_id":"toolu_01"}\n' \
      "$ws/$dir" "$cmd" > "$ws/$dir/$name.json"
  done
done
export TOOLGATE_STATE_DIR="$state"
# The first start with the team policy checks its examples and stamps it.
"$bin" hook claude --policies "$team" < "$ws/team/ls-la.json" > /dev/null
cmds=(
  "cd $ws/team && $bin hook claude --policies $team < ls-la.json"
  "cd $ws/team && $bin hook claude --policies $team < git-reset-hard.json"
  "cd $ws/default && $bin hook claude < ls-la.json"
  "cd $ws/default && $bin hook claude < git-reset-hard.json"
)
if [ -n "${DCG:-}" ]; then
  cmds+=("cd $ws/default && $DCG < ls-la.json" "cd $ws/default && $DCG < git-reset-hard.json")
fi
uptime
hyperfine --warmup 20 --runs "${RUNS:-200}" "$@" "${cmds[@]}"
