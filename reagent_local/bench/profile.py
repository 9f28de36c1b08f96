"""Where a run's time and model calls go: by role, by backtracking signal, and what the event log shows.

From the records alone: seconds and calls per question (median, p90), and per conflict signal
the questions that raised it, their share of the calls and seconds, and (where the record
holds the answer without backtracking) the calls beyond what that answer needed. From the run
folder's event log, when present: calls, model seconds and tokens per role, the seconds spent
outside the model, and how often each kind of event (rollbacks, conflict sets, rules,
signals, decisions other than accept, overrides, fallbacks) occurred.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from statistics import mean
from typing import Any, Iterable, Mapping, Sequence

from .records import RECORDS_FILE, read_records
from .rundir import read_run_config
from .stats import median, p90

Record = dict[str, Any]
NOTHING = "(nothing fired)"
EVENTS_FILE = "events.duckdb"


def spread(values: Sequence[float]) -> dict[str, float | None]:
    """Mean, median, p90 and total of per-question values."""
    return {"mean": mean(values) if values else None, "median": median(values), "p90": p90(values),
            "total": sum(values)}


def needed_without(record: Record) -> int | None:
    """The calls the question needs with backtracking off (replayed + made by the second run); None without one.

    Where nothing fired there was no second run: the answer is the same, but a run with
    backtracking on may still have made a call the other would not (the second road that agreed).
    """
    cost = record.get("without_backtracking_cost")
    if not cost or not cost.get("run_id"):
        return None
    return int(cost.get("replayed") or 0) + int(cost.get("calls") or 0)


def by_signal(records: Sequence[Record]) -> dict[str, Record]:
    """Per signal (a question counts under each it raised; none: NOTHING): questions, calls, seconds, extra calls."""
    total_calls = sum(r["llm_calls"] for r in records) or 1
    total_seconds = sum(r["seconds"] for r in records) or 1.0
    groups: dict[str, list[Record]] = {}
    for record in records:
        for name in dict.fromkeys(record.get("signals") or []) or [NOTHING]:
            groups.setdefault(name, []).append(record)
    out = {}
    for name, group in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        known = [(r, needed_without(r)) for r in group]
        exact = [(r, n) for r, n in known if n is not None]
        calls, seconds = sum(r["llm_calls"] for r in group), sum(r["seconds"] for r in group)
        out[name] = {"questions": len(group), "calls": calls, "calls_share": calls / total_calls,
                     "seconds": round(seconds, 3), "seconds_share": seconds / total_seconds,
                     "calls_median": median([r["llm_calls"] for r in group]),
                     "extra_calls": sum(r["llm_calls"] - n for r, n in exact) if exact else None,
                     "extra_known": len(exact)}
    return out


def by_role(calls: Iterable[Mapping[str, Any]]) -> dict[str, Record]:
    """Per role: model calls, their seconds and tokens, and each role's share of the calls and model seconds."""
    rows: dict[str, Counter] = {}
    for call in calls:
        row = rows.setdefault(str(call.get("agent") or "?"), Counter())
        row["calls"] += 1
        row["seconds"] += float(call.get("seconds") or 0.0)
        row["prompt_tokens"] += int(call.get("prompt_tokens") or 0)
        row["completion_tokens"] += int(call.get("completion_tokens") or 0)
    total_calls = sum(r["calls"] for r in rows.values()) or 1
    total_seconds = sum(r["seconds"] for r in rows.values()) or 1.0
    return {agent: {"calls": r["calls"], "calls_share": r["calls"] / total_calls, "seconds": round(r["seconds"], 3),
                    "seconds_share": r["seconds"] / total_seconds, "prompt_tokens": r["prompt_tokens"],
                    "completion_tokens": r["completion_tokens"]}
            for agent, r in sorted(rows.items(), key=lambda item: -item[1]["seconds"])}


