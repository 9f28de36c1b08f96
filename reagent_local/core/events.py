"""Typed events: one frozen dataclass per event kind, written and read through this module only.

A body's class-level ``KIND`` is the ``events.type`` string in the log; ``to_payload()``
gives the JSON object stored as ``events.payload`` and ``from_payload()`` reads it back.
Conversion is generic, driven by each field's type hint: statements go through
``statement_to_dict``/``statement_from_dict``, tuples come back as tuples, ``Literal``
fields are checked. Constructing a body normalises it the same way (a list given for a
tuple field becomes a tuple), so ``decode`` of what was written equals what was written.

    from reagent_local.core import events as ev
    workspace.record("verifier", ev.Decision(step=1, decision="retry", answer="Nevada", confidence=0.3))
    body = ev.decode(event)   # an ev.Decision, or ev.UnknownEvent for a kind this module does not know
"""

from __future__ import annotations

import collections.abc
import types
import typing
from dataclasses import MISSING, dataclass, field, fields
from functools import cache
from typing import Any, Callable, ClassVar, Literal, Mapping, TypeVar, Union

from .knowledge import EventLike, Statement, statement_from_dict, statement_to_dict

Pair = tuple[str, str]  # (agent, statement id)


class EventBody:
    """Base of every typed event body; subclasses are frozen, keyword-only dataclasses."""

    KIND: ClassVar[str] = ""

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        for f in fields(self):
            object.__setattr__(self, f.name, _load(getattr(self, f.name), hints[f.name], f.name))

    def to_payload(self) -> dict[str, Any]:
        """The JSON-ready payload, one key per field."""
        return {f.name: _dump(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_payload(cls: type[B], payload: Mapping[str, Any]) -> B:
        """Read a logged payload back (missing keys take the field's default; unknown keys are ignored)."""
        missing = [f.name for f in fields(cls)
                   if f.name not in payload and f.default is MISSING and f.default_factory is MISSING]
        if missing:
            raise ValueError(f"no {', '.join(missing)} in the payload")
        return cls(**{f.name: payload[f.name] for f in fields(cls) if f.name in payload})


EVENT_TYPES: dict[str, type[EventBody]] = {}  # kind -> class, filled by @_kind
B = TypeVar("B", bound=EventBody)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _kind(kind: str) -> Callable[[type[B]], type[B]]:
    """Class decorator: a frozen keyword-only dataclass logged as ``kind``, added to EVENT_TYPES."""
    def wrap(cls: type[B]) -> type[B]:
        cls.KIND = kind
        EVENT_TYPES[kind] = made = dataclass(frozen=True, kw_only=True)(cls)
        return made
    return wrap


def _dump(value: Any) -> Any:
    if isinstance(value, Statement):
        return statement_to_dict(value)
    if isinstance(value, (tuple, list)):
        return [_dump(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _dump(v) for k, v in value.items()}
    return value


def _load(value: Any, hint: Any, name: str) -> Any:
    """``value`` (JSON-shaped or already typed) as the type ``hint`` describes."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        return _load(value, next(a for a in args if a is not type(None)), name)
    if origin is Literal:
        if value not in args:
            raise ValueError(f"{name} must be one of {args}, got {value!r}")
        return value
    if origin is tuple:
        if not isinstance(value, (tuple, list)):
            raise TypeError(f"{name} must be a sequence, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_load(v, args[0], name) for v in value)
        if len(value) != len(args):
            raise ValueError(f"{name} must have {len(args)} items, got {value!r}")
        return tuple(_load(v, a, name) for v, a in zip(value, args))
    if origin in (dict, collections.abc.Mapping):
        if not isinstance(value, Mapping):
            raise TypeError(f"{name} must be a mapping, got {value!r}")
        return _dump(value)  # JSON-shaped now, so it equals itself after a trip through the log
    if hint is Statement:
        return value if isinstance(value, Statement) else statement_from_dict(value)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, got {value!r}")
        return float(value)
    if hint in (int, str, bool) and (not isinstance(value, hint) or (hint is int and isinstance(value, bool))):
        raise TypeError(f"{name} must be {hint.__name__}, got {value!r}")
    return value


# -- state events (the fold in core/knowledge.py reads these payload keys) ----------------------
@_kind("assert")
class Assert(EventBody):
    """A statement enters the event agent's local state (stamped with that agent and the event's time)."""
    statement: Statement


@_kind("retract")
class Retract(EventBody):
    """A statement leaves the event agent's local state."""
    statement_id: str
    reason: str


@_kind("checkpoint")
class Checkpoint(EventBody):
    """A checkpoint was taken (its snapshot is in the checkpoints table)."""
    checkpoint_id: int
    label: str


@_kind("rollback_local")
class RollbackLocal(EventBody):
    """One agent's local state reverts to a checkpoint."""
    checkpoint_id: int
    reason: str
    discarded: tuple[str, ...] = ()
    restored: tuple[str, ...] = ()


@_kind("rollback_global")
class RollbackGlobal(EventBody):
    """Every agent reverts to a checkpoint."""
    checkpoint_id: int
    reason: str
    discarded: tuple[Pair, ...] = ()
    restored: tuple[Pair, ...] = ()


# -- channel ------------------------------------------------------------------------------------
@_kind("message")
class Message(EventBody):
    """A message posted on the channel; ``payload`` is the sender's free-form content."""
    kind: Literal["assert", "inform", "reject", "challenge"]
    recipients: tuple[str, ...]
    statements: tuple[Statement, ...] = ()
    payload: Mapping[str, Any] = field(default_factory=dict)


@_kind("round")
class Round(EventBody):
    """A delivery round: the messages delivered, the asserts applied, the conflicting pairs escalated."""
    round: int
    messages: tuple[int, ...] = ()
    applied: tuple[Pair, ...] = ()
    escalated: tuple[tuple[Pair, Pair], ...] = ()


@_kind("escalate")
class Escalate(EventBody):
    """Statements that cannot all stand, sent to the supervisor (concurrent asserts, or a reject addressed to it)."""
    to: str
    round: int
    reason: str
    messages: tuple[int, ...] = ()
    statements: tuple[Statement, ...] = ()
    kind: str = "concurrent"  # or the escalation kind a reject to the supervisor names
    source: str = "channel"  # the channel, or the sender of that reject


# -- judging and the loop's decisions -----------------------------------------------------------
@_kind("judgement")
class Judgement(EventBody):
    """One judge result on a pair of statements."""
    a: Pair
    b: Pair
    a_text: str
    b_text: str
    conflict: bool
    reason: str
    cached: bool = False


@_kind("conflict_set")
class ConflictSet(EventBody):
    """A minimal conflict set, the statement given up and the checkpoint to roll back to."""
    statements: tuple[str, ...]
    texts: tuple[str, ...]
    discard: str
    reason: str
    checkpoint: int | None = None
    affected_steps: tuple[int, ...] = ()
    reassert: tuple[str, ...] = ()  # statement ids re-asserted after the rollback
    source: str = ""  # who found it: "channel", "assembler", "two-roads", ...


@_kind("override")
class Override(EventBody):
    """The controller settles a step whose retries ran out."""
    step: int
    decision: str
    answer: str = ""


@_kind("skipped")
class Skipped(EventBody):
    """A step not attempted (e.g. it depends on an unanswered step)."""
    step: int
    reason: str


@_kind("fallback_answer")
class FallbackAnswer(EventBody):
    """The whole question answered from its passages when the plan gave no answer."""
    answer: str
    passages: tuple[str, ...] = ()
    rejected: str = ""  # the candidate turned down, when the answer is 'unknown'
    reason: str = ""


@_kind("budget_exhausted")
class BudgetExhausted(EventBody):
    """The call or time budget ran out; the best answer so far."""
    what: str
    answer: str


@_kind("invalid_output")
class InvalidOutput(EventBody):
    """A role's model output could not be used."""
    error: str


@_kind("llm_error")
class LLMError(EventBody):
    """A model call returned unusable output (the raw text, cut)."""
    error: str
    raw: str = ""


@_kind("decomposition_failed")
class DecompositionFailed(EventBody):
    """The decomposer's output was unusable; the question became one step."""
    error: str
    raw: str = ""


@_kind("plan")
class Plan(EventBody):
    """A (re)plan by the decomposer: sub-questions and, per step, the steps it depends on (0-based)."""
    subquestions: tuple[str, ...]
    depends_on: tuple[tuple[int, ...], ...] = ()
    attempt: int = 1
    reason: str = ""


@_kind("decision")
class Decision(EventBody):
    """A role's decision on one attempt at a step (0-based)."""
    step: int
    decision: Literal["accept", "retry", "give_up"]
    answer: str
    confidence: float
    reasons: tuple[str, ...] = ()
    query: str = ""


@_kind("rule_fired")
class RuleFired(EventBody):
    """A named question-shape rule changed what the loop did."""
    rule: str
    stage: str
    step: int | None = None
    detail: str = ""


@_kind("signal")
class Signal(EventBody):
    """A conflict signal checked (``fired``: it found a problem), with the values it compared."""
    signal: str
    fired: bool
    step: int | None = None
    detail: str = ""
    values: Mapping[str, Any] = field(default_factory=dict)


@_kind("answer")
class Answer(EventBody):
    """The run's final answer, whether it is uncertain and why, and the rules that shaped it."""
    answer: str
    uncertain: bool = False
    reason: str = ""
    rules: tuple[str, ...] = ()


@dataclass(frozen=True)
class UnknownEvent:
    """An event this module cannot read (a foreign kind, or a payload that does not fit its class)."""

    kind: str
    payload: Mapping[str, Any]
    error: str = ""  # why a known kind did not decode; "" for an unknown kind

    def to_payload(self) -> dict[str, Any]:
        """The payload as logged."""
        return dict(self.payload)


Body = Union[EventBody, UnknownEvent]
STATE_KINDS = frozenset({Assert.KIND, Retract.KIND, Checkpoint.KIND, RollbackLocal.KIND, RollbackGlobal.KIND})


def decode(event: EventLike, *, strict: bool = False) -> Body:
    """The typed body of a logged event (an ``Event``, or anything with ``type`` and ``payload``).

    An unknown kind gives ``UnknownEvent(kind, payload)``; a known kind whose payload does not
    fit gives ``UnknownEvent`` with ``error`` set, or raises ``ValueError`` when ``strict``.
    """
    cls = EVENT_TYPES.get(event.type)
    if cls is None:
        return UnknownEvent(event.type, dict(event.payload))
    try:
        return cls.from_payload(event.payload)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if strict:
            raise ValueError(f"{event.type!r} event does not fit {cls.__name__}: {exc}") from exc
        return UnknownEvent(event.type, dict(event.payload), error=str(exc))
