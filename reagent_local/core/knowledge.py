"""Statements and knowledge states: immutable records, states derived by folding events.

A statement enters an agent's *local state* through an ``assert`` event and leaves it
through ``retract`` or a rollback; the *global state* is the union of the local
states. Nothing here mutates a state in place for callers: ``fold`` replays events
into a :class:`KnowledgeState`, and the live workspace applies the very events it
logs with the same :class:`StateFolder`, so a replay reproduces the live state.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Protocol

from ..dates import parse_quantity
from ..errors import LogError
from .relations import ALL_RELATIONS, NUMERIC_TOLERANCE

# Event types that change a knowledge state (the fold's whole vocabulary).
ASSERT = "assert"
RETRACT = "retract"
CHECKPOINT = "checkpoint"
ROLLBACK_LOCAL = "rollback_local"
ROLLBACK_GLOBAL = "rollback_global"
STATE_EVENTS = frozenset({ASSERT, RETRACT, CHECKPOINT, ROLLBACK_LOCAL, ROLLBACK_GLOBAL})

KNOWN_RELATIONS = ALL_RELATIONS | frozenset(NUMERIC_TOLERANCE)


@dataclass(frozen=True)
class Statement:
    """One revocable claim: free text, optionally with a structured (subject, relation, value) form."""

    id: str
    text: str
    agent: str = ""
    subject: str | None = None
    relation: str | None = None
    value: str | None = None
    value_number: float | None = None
    unit: str | None = None
    subquestion: str | int | None = None
    provenance: tuple[tuple[str, float], ...] = ()
    confidence: float = 1.0
    time: int | None = None  # logical time it entered a state; None until asserted

    @property
    def structured(self) -> bool:
        """True when subject, relation and value are all known."""
        return self.subject is not None and self.relation is not None and self.value is not None


def _content_id(fields: Mapping[str, Any]) -> str:
    """A short stable id from a statement's content (not its agent or time)."""
    blob = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=list)
    return "s" + hashlib.sha1(blob.encode("utf-8")).hexdigest()[:12]


def make_statement(
    text: str | None = None,
    *,
    subject: str | None = None,
    relation: str | None = None,
    value: str | int | float | None = None,
    agent: str = "",
    subquestion: str | int | None = None,
    provenance: Iterable[tuple[str, float]] = (),
    confidence: float = 1.0,
    id: str | None = None,
) -> Statement:
    """Build a statement from free text, structured parts, or both; validates every field.

    Numbers in ``value`` are parsed with their unit into ``value_number``/``unit``;
    the id defaults to a hash of the content, so the same claim gets the same id.
    """
    parts = (subject, relation, value)
    if any(p is not None for p in parts) and not all(p is not None for p in parts):
        raise ValueError("a structured statement needs subject, relation and value together")
    if relation is not None:
        relation = relation.strip().lower().replace(" ", "_").replace("-", "_")
        if relation not in KNOWN_RELATIONS:
            raise ValueError(f"unknown relation {relation!r}; use one of {sorted(KNOWN_RELATIONS)} (reagent_local.core.relations)")
    if value is not None and not isinstance(value, str):
        value = f"{value:g}" if isinstance(value, float) else str(value)
    if text is None:
        if relation is None:
            raise ValueError("a statement needs text or a structured (subject, relation, value) form")
        text = f"{relation}({subject}) = {value}"
    if not text.strip():
        raise ValueError("a statement's text is empty")
    if not (0.0 <= float(confidence) <= 1.0) or math.isnan(float(confidence)):
        raise ValueError(f"confidence must be in [0, 1], got {confidence!r}")
    prov = tuple((str(pid), float(score)) for pid, score in provenance)
    number, unit = (parse_quantity(value) if value is not None else None) or (None, None)
    content = {"text": text, "subject": subject, "relation": relation, "value": value,
               "subquestion": subquestion, "provenance": prov}
    return Statement(
        id=id or _content_id(content), text=text, agent=agent, subject=subject, relation=relation,
        value=value, value_number=number, unit=unit, subquestion=subquestion, provenance=prov,
        confidence=float(confidence),
    )


def statement_to_dict(statement: Statement) -> dict[str, Any]:
    """A JSON-ready dict (provenance as a list of [passage_id, score])."""
    s = statement  # built by hand: dataclasses.asdict deep-copies and is 10x slower on checkpoints
    return {"id": s.id, "text": s.text, "agent": s.agent, "subject": s.subject, "relation": s.relation,
            "value": s.value, "value_number": s.value_number, "unit": s.unit, "subquestion": s.subquestion,
            "provenance": [[p, score] for p, score in s.provenance], "confidence": s.confidence, "time": s.time}


def statement_from_dict(data: Mapping[str, Any]) -> Statement:
    """Inverse of statement_to_dict."""
    values = dict(data)
    values["provenance"] = tuple((str(p), float(s)) for p, s in values.get("provenance", ()))
    return Statement(**values)


