"""Two runs of one question side by side: their events without the numbers the log gives them.

Event seqs and checkpoint ids count across the whole log, so two runs that did exactly the same
things still differ in them (a message points at event 208 in one run, 259 in the other). Here
those references are made relative to the run (``event 3``, ``checkpoint 0``) and times in seconds
are dropped, so a run answered by `reagent serve` can be compared with the same question answered
locally.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.log import EventLog

# payload keys that hold an event seq or a checkpoint id of the log
EVENT_KEYS = frozenset({"messages", "message", "parent_seq", "seq", "caused_by", "event_seq"})
CHECKPOINT_KEYS = frozenset({"checkpoint_id", "checkpoint", "target"})
TIMING_KEYS = frozenset({"seconds", "wall_time"})


def comparable_events(log_path: str | Path, run_id: str) -> list[tuple[Any, ...]]:
    """(logical time, agent, type, payload) of each event, log-wide numbers made relative to the run."""
    with EventLog(Path(log_path), read_only=True) as log:
        events = log.events(run_id)
        checkpoints = {c.id: n for n, c in enumerate(log.checkpoints(run_id))}
    seqs = {e.seq: n for n, e in enumerate(events)}

    def relative(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: relative(v, k) for k, v in value.items() if k not in TIMING_KEYS}
        if isinstance(value, list):
            return [relative(v, key) for v in value]
        if isinstance(value, int) and not isinstance(value, bool):
            if key in CHECKPOINT_KEYS and value in checkpoints:
                return f"checkpoint {checkpoints[value]}"
            if key in EVENT_KEYS and value in seqs:
                return f"event {seqs[value]}"
        return value

    return [(e.time, e.agent, e.type, relative(e.payload)) for e in events]
