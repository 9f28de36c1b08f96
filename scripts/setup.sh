#!/usr/bin/env bash
# Create .venv in the repo and install reagent-local with its test and cluster (Ray) extras, at the
# exact versions of scripts/constraints.txt (the ones CI tested; refresh them with scripts/lock.sh).
# Fast when nothing changed: the install is skipped while pyproject.toml, the lock and the extras are unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.reagent-installed
extras="test,cluster"  # cluster: Ray, for the --ray tests
lock=scripts/constraints.txt
want="$( (cat pyproject.toml "$lock"; echo "$extras") | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  echo "==> installing reagent-local and its dependencies (llama-cpp-python compiles once, ~6 min on 2 cores)"
  .venv/bin/python -m pip install -q --upgrade pip -c "$lock"
  .venv/bin/python -m pip install -q -c "$lock" -e ".[$extras]"
  echo "$want" > "$stamp"
else
  echo "==> .venv up to date"
fi
