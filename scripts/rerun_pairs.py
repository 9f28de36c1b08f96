"""Backtracking against none, paired on one machine, without rerunning every question.

    .venv/bin/python scripts/rerun_pairs.py bench-runs/test-hotpotqa bench-runs/rerun-none-hotpotqa [MORE ...]

The first folder holds a full `reagent-both` run; the others a `reagent-none` run of the
same code on the same machine over the questions where `both` backtracked, plus a few
where it did not (controls). Where `both` did not backtrack it took the same path as
`none` would, so its answer stands for `none`'s there: the controls check that (a
different llama.cpp build or CPU can change greedy decoding, so an older `none` run is
not a paired baseline). Prints each rerun question, fixed / broken (EM), won / lost (F1)
and both's F1 against the estimated `none` F1 over all questions.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from reagent_local.bench.records import read_records

BOTH, NONE = "reagent-both", "reagent-none"


def method_records(folder: Path, method: str) -> dict[str, dict[str, Any]]:
    """The folder's records of one method, by question id."""
    return {r["id"]: r for r in read_records(folder / "records.jsonl") if r["method"] == method}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("both_run", type=Path, help="run folder with reagent-both on every question")
    parser.add_argument("none_reruns", type=Path, nargs="+",
                        help="run folder(s) with reagent-none on the questions where both fired")
    args = parser.parse_args()
    both = method_records(args.both_run, BOTH)
    rerun = {qid: r for folder in args.none_reruns for qid, r in method_records(folder, NONE).items()}
    missing = [q for q, r in both.items() if r["backtracked"] and q not in rerun]
    if missing:
        raise SystemExit(f"error: {len(missing)} question(s) where both backtracked have no none rerun: {', '.join(missing)}")
    controls = [q for q in rerun if not both[q]["backtracked"]]
    same = sum(rerun[q]["prediction"] == both[q]["prediction"] for q in controls)
    print("| question | signals (local, global rollbacks) | none | both | F1 change |\n|---|---|---|---|---|")
    for qid, none in rerun.items():
        b = both[qid]
        if b["backtracked"]:
            counts = f"{', '.join(b['signals']) or '-'} ({b['backtracks']['local']}, {b['backtracks']['global']})"
            print(f"| {qid} | {counts} | {none['prediction']} | {b['prediction']} | {b['f1'] - none['f1']:+.3f} |")
    fired = [q for q in both if both[q]["backtracked"]]
    fixed = sum(both[q]["em"] > rerun[q]["em"] for q in fired)
    broken = sum(both[q]["em"] < rerun[q]["em"] for q in fired)
    won = sum(both[q]["f1"] > rerun[q]["f1"] for q in fired)
    lost = sum(both[q]["f1"] < rerun[q]["f1"] for q in fired)
    delta = sum(both[q]["f1"] - rerun[q]["f1"] for q in fired) / len(both)
    both_f1 = statistics.mean(r["f1"] for r in both.values())
    print(f"\n{len(both)} questions; both backtracked on {len(fired)}; controls where it did not: "
          f"{same} of {len(controls)} with none's answer")
    print(f"answers changed {sum(both[q]['prediction'] != rerun[q]['prediction'] for q in fired)}; "
          f"fixed {fixed}, broken {broken} (EM); won {won}, lost {lost} (F1)")
    print(f"F1: both {both_f1:.3f}, none (estimated) {both_f1 - delta:.3f}, both - none {delta:+.3f}")


if __name__ == "__main__":
    main()
