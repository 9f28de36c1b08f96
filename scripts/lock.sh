#!/usr/bin/env bash
# Refresh scripts/constraints.txt: the exact versions a fresh machine gets, and CI tests.
# Installs reagent-local with every extra into a throwaway virtualenv from pyproject.toml's
# ranges (no constraints), then writes what pip chose. Commit the result after CI passes on it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "==> resolving reagent-local[test,cluster] in a fresh virtualenv ($tmp)"
"$PYTHON" -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q --upgrade pip
"$tmp/venv/bin/python" -m pip install -q ".[test,cluster]"
{
  echo "# The versions a fresh machine installs (scripts/setup.sh: pip install -c scripts/constraints.txt)."
  echo "# Made by scripts/lock.sh on $(date -u +%Y-%m-%d) with $("$tmp/venv/bin/python" -V), $(uname -sm)."
  echo "# Exact pins without hashes: wheels differ by platform, and a hash lock made here would refuse a Mac's."
  # local labels (torch 2.13.0+cpu) dropped: "==2.13.0" still takes the CPU build here and the plain wheel elsewhere
  "$tmp/venv/bin/python" -m pip freeze --all | grep -v -i "^reagent-local" | sed -E "s/\+[A-Za-z0-9.]+$//" | LC_ALL=C sort -f
} > scripts/constraints.txt
echo "==> wrote scripts/constraints.txt ($(grep -vc '^#' scripts/constraints.txt) packages)"
