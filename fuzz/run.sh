#!/usr/bin/env bash
# Runs fuzz targets for a while each: `fuzz/run.sh SECONDS [TARGET...]`
# (default: every target). Used by .ci/run for a short run; see
# docs/fuzzing.md for longer ones.
#
# Each target starts from its seeds (fuzz/seeds/TARGET), every input that
# ever crashed it (fuzz/regressions/TARGET) and the project's own files
# of its kind; new inputs go to fuzz/corpus/TARGET (not committed). A crash
# is saved under fuzz/artifacts/TARGET/ and fails the run.
#
# cargo fuzz needs nightly compiler flags; RUSTC_BOOTSTRAP=1 lets the
# project's stable toolchain accept them.
set -euo pipefail
cd "$(dirname "$0")"

seconds=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(policy_loader manifest_loader shell_analyzer coerce_validate redact)
fi

export RUSTC_BOOTSTRAP=1
# Built once, with exactly the settings `cargo fuzz run` uses (release with
# debug assertions): `build --release` would drop the assertions, and each
# run below would then build everything a second time.
cargo fuzz build 2>&1 | tail -n 3

passed=0
failed=0
for target in "${targets[@]}"; do
  case $target in
    policy_loader) extra=(../policies ../tests/fixtures ../tests/corpus) ;;
    manifest_loader) extra=(../tool-manifests ../tests/fixtures/bad-manifests) ;;
    *) extra=() ;;
  esac
  dirs=()
  for d in seeds/$target regressions/$target "${extra[@]}"; do
    [ -d "$d" ] && dirs+=("$d")
  done
  mkdir -p "corpus/$target" "artifacts/$target"
  log="artifacts/$target/last-run.log"
  echo "== fuzz $target for ${seconds}s"
  if cargo fuzz run "$target" "corpus/$target" "${dirs[@]}" -- \
      -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
      -artifact_prefix="artifacts/$target/" >"$log" 2>&1; then
    grep -E '^Done [0-9]+ runs' "$log" || true
    passed=$((passed + 1))
  else
    tail -n 60 "$log"
    echo "fuzz target $target failed: the input is in fuzz/artifacts/$target/; see docs/fuzzing.md"
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