def event_labels(bodies: Iterable[Any]) -> Counter:
    """One run's notable events as labels: rollbacks, conflict sets by source, rules, fired signals, decisions."""
    from ..core import events as ev

    seen: Counter = Counter()
    for body in bodies:
        if isinstance(body, (ev.RollbackLocal, ev.RollbackGlobal)):
            seen[body.KIND] += 1
        elif isinstance(body, ev.ConflictSet):
            seen[f"conflict set from {body.source or '?'}"] += 1
        elif isinstance(body, ev.RuleFired):
            seen[f"rule {body.rule}"] += 1
        elif isinstance(body, ev.Signal) and body.fired:
            seen[f"signal {body.signal}"] += 1
        elif isinstance(body, ev.Decision) and body.decision != "accept":
            seen[f"decision {body.decision}"] += 1
        elif isinstance(body, (ev.Override, ev.FallbackAnswer, ev.Skipped, ev.LLMError, ev.InvalidOutput)):
            seen[body.KIND] += 1
    return seen


def method_profile(records: Sequence[Record], calls: Mapping[str, list] | None = None,
                   labels: Mapping[str, Counter] | None = None) -> Record:
    """One method's profile from its records, and (by run id) its logged calls and event labels when known."""
    out: Record = {
        "questions": len(records),
        "seconds": spread([r["seconds"] for r in records]),
        "llm_calls": spread([r["llm_calls"] for r in records]),
        "tokens": spread([r["prompt_tokens"] + r["completion_tokens"] for r in records]),
        "signals": by_signal(records),
        "answered_again": _answered_again(records),
    }
    logged = [r for r in records if r.get("run_id") and calls is not None and r["run_id"] in calls]
    if logged:
        run_calls = [c for r in logged for c in calls[r["run_id"]]]  # type: ignore[index]
        model_seconds = sum(float(c.get("seconds") or 0.0) for c in run_calls)
        question_seconds = sum(r["seconds"] for r in logged)
        out["roles"] = by_role(run_calls)
        out["logged_questions"] = len(logged)
        out["outside_model_share"] = 1 - model_seconds / question_seconds if question_seconds else None
        counts, questions = Counter(), Counter()
        for record in logged:
            seen = (labels or {}).get(record["run_id"], Counter())
            counts.update(seen)
            questions.update(seen.keys())
        out["events"] = {label: {"questions": questions[label], "times": counts[label]}
                         for label in sorted(counts, key=lambda label: (-questions[label], label))}
    return out


def _answered_again(records: Sequence[Record]) -> Record:
    """The second runs that found the answers without backtracking (kept out of the questions' cost)."""
    costs = [r["without_backtracking_cost"] for r in records
             if r.get("without_backtracking_cost") and r["without_backtracking_cost"].get("run_id")]
    return {"questions": len(costs), "calls": sum(c.get("calls") or 0 for c in costs),
            "replayed": sum(c.get("replayed") or 0 for c in costs),
            "seconds": round(sum(c.get("seconds") or 0.0 for c in costs), 3)}


def profile_run(folder: Path, methods: Sequence[str] = ()) -> Record:
    """The profile of each method of a run folder (or of ``methods``), with the event log when it is there."""
    folder = Path(folder)
    run = read_run_config(folder)
    records = read_records(folder / RECORDS_FILE)
    present = list(dict.fromkeys(r["method"] for r in records))
    chosen = list(methods) or present
    missing = [m for m in chosen if m not in present]
    if missing:
        from ..errors import BenchRunError

        raise BenchRunError(f"no records of {', '.join(missing)} in {folder}",
                            hint=f"methods there: {', '.join(present) or 'none'}")
    calls, labels = _from_log(folder / EVENTS_FILE, [r["run_id"] for r in records
                                                     if r["method"] in chosen and r.get("run_id")])
    return {"folder": str(folder), "dataset": run.get("dataset"), "event_log": calls is not None,
            "methods": {m: method_profile([r for r in records if r["method"] == m], calls, labels) for m in chosen}}


def _from_log(path: Path, run_ids: Sequence[str]) -> tuple[dict[str, list] | None, dict[str, Counter] | None]:
    """Each run's logged model calls and event labels; (None, None) without a log."""
    if not path.exists() or not run_ids:
        return None, None
    from ..core import events as ev
    from ..core.log import EventLog

    with EventLog(path, read_only=True) as log:
        calls = {run_id: log.llm_calls(run_id) for run_id in run_ids}
        labels = {run_id: event_labels(ev.decode(e) for e in log.events(run_id)) for run_id in run_ids}
    return calls, labels
