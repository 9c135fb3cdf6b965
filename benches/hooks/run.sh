#!/usr/bin/env bash
# Spawn-to-answer time of `toolgate hook claude` next to the Python hook a
# user would write (python_hook.py), in one hyperfine run. Both read the
# same saved input from a file (`--input` / the script's argument), so no
# shell sits between hyperfine and the process it times (`-N`). The Python
# script runs twice: with the interpreter itself, and as `python3` from PATH
# (what a hook's "command" would say). The last two commands are the floors:
# starting each program and doing nothing. Run from the repository root after
# `cargo build --release`; see docs/performance.md.
set -euo pipefail
repo="$(pwd)"
built="${TOOLGATE:-${CARGO_TARGET_DIR:-$repo/target}/release/toolgate}"
python="${PYTHON:-/usr/bin/python3}"
path_python="$(command -v python3)"
ws="$(mktemp -d)"   # no policies/ folder here: the embedded default policy
# Time an installed copy, as `cargo install` makes one. The linker writes the
# binary through mmap, which leaves it in the page cache as 4 KiB pages; a
# copied (or freshly read) file is cached in large folios, which map with
# fewer page faults at every start (204 against 234 here, 1.4 against 1.9 ms).
mkdir -p "$ws/bin" && cp "$built" "$ws/bin/toolgate"
bin="$ws/bin/toolgate"
mkdir -p "$ws/src" && echo 'fn main() {}' > "$ws/src/main.rs"
for f in pre-bash pre-read post-secret; do
  sed "s|@WS@|$ws|g" "$repo/benches/hooks/$f.json" > "$ws/$f.json"
done
cd "$ws"
hyperfine -N --warmup 20 --runs "${RUNS:-300}" "$@" \
  "$bin hook claude --input pre-bash.json" \
  "$bin hook claude --input pre-read.json" \
  "$bin hook claude --input post-secret.json" \
  "$python $repo/benches/hooks/python_hook.py pre-bash.json" \
  "$python $repo/benches/hooks/python_hook.py pre-read.json" \
  "$path_python $repo/benches/hooks/python_hook.py pre-bash.json" \
  "$bin --version" \
  "$python -c pass"
