"""What shows that a part of the loop acted on a question: the one table ``bench ablate`` reruns by.

Prompts are evaluated deterministically (``runtime/prefill.py``) and retrieval is
deterministic, so a question on which a part did not act gets the identical record with
that part switched off. ``bench ablate`` therefore reruns only the questions where a
baseline record (or its event log) shows the part acting, and carries the others over.
A part that is not in this table, or a change that could make it act where it did not
before (a higher threshold), reruns every question. ``bench ablate --check N`` reruns
some carried-over questions to show the carry-over is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..config import BACKTRACKING
from ..rules import RULES

Record = dict[str, Any]
EVENTS_FILE = "events.duckdb"
# the verifier's retry reasons (a record of a run that had the removed check-failed live may name it too; it counted
# a local backtrack, and a baseline that ran it is not rebuilt: ablate_baseline.rebuild_config)
LOCAL_SIGNALS = ("low-confidence", "off-subject")
TWO_ROADS = "two-roads"


@dataclass(frozen=True)
class Marks:
    """What shows that a part acted on a question; any one mark is enough."""

    signals: frozenset[str] = frozenset()  # fired: in the record's ``signals``
    checked: frozenset[str] = frozenset()  # checked at all: a Signal event in the log, fired or not
    rules: frozenset[str] = frozenset()  # in the record's ``rules_fired``
    backtracks: frozenset[str] = frozenset()  # "local" / "global": the record's count is above 0
    whole_read: bool = False  # the log shows the whole question read (the second road, or the fallback)
    escalated: bool = False  # the log shows a conflict the channel escalated to the supervisor

    @property
    def needs_log(self) -> bool:
        """Whether some mark can only be read from the event log."""
        return bool(self.checked) or self.whole_read or self.escalated

    def __or__(self, other: "Marks") -> "Marks":
        return Marks(self.signals | other.signals, self.checked | other.checked, self.rules | other.rules,
                     self.backtracks | other.backtracks, self.whole_read or other.whole_read,
                     self.escalated or other.escalated)


def marks(*, signals: Iterable[str] = (), checked: Iterable[str] = (), rules: Iterable[str] = (),
          backtracks: Iterable[str] = (), whole_read: bool = False, escalated: bool = False) -> Marks:
    """A Marks from plain iterables."""
    return Marks(frozenset(signals), frozenset(checked), frozenset(rules), frozenset(backtracks), whole_read, escalated)


@dataclass(frozen=True)
class Setting:
    """A setting in the table: what shows it acted, and for which changes that holds."""

    marks: Marks
    narrows: Callable[[Any, Any], bool]  # (baseline value, ablated value): the change only takes the part away
    why: str


def stage_rules(stage: str) -> list[str]:
    """The registered rules of a stage (``trust``, ``doubt``, ...)."""
    return [r.name for r in RULES.values() if r.stage == stage]


def _lower(old: Any, new: Any) -> bool:
    return new <= old


def _off(old: Any, new: Any) -> bool:
    return bool(old) and not new


SETTINGS: dict[str, Setting] = {
    # verifier.decide: a checked span under min_confidence is retried, and that retry raises low-confidence;
    # a lower threshold retries only some of the same answers
    "pipeline.min_confidence": Setting(marks(signals=["low-confidence"]), _lower,
                                       "a low-confidence retry (only a lower threshold; a higher one may act anywhere)"),
    # roads.SecondRoad: the whole question is read (a call, even when the roads then agree; a reading that finds no
    # answer logs no signal, only the evidence sent for it), or the roads disagreed (a fired signal), or a chain was
    # trusted by its question's shape (a trust rule fires); a chain trusted otherwise reads nothing and changes nothing
    "pipeline.two_roads": Setting(marks(signals=[TWO_ROADS], whole_read=True, rules=stage_rules("trust")), _off,
                                  "the whole question read, a fired two-roads signal or a trust rule "
                                  "(only switching it off)"),
}


def backtracking_marks(kind: str) -> Marks:
    """What shows local or global backtracking acted on a question."""
    if kind == "local":
        # every retry or give-up, and every accept that takes an answer back, counts a local backtrack; the doubt
        # rules are consulted only with local backtracking on
        return marks(signals=LOCAL_SIGNALS, backtracks=["local"], rules=stage_rules("doubt"))
    # global: rollbacks count (no signal of its own: a record of a run before the second plan and the assembler's
    # escalations were removed may name plan-failed, value-conflict, broken-bridge or unfounded-step, and a baseline
    # that ran them is not rebuilt: ablate_baseline.rebuild_config); the second road runs only with global
    # backtracking; the channel's escalations are rolled back only with it
    return marks(backtracks=["global"], escalated=True) | SETTINGS["pipeline.two_roads"].marks


def switched_off(base: str, ablated: str) -> tuple[list[str], list[str]]:
    """(kinds of backtracking ``ablated`` switches off, kinds it switches on) against ``base`` (reagent-MODE)."""
    old, new = BACKTRACKING[base.removeprefix("reagent-")], BACKTRACKING[ablated.removeprefix("reagent-")]
    kinds = ("local", "global")
    return ([k for k, o, n in zip(kinds, old, new) if o and not n], [k for k, o, n in zip(kinds, old, new) if n and not o])


@dataclass(frozen=True)
class Trace:
    """What one baseline question shows: from its record, and from the event log (None: not in a log)."""

    signals: frozenset[str]
    rules: frozenset[str]
    backtracks: frozenset[str]
    checked: frozenset[str] | None = None
    whole_read: bool | None = None
    escalated: bool | None = None
    error: bool = False  # the run stopped on an error: its record does not show what acted before it


def acted(mark: Marks, trace: Trace) -> bool:
    """Whether the question shows a mark; a question whose run failed, or whose mark needs a log it is not in,
    counts as shown."""
    if trace.error:
        return True
    if mark.signals & trace.signals or mark.rules & trace.rules or mark.backtracks & trace.backtracks:
        return True
    if not mark.needs_log:
        return False
    if trace.checked is None:
        return True  # cannot tell: rerun it
    return bool(mark.checked & trace.checked) or (mark.whole_read and bool(trace.whole_read)) \
        or (mark.escalated and bool(trace.escalated))


def record_trace(record: Record, logged: Mapping[str, Any] | None = None) -> Trace:
    """The trace of one record, with what the log shows for its run (``logged``: checked, whole_read, escalated)."""
    counts = record.get("backtracks") or {}
    logged = logged or {}
    return Trace(frozenset(record.get("signals") or ()), frozenset(record.get("rules_fired") or ()),
                 frozenset(k for k, v in counts.items() if int(v or 0) > 0), logged.get("checked"),
                 logged.get("whole_read"), logged.get("escalated"), bool(record.get("error")))


def log_marks(bodies: Iterable[Any]) -> dict[str, Any]:
    """What one run's decoded events show: the signals checked, the whole question read, an escalation."""
    from ..core import events as ev

    checked, whole, escalated = set(), False, False
    for body in bodies:
        if isinstance(body, ev.Signal):
            checked.add(body.signal)
        elif isinstance(body, ev.Message) and body.body == "EvidenceFound" and body.payload.get("step") is None:
            whole = True  # evidence for no step: the whole question's
        elif isinstance(body, ev.Escalate):
            escalated = True
    return {"checked": frozenset(checked), "whole_read": whole, "escalated": escalated}


def traces(folder: Path, records: Sequence[Record], *, read_log: bool) -> dict[str, Trace]:
    """Each record's trace by question id; with ``read_log``, what the folder's event log shows for its run."""
    logged: dict[str, dict[str, Any]] = {}
    path = Path(folder) / EVENTS_FILE
    if read_log and path.exists():
        from ..core import events as ev
        from ..core.log import EventLog

        with EventLog(path, read_only=True) as log:
            for record in records:
                events = log.events(record["run_id"]) if record.get("run_id") else []
                if events:  # a run with no events is not in this log: unknown
                    logged[record["run_id"]] = log_marks(ev.decode(e) for e in events)
    return {str(r["id"]): record_trace(r, logged.get(r.get("run_id") or "")) for r in records}