@dataclass(frozen=True)
class KnowledgeState:
    """Every agent's local state at one logical time; agents holding nothing are omitted."""

    locals: Mapping[str, tuple[Statement, ...]] = field(default_factory=lambda: MappingProxyType({}))

    def local(self, agent: str) -> tuple[Statement, ...]:
        """The statements one agent holds, in the order they entered."""
        return self.locals.get(agent, ())

    def global_state(self) -> tuple[Statement, ...]:
        """The union of all local states, ordered by logical time then agent."""
        merged = [s for held in self.locals.values() for s in held]
        return tuple(sorted(merged, key=lambda s: (s.time if s.time is not None else -1, s.agent, s.id)))

    def to_snapshot(self) -> dict[str, Any]:
        """JSON-ready snapshot: statements per agent, and the global state as [agent, id] pairs."""
        return {
            "agents": {a: [statement_to_dict(s) for s in held] for a, held in sorted(self.locals.items())},
            "global": [[s.agent, s.id] for s in self.global_state()],
        }

    @classmethod
    def from_snapshot(cls, snapshot: Mapping[str, Any]) -> "KnowledgeState":
        """Inverse of to_snapshot."""
        agents = {a: tuple(statement_from_dict(d) for d in held) for a, held in snapshot["agents"].items()}
        return _freeze(agents)


def _freeze(agents: Mapping[str, Iterable[Statement]]) -> KnowledgeState:
    return KnowledgeState(MappingProxyType({a: tuple(h) for a, h in sorted(agents.items()) if h}))


class EventLike(Protocol):
    """What the fold reads from a logged event (reagent_local.core.log.Event fits)."""

    seq: int
    time: int
    agent: str
    type: str
    payload: Mapping[str, Any]


class StateFolder:
    """Applies state events one at a time; keeps the snapshot taken at each checkpoint."""

    def __init__(self, start: KnowledgeState | None = None, snapshots: Mapping[int, KnowledgeState] | None = None) -> None:
        self._agents: dict[str, dict[str, Statement]] = {}
        for agent, held in (start or KnowledgeState()).locals.items():
            self._agents[agent] = {s.id: s for s in held}
        self.snapshots: dict[int, KnowledgeState] = dict(snapshots or {})

    def holds(self, agent: str, statement_id: str) -> bool:
        """True when the agent currently holds that statement."""
        return statement_id in self._agents.get(agent, {})

    def get(self, agent: str, statement_id: str) -> Statement:
        """The statement an agent holds under that id (KeyError if it holds none)."""
        return self._agents[agent][statement_id]

    def local(self, agent: str) -> tuple[Statement, ...]:
        """One agent's statements now, without freezing the whole state."""
        return tuple(self._agents.get(agent, {}).values())

    def agents(self) -> list[str]:
        """Agents holding at least one statement."""
        return [a for a, held in self._agents.items() if held]

    def state(self) -> KnowledgeState:
        """The current state, frozen."""
        return _freeze({a: held.values() for a, held in self._agents.items()})

    def apply(self, event: EventLike) -> None:
        """Apply one event; events that are not state events are ignored."""
        kind, payload = event.type, event.payload
        if kind == ASSERT:
            statement = statement_from_dict(payload["statement"])
            held = self._agents.setdefault(event.agent, {})
            if statement.id in held:
                raise LogError(f"event {event.seq}: {event.agent} asserts {statement.id}, which it already holds",
                               hint="the log is corrupt or was written by a buggy writer")
            held[statement.id] = statement
        elif kind == RETRACT:
            sid = payload["statement_id"]
            if not self.holds(event.agent, sid):
                raise LogError(f"event {event.seq}: {event.agent} retracts {sid}, which it does not hold",
                               hint="the log is corrupt or was written by a buggy writer")
            del self._agents[event.agent][sid]
        elif kind == CHECKPOINT:
            self.snapshots[int(payload["checkpoint_id"])] = self.state()
        elif kind in (ROLLBACK_LOCAL, ROLLBACK_GLOBAL):
            target = self._snapshot(event, int(payload["checkpoint_id"]))
            if kind == ROLLBACK_LOCAL:
                self._agents[event.agent] = {s.id: s for s in target.local(event.agent)}
            else:
                self._agents = {a: {s.id: s for s in held} for a, held in target.locals.items()}

    def _snapshot(self, event: EventLike, checkpoint_id: int) -> KnowledgeState:
        if checkpoint_id not in self.snapshots:
            raise LogError(f"event {event.seq} rolls back to checkpoint {checkpoint_id}, which is not before it",
                           hint="the log is corrupt or was written by a buggy writer")
        return self.snapshots[checkpoint_id]


def fold(events: Iterable[EventLike], *, until: int | None = None) -> KnowledgeState:
    """The knowledge state after the given events (only those with time <= until, if given)."""
    folder = StateFolder()
    for event in events:
        if until is not None and event.time > until:
            break
        folder.apply(event)
    return folder.state()


def discarded_between(before: KnowledgeState, after: KnowledgeState) -> list[Statement]:
    """Statements held in ``before`` that ``after`` no longer holds (per agent), in the order they entered."""
    kept = {(agent, s.id) for agent, held in after.locals.items() for s in held}
    return [s for s in before.global_state() if (s.agent, s.id) not in kept]


def with_time(statement: Statement, agent: str, time: int) -> Statement:
    """The statement as it enters ``agent``'s state at ``time``."""
    return replace(statement, agent=agent, time=time)
