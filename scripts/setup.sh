#!/usr/bin/env bash
# Create .venv in the repo and install reagent-local with its test extras.
# Fast when nothing changed: the install is skipped while pyproject.toml is unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.reagent-installed
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  echo "==> installing reagent-local and its dependencies (llama-cpp-python compiles once, ~6 min on 2 cores)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[test]"
  echo "$want" > "$stamp"
else
  echo "==> .venv up to date"
fi
