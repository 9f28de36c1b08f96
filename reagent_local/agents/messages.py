"""What the roles say to each other: one typed body per message, sent on the channel.

| body | type | from -> to | the recipient acts on it |
|---|---|---|---|
| :class:`PlanMade` | inform | decomposer -> retriever | starts searching for the independent steps |
| :class:`EvidenceFound` | inform | retriever -> verifier (a step), assembler (the whole question) | answers from it |
| :class:`StepAnswer` | assert | verifier -> assembler | the statement enters the assembler's state |
| :class:`Rejection` | reject | verifier -> retriever | searches again with a new query |
| :class:`RoadAnswer` | assert | assembler -> supervisor | two that disagree are escalated; the supervisor settles them |
| :class:`AnswerMade` | inform | assembler -> controller | rewards the agents whose statements stood |
| :class:`Recheck` | challenge | controller -> retriever, verifier | searches afresh / withdraws the statement |

Each body is logged with its payload and read back by ``reagent_local.core.messages.decode``. Logs written
before the assembler's escalations were removed may hold a ``Contradiction`` (a reject from the assembler to
the supervisor): it is no longer registered, so it decodes to None and reads from its raw payload (reason, kind).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.knowledge import Statement
from ..core.messages import MessageBody, body
from ..core.evidence import BuiltOn, Evidence, EvidencePassage, Fact

CHAIN = "chain"  # the road of the plan's steps
WHOLE = "whole question"  # the road of the whole question read at once


@dataclass(frozen=True)
class Road:
    """One road's answer to the whole question, with what speaks for and against it."""

    name: str  # CHAIN or WHOLE
    answer: str
    statement: Statement
    confidence: float
    problem: str | None = None  # why the answer does not fit the question, if it does not
    grounded: bool = True  # the answer is in the run's passages
    trusted: bool = False  # for the chain: the supervisor trusts it (see Supervisor.trust)
    note: str = ""  # how the answer came about, for the trace


@body("inform")
class PlanMade(MessageBody):
    """The decomposer's plan: the sub-questions and, per step, the earlier steps it uses (0-based)."""

    subquestions: tuple[str, ...]
    depends_on: tuple[tuple[int, ...], ...] = ()

    def independent(self) -> list[str]:
        """The sub-questions that use no earlier answer (they can be searched at once)."""
        return [q for q, uses in zip(self.subquestions, self.depends_on) if not uses]


@body("inform")
class EvidenceFound(MessageBody):
    """The retriever's evidence for a step (``step`` None: for the whole question), and what the step builds on."""

    step: int | None
    query: str
    passages: tuple[EvidencePassage, ...] = ()
    facts: tuple[Fact, ...] = ()
    about: tuple[BuiltOn, ...] = ()  # the earlier answers the step builds on, with their own articles

    @classmethod
    def of(cls, step: int | None, evidence: Evidence, about: tuple[BuiltOn, ...] = ()) -> "EvidenceFound":
        """The body for a piece of evidence."""
        return cls(step=step, query=evidence.query, passages=evidence.passages, facts=evidence.facts, about=about)

    @property
    def evidence(self) -> Evidence:
        """The evidence as the readers take it."""
        return Evidence(self.query, self.passages, self.facts)


@body("assert")
class StepAnswer(MessageBody):
    """A step's verified answer (the message's statement), for the assembler."""

    step: int
    answer: str = ""
    query: str = ""


@body("reject")
class Rejection(MessageBody):
    """A local backtrack: the step's answer failed (``reasons``); the retriever is to search again."""

    step: int
    answer: str
    reasons: tuple[str, ...]
    question: str
    query: str
    tried: tuple[str, ...] = ()  # every query the step has searched with
    hints: tuple[str, ...] = ()  # titles of the passages seen, for the new query
    exclude: tuple[str, ...] = ()  # passage ids never to show again
    keep: tuple[str, ...] = ()  # passage ids to read again beside new ones
    subjects: tuple[str, ...] = ()  # whose own articles the retry reads further

    def why(self) -> str:
        """Every reason, in one line."""
        return "; ".join(self.reasons)


@body("assert")
class RoadAnswer(MessageBody):
    """One road's answer to the whole question (the message's statement): two that disagree meet in a round."""

    question: str
    road: Road
    evidence: Evidence | None = None  # the passages the whole question was read over (the supervisor may reread)
    steps: tuple[Statement, ...] = ()  # the chain's step statements (a chain that loses is rolled back at one)


@body("inform")
class AnswerMade(MessageBody):
    """The assembler's answer; the message's statements are the step answers it stood on."""

    answer: str
    rule: str | None = None  # the assemble rule that decided it (None: the model)


@body("challenge")
class Recheck(MessageBody):
    """The controller's challenge: a statement that keeps winning conflicts is checked again with fresh evidence."""

    step: int
    statement: str
    question: str
    exclude: tuple[str, ...] = ()  # passage ids the step must not read again
