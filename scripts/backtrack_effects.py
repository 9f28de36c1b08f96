"""What backtracking did in one method's runs: for every question where a rollback fired,
each step's answers in the order they were asserted (the first is what backtracking
`none` would have kept), the rollbacks' reasons, and the final answer against the gold.

    .venv/bin/python scripts/backtrack_effects.py bench-runs/2wiki-n30 --method reagent-both

This reads the run folder's event log; it shows what happened inside the runs, not a
counterfactual run (for that, run `reagent-none` on the same questions and compare,
which `reagent bench report` does when both are in one folder).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from reagent_local.core import events as ev
from reagent_local.core.log import EventLog
from reagent_local.trace.describe import summarize


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--method", default="reagent-both")
    args = parser.parse_args()
    records = [json.loads(line) for line in open(args.run_dir / "records.jsonl", encoding="utf-8") if line.strip()]
    fired = [r for r in records if r["method"] == args.method
             and ((r.get("backtracks") or {}).get("local") or (r.get("backtracks") or {}).get("global"))]
    print(f"{args.method}: backtracking fired on {len(fired)} of "
          f"{sum(1 for r in records if r['method'] == args.method)} questions in {args.run_dir}")
    with EventLog(args.run_dir / "events.duckdb", read_only=True) as log:
        for record in fired:
            print(f"\n{record['id']}  EM {record['em']:.0f}  {record['backtracks']}  {record['question']}")
            print(f"  gold {record['answers'][:1]}  final {record['prediction']!r}")
            bodies = [ev.decode(event) for event in log.events(record["run_id"])]
            for body in bodies:
                if isinstance(body, (ev.RollbackLocal, ev.RollbackGlobal)):
                    print(f"  {body.KIND}: {body.reason[:110]}")
                elif isinstance(body, (ev.Override, ev.FallbackAnswer, ev.Skipped, ev.ConflictSet, ev.RuleFired)) or (
                        isinstance(body, ev.Signal) and body.fired):
                    print(f"  {summarize(body)[:130]}")
            for step, said in sorted(step_answers(bodies).items()):
                print(f"  step {step + 1}: {' -> '.join(repr(a) for a in said)}")


def step_answers(bodies: list[ev.Body]) -> dict[int, list[str]]:
    """Each step's answers in the order they were tried: from 'decision' events, or (older logs) assert messages."""
    answers: dict[int, list[str]] = {}
    decisions = [b for b in bodies if isinstance(b, ev.Decision)]
    if decisions:
        for d in decisions:
            answers.setdefault(d.step, []).append(d.answer)
        return answers
    for body in bodies:
        if isinstance(body, ev.Message) and body.kind == "assert" and isinstance(body.payload.get("step"), int):
            answers.setdefault(body.payload["step"], []).append(str(body.payload.get("answer")))
    return answers


if __name__ == "__main__":
    main()
