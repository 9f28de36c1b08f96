#!/usr/bin/env bash
# The second confirm set, run once (docs/measurement.md, "The second confirm set"): every listed id of
# ../shared/data/splits/DATASET-confirm2.txt, methods rag, ircot, reagent-both, default configuration and
# threads, one machine, at a committed state of the code (the records name the commit).
#
#   bash scripts/confirm2.sh quality [SET...]   # the answers: bench-runs/confirm2-SET-COMMIT/
#   bash scripts/confirm2.sh time [SET...]      # reagent-both alone, for its seconds: bench-runs/quiet2-SET-COMMIT/
#
# SET: hotpotqa 2wiki musique (default: all three). Both modes resume an interrupted run (same folder).
# A run stopped on one machine and resumed on another is refused by `bench compare` and `bench tables`:
# finish on the machine that started it. Run `time` on a quiet machine, nothing else on the cores; the
# quality run's seconds are not quoted. Nothing about these questions is read before the run has finished.
# DATA: the shared data folder (default ../shared/data, from the repository root).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
shift || true
case $mode in
  quality) methods=rag,ircot,reagent-both; tag=confirm2 ;;
  time) methods=reagent-both; tag=quiet2 ;;
  *) echo "usage: bash scripts/confirm2.sh quality|time [hotpotqa] [2wiki] [musique]" >&2; exit 2 ;;
esac
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "the working tree has uncommitted changes: commit them first, so that the records name the code that ran" >&2
  exit 2
fi
data=${DATA:-../shared/data}
commit=$(git rev-parse --short=7 HEAD)
reagent=${REAGENT:-reagent}
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(hotpotqa 2wiki musique)
for set in "${sets[@]}"; do
  case $set in
    hotpotqa) file=$data/hotpotqa/hotpot_dev_distractor_sample200.json ;;
    2wiki) file=$data/2wikimultihopqa/dev_distractor_sample464.json ;;
    musique) file=$data/musique/musique_ans_dev_mixedhops_sample70.jsonl ;;
    *) echo "unknown set: $set (hotpotqa, 2wiki or musique)" >&2; exit 2 ;;
  esac
  # every listed id, in file order (no --n): a confirm set is run whole
  $reagent bench run --dataset "$set" --file "$file" --ids "$data/splits/$set-confirm2.txt" \
    --methods "$methods" --out "bench-runs/$tag-$set-$commit" --resume
done
