#!/usr/bin/env bash
# Install everything the tests need, then run the whole test suite.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -m "not slow"`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "==> pulling the test models (SmolLM2-135M, 98 MB; Qwen2.5-Coder-1.5B, 1.1 GB for the end-to-end test)"
reagent models pull smollm2-135m qwen2.5-coder-1.5b
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    echo "==> installing chromium and chromium-driver for the browser test"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
      || echo "!! could not install chromium: the browser test will be skipped"
  else
    echo "!! chromium not installed and not root: the browser test will be skipped"
  fi
fi
exec .venv/bin/python -m pytest "$@"
