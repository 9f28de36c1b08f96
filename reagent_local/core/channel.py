"""The messaging channel: typed messages, rounds, merging, escalation, and the logical clock.

Agents never call each other: they ``post`` messages, and ``deliver_round`` delivers
everything posted since the last round together. Within a round, asserted
statements are merged (the same statement posted twice counts once); two asserted
statements that conflict are *not* applied but escalated to the supervisor as a
:class:`ConflictRecord`; rejects retract the statements from the recipients holding
them. Every message, round and escalation is an event in the log.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Mapping

from .conflicts import ConflictChecker
from .knowledge import Statement, statement_to_dict

if TYPE_CHECKING:
    from .workspace import Workspace

MESSAGE_TYPES = ("assert", "inform", "reject", "challenge")
BROADCAST = "*"
MESSAGE, ROUND, ESCALATE = "message", "round", "escalate"


class LogicalClock:
    """A counter that totally orders a run's events: each event takes the next tick."""

    def __init__(self, start: int = 0) -> None:
        self._now = start
        self._lock = threading.Lock()

    @property
    def now(self) -> int:
        """The last time handed out."""
        return self._now

    def tick(self) -> int:
        """Advance and return the new time."""
        with self._lock:
            self._now += 1
            return self._now


@dataclass(frozen=True)
class Message:
    """A typed message; ``time`` and ``seq`` are stamped when it is posted."""

    type: str
    sender: str
    recipients: tuple[str, ...]
    statements: tuple[Statement, ...] = ()
    payload: Mapping[str, Any] = field(default_factory=dict)
    time: int | None = None
    seq: int | None = None

    def __post_init__(self) -> None:
        if self.type not in MESSAGE_TYPES:
            raise ValueError(f"unknown message type {self.type!r}; use one of {MESSAGE_TYPES}")
        if isinstance(self.recipients, str) or not self.recipients:
            raise ValueError(f"recipients must be a non-empty tuple of agent names (or ({BROADCAST!r},))")
        if self.type in ("assert", "reject") and not self.statements:
            raise ValueError(f"an {self.type!r} message needs the statements it concerns")

    def addressed_to(self, agent: str) -> bool:
        """True when ``agent`` is a recipient (or the message is a broadcast)."""
        return BROADCAST in self.recipients or agent in self.recipients


@dataclass(frozen=True)
class ConflictRecord:
    """Concurrent asserts that conflict, escalated to the supervisor instead of applied."""

    statements: tuple[Statement, ...]
    reason: str
    round: int
    message_seqs: tuple[int, ...]
    seq: int  # the 'escalate' event


@dataclass(frozen=True)
class RoundResult:
    """What one delivery round did."""

    round: int
    delivered: tuple[Message, ...]
    applied: tuple[Statement, ...]
    retracted: tuple[Statement, ...]
    escalations: tuple[ConflictRecord, ...]

    def inbox(self, agent: str) -> tuple[Message, ...]:
        """The messages of this round addressed to ``agent``."""
        return tuple(m for m in self.delivered if m.addressed_to(agent))


class Channel:
    """Queues posted messages and delivers them in rounds through a Workspace."""

    def __init__(self, workspace: "Workspace", checker: ConflictChecker | None = None,
                 supervisor: str = "supervisor") -> None:
        self.workspace = workspace
        self.checker = checker or ConflictChecker()
        self.supervisor = supervisor
        self.round = 0
        self._pending: list[Message] = []

    @property
    def pending(self) -> tuple[Message, ...]:
        """Messages posted since the last round."""
        return tuple(self._pending)

    def post(self, message: Message) -> Message:
        """Log the message and queue it for the next round; returns it with time and seq."""
        event = self.workspace.note(message.sender, MESSAGE, {
            "kind": message.type, "recipients": list(message.recipients),
            "statements": [statement_to_dict(s) for s in message.statements], "payload": dict(message.payload),
        })
        posted = replace(message, time=event.time, seq=event.seq)
        self._pending.append(posted)
        return posted

    def deliver_round(self) -> RoundResult:
        """Deliver every pending message: merge asserts, escalate conflicting ones, apply the rest, then rejects."""
        self.round += 1
        messages, self._pending = self._pending, []
        candidates: list[tuple[Message, Statement]] = []
        seen: set[tuple[str, str]] = set()
        for m in messages:
            for s in m.statements if m.type == "assert" else ():
                if (m.sender, s.id) not in seen and not self.workspace.holds(m.sender, s.id):
                    seen.add((m.sender, s.id))
                    candidates.append((m, replace(s, agent=m.sender)))  # a distinct object per sender
        source = {id(s): m for m, s in candidates}
        conflicts = self.checker.find_conflicting_pairs([s for _, s in candidates])
        blocked = {id(s) for a, b, _ in conflicts for s in (a, b)}
        to_apply = [(m, s) for m, s in candidates if id(s) not in blocked]
        round_event = self.workspace.note("channel", ROUND, {
            "round": self.round, "messages": [m.seq for m in messages],
            "applied": [[s.agent, s.id] for _, s in to_apply],
            "escalated": [[[a.agent, a.id], [b.agent, b.id]] for a, b, _ in conflicts],
        })
        applied = tuple(self.workspace.assert_statement(m.sender, s, parent_seq=m.seq) for m, s in to_apply)
        retracted = tuple(self._apply_rejects(messages))
        escalations = tuple(self._escalate(a, b, v.reason, source, round_event.seq) for a, b, v in conflicts)
        return RoundResult(self.round, tuple(messages), applied, retracted, escalations)

    def _apply_rejects(self, messages: list[Message]) -> list[Statement]:
        retracted = []
        for m in messages:
            if m.type != "reject":
                continue
            reason = str(m.payload.get("reason") or f"rejected by {m.sender}")
            for s in m.statements:
                for agent in self.workspace.holders(s.id):
                    if m.addressed_to(agent):
                        retracted.append(self.workspace.retract(agent, s.id, reason, parent_seq=m.seq))
        return retracted

    def _escalate(self, a: Statement, b: Statement, reason: str, source: dict[int, Message],
                  round_seq: int) -> ConflictRecord:
        seqs = tuple(sorted({source[id(a)].seq, source[id(b)].seq}))
        event = self.workspace.note("channel", ESCALATE, {
            "to": self.supervisor, "round": self.round, "reason": reason, "messages": list(seqs),
            "statements": [statement_to_dict(a), statement_to_dict(b)],
        }, parent_seq=round_seq)
        return ConflictRecord((a, b), reason, self.round, seqs, event.seq)
