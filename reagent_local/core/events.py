"""Typed events: one frozen dataclass per event kind, written and read through this module only.

A body's class-level ``KIND`` is the ``events.type`` string in the log; ``to_payload()``
gives the JSON object stored as ``events.payload`` and ``from_payload()`` reads it back.
Conversion is generic, driven by each field's type hint (core/records.py, shared with
the message bodies of core/messages.py): constructing a body normalises it the same way
(a list given for a tuple field becomes a tuple), so ``decode`` of what was written
equals what was written.

    from reagent_local.core import events as ev
    workspace.record("verifier", ev.Decision(step=1, decision="retry", answer="Nevada", confidence=0.3))
    body = ev.decode(event)   # an ev.Decision, or ev.UnknownEvent for a kind this module does not know
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Literal, Mapping, TypeVar, Union

from .knowledge import EventLike, Statement
from .records import Record

Pair = tuple[str, str]  # (agent, statement id)


class EventBody(Record):
    """Base of every typed event body; subclasses are frozen, keyword-only dataclasses."""

    KIND: ClassVar[str] = ""


EVENT_TYPES: dict[str, type[EventBody]] = {}  # kind -> class, filled by @_kind
B = TypeVar("B", bound=EventBody)


def _kind(kind: str) -> Callable[[type[B]], type[B]]:
    """Class decorator: a frozen keyword-only dataclass logged as ``kind``, added to EVENT_TYPES."""
    def wrap(cls: type[B]) -> type[B]:
        cls.KIND = kind
        EVENT_TYPES[kind] = made = dataclass(frozen=True, kw_only=True)(cls)
        return made
    return wrap


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
    """A message posted on the channel; ``payload`` is its typed body's payload, ``body`` names the body's class
    (core/messages.py reads it back; "" for a message without a body, or logged before bodies were typed)."""
    kind: Literal["assert", "inform", "reject", "challenge"]
    recipients: tuple[str, ...]
    statements: tuple[Statement, ...] = ()
    payload: Mapping[str, Any] = field(default_factory=dict)
    body: str = ""


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
    """The decomposer's plan: sub-questions and, per step, the steps it depends on (0-based). ``attempt`` and
    ``reason``: a plan made again and what failed, in logs written before replanning was removed."""
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


@_kind("rewrite")
class Rewrite(EventBody):
    """A question of a conversation as asked and as the agents read it (a follow-up made standalone from the
    earlier turns by agents/rewriter.py before the run; a first turn is logged unchanged, without a call)."""
    question: str
    standalone: str
    conversation: str = ""
    turn: int = 1  # 1-based place in the conversation
    earlier: tuple[str, ...] = ()  # the earlier turns' questions it was read against
    error: str = ""  # the rewriter's output was unusable: the question stands as asked


@_kind("answer")
class Answer(EventBody):
    """The run's final answer, whether it is uncertain and why, and the rules that shaped it."""
    answer: str
    uncertain: bool = False
    reason: str = ""
    rules: tuple[str, ...] = ()


@_kind("trust")
class TrustScored(EventBody):
    """The supervisor scored the final answer: the probability it is right, and the marks read from it."""
    probability: float | None  # None: no trust model
    threshold: float
    label: str  # "trusted", "not sure", "likely wrong" or "unscored"
    grounded: bool  # a cited passage contains the answer ("not found in the index" when not)
    caught: bool = False  # backtracking fired
    features: Mapping[str, float] = field(default_factory=dict)
    contributions: Mapping[str, float] = field(default_factory=dict)  # each feature's share of the log-odds


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
