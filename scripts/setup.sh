#!/usr/bin/env bash
# Create .venv in the repo and install reagent-local with its test and cluster (Ray) extras.
# Fast when nothing changed: the install is skipped while pyproject.toml and the extras are unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.reagent-installed
extras="test,cluster"  # cluster: Ray, for the --ray tests
want="$( (cat pyproject.toml; echo "$extras") | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  echo "==> installing reagent-local and its dependencies (llama-cpp-python compiles once, ~6 min on 2 cores)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[$extras]"
  echo "$want" > "$stamp"
else
  echo "==> .venv up to date"
fi
