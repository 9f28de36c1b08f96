"""The messaging channel: typed messages, rounds, merging, escalation.

Agents never call each other: they ``post`` messages, and ``deliver_round`` delivers
everything posted since the last round together; each agent then reads its inbox.
A message carries a typed body (core/messages.py; the roles' bodies are in
agents/messages.py) and the statements it concerns.

- ``assert``: the statements enter the sender's and the recipients' local states.
  Within a round asserts are merged (a statement already held counts once); two
  asserted statements that conflict are *not* applied but escalated to the
  supervisor as a :class:`ConflictRecord`, which carries the bodies of the messages
  that met. So steps solved in the same round meet here, and so do the two roads.
- ``reject``: the statements leave the recipients holding them; a reject addressed to
  the supervisor is an escalation instead (the statements cannot all stand: the
  supervisor decides which go; the loop sends none since the assembler's escalations were removed).
- ``inform`` and ``challenge`` change no state; their recipients act on them.

Every message, round and escalation is an event in the log; the logical clock that
orders them is the workspace's (core/clock.py).

The rule for what goes through it: messages carry what changes the knowledge state
(asserts, rejects, escalations, challenges) or what the trace must show one role
handing another (evidence, a plan, what an answer stood on), and nothing else. What
changes the knowledge state is posted and delivered in a round, where it can meet what
else was said; an ``inform`` its recipient reads at once is handed over (:meth:`Channel.hand`:
logged, no round). A role asking another for a decision (the supervisor's rollback plan,
the controller's skip or override, the decomposer's plan)
is a plain call, and what the decision changes travels as messages or events.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from . import events as ev
from .conflicts import ConflictChecker
from .knowledge import Statement
from .messages import MESSAGE_TYPES, MessageBody
from .workspace import Workspace

BROADCAST = "*"
CHANNEL = "channel"  # the agent name the channel logs its rounds and escalations under


@dataclass(frozen=True)
class Message:
    """A typed message; ``time`` and ``seq`` are stamped when it is posted."""

    type: str
    sender: str
    recipients: tuple[str, ...]
    statements: tuple[Statement, ...] = ()
    body: MessageBody | None = None
    time: int | None = None
    seq: int | None = None

    def __post_init__(self) -> None:
        if self.type not in MESSAGE_TYPES:
            raise ValueError(f"unknown message type {self.type!r}; use one of {MESSAGE_TYPES}")
        if self.body is not None and self.body.TYPE != self.type:
            raise ValueError(f"a {type(self.body).__name__} travels as {self.body.TYPE!r}, not {self.type!r}")
        if isinstance(self.recipients, str) or not self.recipients:
            raise ValueError(f"recipients must be a non-empty tuple of agent names (or ({BROADCAST!r},))")
        if self.type in ("assert", "reject") and not self.statements:
            raise ValueError(f"an {self.type!r} message needs the statements it concerns")

    @classmethod
    def of(cls, body: MessageBody, sender: str, recipients: tuple[str, ...],
           statements: tuple[Statement, ...] = ()) -> "Message":
        """A message of the type its body travels as."""
        return cls(body.TYPE, sender, tuple(recipients), tuple(statements), body)

    def addressed_to(self, agent: str) -> bool:
        """True when ``agent`` is a recipient (or the message is a broadcast)."""
        return BROADCAST in self.recipients or agent in self.recipients

    def why(self) -> str:
        """The reason this message gives (a reject's), or who sent it."""
        return (self.body.why() if self.body is not None else "") or f"rejected by {self.sender}"


@dataclass(frozen=True)
class ConflictRecord:
    """Statements that cannot all stand, escalated to the supervisor by the channel."""

    statements: tuple[Statement, ...]
    reason: str
    round: int
    message_seqs: tuple[int, ...]
    seq: int  # the 'escalate' event
    kind: str = "concurrent"  # concurrent asserts, or the kind a reject to the supervisor names
    source: str = "channel"  # who raised it: the channel, or the sender of the reject
    bodies: tuple[MessageBody | None, ...] = ()  # what the messages that met (or the reject) carried


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

    def __init__(self, workspace: Workspace, checker: ConflictChecker | None = None,
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
        body = message.body
        event = self.workspace.record(message.sender, ev.Message(
            kind=message.type, recipients=message.recipients, statements=message.statements,
            payload=body.to_payload() if body is not None else {}, body=type(body).__name__ if body is not None else ""))
        posted = replace(message, time=event.time, seq=event.seq)
        self._pending.append(posted)
        return posted

    def hand(self, message: Message) -> Message:
        """Log an ``inform`` its recipients read at once (no round: it changes no state); returns it stamped."""
        if message.type != "inform":
            raise ValueError(f"only an inform is handed over without a round, not {message.type!r}")
        body = message.body
        event = self.workspace.record(message.sender, ev.Message(
            kind=message.type, recipients=message.recipients, statements=message.statements,
            payload=body.to_payload() if body is not None else {}, body=type(body).__name__ if body is not None else ""))
        return replace(message, time=event.time, seq=event.seq)

    def deliver_round(self) -> RoundResult:
        """Deliver every pending message: merge asserts, escalate conflicts, apply the rest, then rejects."""
        self.round += 1
        messages, self._pending = self._pending, []
        candidates = self._new_assertions(messages)
        source = {id(s): m for m, s, _ in candidates}
        conflicts = self.checker.find_conflicting_pairs([s for _, s, _ in candidates])
        blocked = {id(s) for a, b, _ in conflicts for s in (a, b)}
        to_apply = [(m, s, agents) for m, s, agents in candidates if id(s) not in blocked]
        round_event = self.workspace.record(CHANNEL, ev.Round(
            round=self.round, messages=tuple(m.seq for m in messages),
            applied=tuple((a, s.id) for _, s, agents in to_apply for a in agents),
            escalated=tuple(((a.agent, a.id), (b.agent, b.id)) for a, b, _ in conflicts)))
        applied = tuple(self.workspace.assert_statement(agent, s, parent_seq=m.seq)
                        for m, s, agents in to_apply for agent in agents)
        retracted = tuple(self._apply_rejects(messages))
        escalations = [self._escalate((a, b), v.reason, (source[id(a)], source[id(b)]), round_event.seq)
                       for a, b, v in conflicts]
        escalations += [self._escalate(m.statements, m.why(), (m,), round_event.seq,
                                       kind=m.body.escalation() if m.body is not None else "reject", source=m.sender)
                        for m in messages if m.type == "reject" and self.supervisor in m.recipients]
        return RoundResult(self.round, tuple(messages), applied, retracted, tuple(escalations))

    def _new_assertions(self, messages: list[Message]) -> list[tuple[Message, Statement, list[str]]]:
        """Asserted statements with the agents (sender, named recipients) not holding them yet; merged."""
        out: list[tuple[Message, Statement, list[str]]] = []
        seen: set[tuple[str, str]] = set()
        for m in messages:
            if m.type != "assert":
                continue
            targets = list(dict.fromkeys(a for a in (m.sender, *m.recipients) if a != BROADCAST))
            for s in m.statements:
                agents = [a for a in targets if (a, s.id) not in seen and not self.workspace.holds(a, s.id)]
                if agents:
                    seen.update((a, s.id) for a in agents)
                    out.append((m, replace(s, agent=m.sender), agents))  # a distinct object per sender
        return out

    def _apply_rejects(self, messages: list[Message]) -> list[Statement]:
        retracted = []
        for m in messages:
            if m.type != "reject" or self.supervisor in m.recipients:
                continue
            reason = m.why()
            for s in m.statements:
                for agent in self.workspace.holders(s.id):
                    if m.addressed_to(agent):
                        retracted.append(self.workspace.retract(agent, s.id, reason, parent_seq=m.seq))
        return retracted

    def _escalate(self, statements: tuple[Statement, ...], reason: str, messages: tuple[Message, ...],
                  round_seq: int, kind: str = "concurrent", source: str = "channel") -> ConflictRecord:
        messages = tuple({id(m): m for m in messages}.values())  # one message may assert both sides
        seqs = tuple(sorted(m.seq for m in messages if m.seq is not None))
        event = self.workspace.record(CHANNEL, ev.Escalate(
            to=self.supervisor, round=self.round, reason=reason, messages=seqs, statements=tuple(statements),
            kind=kind, source=source), parent_seq=round_seq)
        return ConflictRecord(tuple(statements), reason, self.round, seqs, event.seq, kind, source,
                              tuple(m.body for m in messages))
