#!/usr/bin/env bash
# Install everything the tests need, then run the tests.
#   bash scripts/test.sh          the quick suite: everything but the tests marked slow (~5 min on 2 cores)
#   bash scripts/test.sh --full   everything: real GGUF models, real index builds, Ray, the fault suite's
#                                 real-model variants and the browser tests (what CI runs, ~35-45 min)
# Other arguments go to pytest (e.g. `bash scripts/test.sh -k probe`, `bash scripts/test.sh --full -x`).
set -euo pipefail
cd "$(dirname "$0")/.."
full=0
args=()
for arg in "$@"; do
  if [ "$arg" = "--full" ]; then full=1; else args+=("$arg"); fi
done
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
if [ "$full" = 0 ]; then
  echo "==> pulling the small test model (SmolLM2-135M, 98 MB)"
  reagent models pull smollm2-135m
  echo "==> the quick suite (tests marked slow are left out; \`bash scripts/test.sh --full\` runs them)"
  exec .venv/bin/python -m pytest -m "not slow" ${args[@]+"${args[@]}"}
fi
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
echo "==> the full suite"
exec .venv/bin/python -m pytest ${args[@]+"${args[@]}"}
