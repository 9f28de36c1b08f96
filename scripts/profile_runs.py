"""Cost profile of one method in a benchmark run folder (median/p90 seconds, calls, tokens,
time outside llama.cpp, how often each kind of backtracking fired, and which rules, signals
and decisions the event log shows).

    .venv/bin/python scripts/profile_runs.py bench-runs/hotpotqa-n30 --method reagent-both --first 20
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from pathlib import Path

from reagent_local.core import events as ev
from reagent_local.core.log import EventLog


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def event_counts(bodies: list[ev.Body]) -> Counter:
    """What one run's log shows, as labels: rollbacks, conflict sets by source, rules, fired signals, decisions."""
    seen: Counter = Counter()
    for body in bodies:
        if isinstance(body, (ev.RollbackLocal, ev.RollbackGlobal)):
            seen[body.KIND] += 1
        elif isinstance(body, ev.ConflictSet):
            seen[f"conflict_set from {body.source or '?'}"] += 1
        elif isinstance(body, ev.RuleFired):
            seen[f"rule {body.rule}"] += 1
        elif isinstance(body, ev.Signal) and body.fired:
            seen[f"signal {body.signal}"] += 1
        elif isinstance(body, ev.Decision) and body.decision != "accept":
            seen[f"decision {body.decision}"] += 1
        elif isinstance(body, (ev.Override, ev.FallbackAnswer, ev.Skipped, ev.LLMError, ev.InvalidOutput)):
            seen[body.KIND] += 1
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--method", default="reagent-both")
    parser.add_argument("--first", type=int, default=None, help="only the first N questions of the run")
    args = parser.parse_args()
    records = [json.loads(line) for line in open(args.run_dir / "records.jsonl") if line.strip()]
    records = [r for r in records if r["method"] == args.method][: args.first]
    if not records:
        raise SystemExit(f"no records of {args.method} in {args.run_dir}")
    llm_seconds = {}
    totals: Counter = Counter()  # event label -> how many times
    questions: Counter = Counter()  # event label -> on how many questions
    with EventLog(args.run_dir / "events.duckdb", read_only=True) as log:
        for r in records:
            calls = log.llm_calls(r["run_id"]) if r.get("run_id") else []
            llm_seconds[r["run_id"]] = sum(c.get("seconds") or 0.0 for c in calls)
            seen = event_counts([ev.decode(e) for e in log.events(r["run_id"])]) if r.get("run_id") else Counter()
            totals.update(seen)
            questions.update(seen.keys())
    seconds = [r["seconds"] for r in records]
    calls = [r["llm_calls"] for r in records]
    tokens = [r["prompt_tokens"] + r["completion_tokens"] for r in records]
    outside = 1 - sum(llm_seconds.values()) / sum(seconds)
    local = sum(1 for r in records if (r.get("backtracks") or {}).get("local", 0) > 0)
    glob = sum(1 for r in records if (r.get("backtracks") or {}).get("global", 0) > 0)
    n = len(records)
    print(f"{args.method}: {n} questions from {args.run_dir}")
    print(f"  seconds/question   median {statistics.median(seconds):.1f}  p90 {percentile(seconds, 0.9):.1f}  mean {statistics.mean(seconds):.1f}")
    print(f"  LLM calls/question median {statistics.median(calls):.0f}  mean {statistics.mean(calls):.2f}  max {max(calls)}")
    print(f"  tokens/question    median {statistics.median(tokens):.0f}  mean {statistics.mean(tokens):.0f}")
    print(f"  wall time outside llama.cpp calls: {outside:.1%}")
    print(f"  local backtracking fired on {local}/{n} questions ({sum((r.get('backtracks') or {}).get('local', 0) for r in records)} rollbacks)")
    print(f"  global backtracking fired on {glob}/{n} questions ({sum((r.get('backtracks') or {}).get('global', 0) for r in records)} rollbacks)")
    print(f"  uncertain answers: {sum(1 for r in records if r.get('uncertain'))}/{n}; EM {statistics.mean(r['em'] for r in records):.3f} F1 {statistics.mean(r['f1'] for r in records):.3f}")
    if totals:
        print("  in the event log (questions, times):")
        for label, count in sorted(totals.items(), key=lambda kv: (-questions[kv[0]], kv[0])):
            print(f"    {label:<40} {questions[label]:>3}/{n}  {count:>4}")


if __name__ == "__main__":
    main()
