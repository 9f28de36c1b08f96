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

from reagent_local.core.log import EventLog


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
            answers: dict[int, list[str]] = {}
            for event in log.events(record["run_id"]):
                payload = event.payload
                if event.type == "message" and payload.get("kind") == "assert":
                    inner = payload.get("payload") or {}
                    answers.setdefault(int(inner.get("step", -1)), []).append(str(inner.get("answer")))
                elif event.type in ("rollback_local", "rollback_global"):
                    print(f"  {event.type}: {str(payload.get('reason', ''))[:110]}")
                elif event.type in ("override", "fallback_answer", "skipped"):
                    print(f"  {event.type}: {json.dumps(payload, ensure_ascii=False)[:110]}")
            for step, said in sorted(answers.items()):
                print(f"  step {step + 1}: {' -> '.join(repr(a) for a in said)}")


if __name__ == "__main__":
    main()
