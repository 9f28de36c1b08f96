"""Finding runs in the log: recent runs, run references (id, unique prefix, `last`), raw export."""

from __future__ import annotations

from typing import Any

from ..errors import RunNotFoundError
from ..core.log import EventLog
from .load import link_calls
from .model import RunSummary

EXPORT_FORMAT = "reagent-run-export"
EXPORT_VERSION = 1
_SCAN_LIMIT = 1_000_000  # every run: prefixes are matched against all of them


def list_runs(log: EventLog, last: int = 20) -> list[RunSummary]:
    """The ``last`` most recent runs, newest first."""
    if last < 1:
        raise ValueError("last must be at least 1")
    return [RunSummary.from_row(row) for row in log.runs(last)]


def resolve_run_id(log: EventLog, ref: str) -> str:
    """A full run id from an id, a unique prefix of one, or ``last`` (the newest run)."""
    ref = ref.strip()
    if ref == "last":
        newest = log.runs(1)
        if not newest:
            raise RunNotFoundError(f"the log {log.path} has no runs yet",
                                   hint="ask a question first: reagent ask \"...\"")
        return newest[0]["run_id"]
    try:
        return log.get_run(ref)["run_id"]
    except RunNotFoundError:
        if not ref:
            raise
    matches = [row["run_id"] for row in log.runs(_SCAN_LIMIT) if row["run_id"].startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        raise RunNotFoundError(f"{ref!r} matches {len(matches)} runs ({shown})", hint="give more of the run id")
    raise RunNotFoundError(f"no run {ref!r} in {log.path}", hint="list runs with `reagent trace list`")


def export_run(log: EventLog, run_id: str) -> dict[str, Any]:
    """Everything the log holds about one run, as JSON-ready data for other tools.

    ``llm_calls[*].event_seq`` is the event each call led to, derived by the rule in
    :mod:`reagent_local.trace.load` (the log does not store it).
    """
    run = log.get_run(run_id)
    events = log.events(run_id)
    calls = log.llm_calls(run_id)
    linked = {c.id: c.event_seq for c in link_calls(calls, events)}
    return {
        "format": EXPORT_FORMAT, "version": EXPORT_VERSION, "log": str(log.path), "run": run,
        "events": [{"seq": e.seq, "time": e.time, "wall_time": e.wall_time, "agent": e.agent, "type": e.type,
                    "payload": e.payload, "parent_seq": e.parent_seq} for e in events],
        "checkpoints": [{"id": c.id, "seq": c.seq, "time": c.time, "label": c.label, "snapshot": c.snapshot}
                        for c in log.checkpoints(run_id)],
        "llm_calls": [dict(c, event_seq=linked.get(c["id"])) for c in calls],
    }
