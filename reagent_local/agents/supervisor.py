"""Supervisor (A_S): turns an escalated conflict into a global rollback plan, and settles the two roads.

Conflicts reach it through the channel: concurrent asserts that contradict each other
in one round, and contradictions the assembler finds across steps (sent as a reject
addressed to the supervisor), among them an answer a later step could find nothing
about, which is given up while its passages may be read again. For each, it takes the minimal conflict set, gives up
the statement with the lowest confidence times its agent's reliability, and plans the
rollback: the checkpoint before that statement entered, the steps to solve again (the
discarded one and every step using its answer), and the statements the rollback would
take with it that the conflict does not touch (re-asserted as they were).

The two roads to an answer (the chain of steps, and the whole question read over the
run's evidence) conflict when they disagree; :meth:`Supervisor.settle_roads` weighs
them with evidence (answer type, grounding, the model's confidence) and, when that is
not clear, one grammar-bound model call that chooses between the two answers. A chain
that loses is rolled back at its weakest step (:meth:`Supervisor.roll_back_chain`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from ..core.channel import ConflictRecord
from ..core.conflicts import ConflictChecker, minimal_conflict_set
from ..core.knowledge import KnowledgeState, Statement, discarded_between
from ..core.log import Checkpoint
from ..errors import LLMOutputError
from ..reasoning.plan import SubQuestion, dependents
from ..runtime.prompts import render_messages
from . import PROMPTS, Caller
from .controller import Controller
from .evidence import Evidence, format_evidence
from .schemas import option_answer

AGENT = "supervisor"
BRIDGE_MARGIN = 0.2  # how much stronger a bridge's foundation must be to survive the step that could not find it


class StateView(Protocol):
    """What the supervisor reads of the run's state (a Workspace fits)."""

    def state(self) -> KnowledgeState: ...

    def state_at(self, time: int) -> KnowledgeState: ...

    def checkpoint_before(self, statements: Sequence[Statement]) -> Checkpoint: ...


@dataclass(frozen=True)
class RollbackPlan:
    """The supervisor's decision on one conflict; the loop carries it out."""

    conflict_set: tuple[Statement, ...]
    discard: Statement
    keep: tuple[Statement, ...]
    checkpoint: Checkpoint
    affected_steps: tuple[int, ...]
    reassert: tuple[Statement, ...]
    reason: str
    source: str
    keep_passages: bool = False  # the discarded answer goes, the passages it was read from may be read again


@dataclass(frozen=True)
class Road:
    """One road's answer to the whole question, with what speaks for and against it."""

    name: str  # "chain" or "whole question"
    answer: str
    statement: Statement
    confidence: float
    problem: str | None = None  # why the answer does not fit the question, if it does not
    grounded: bool = True  # the answer is in the run's passages
    trusted: bool = False  # for the chain: decided by a rule from checked, sure steps
    note: str = ""  # how the answer came about, for the trace


@dataclass(frozen=True)
class RoadsVerdict:
    """Which road's answer stands, and why."""

    winner: Road
    loser: Road
    reason: str
    judged: bool = False  # a model call chose


class Supervisor:
    """Chooses what to give up and where to roll back to."""

    def __init__(self, checker: ConflictChecker, controller: Controller, call: Caller | None = None, *,
                 margin: float = 0.3, trust: float = 0.5) -> None:
        self.checker = checker
        self.controller = controller
        self.call = call
        self.margin = margin  # when both roads are in doubt, a confidence lead this large settles them
        self.trust = trust  # a road answer at least this sure is not in doubt

    def conflict_set(self, conflict: ConflictRecord) -> tuple[Statement, ...]:
        """The minimal conflict set (value conflicts through the core; a broken bridge is already minimal)."""
        if conflict.kind in ("bridge", "unfounded") or len(conflict.statements) < 3:
            return tuple(conflict.statements)
        return tuple(minimal_conflict_set(list(conflict.statements), self.checker))

    def strength(self, statement: Statement) -> float:
        """Confidence times the reliability of the agent that made the statement."""
        return statement.confidence * self.controller.score(statement.agent)

    def choose(self, conflict: ConflictRecord, mcs: Sequence[Statement]) -> Statement:
        """The statement to give up: the weakest (the latest on a tie)."""
        if conflict.kind == "unfounded":  # the answer a later step could find nothing about
            return mcs[0]
        if conflict.kind == "bridge":
            # the later step was built on the earlier one: doubt the foundation first,
            # unless it is clearly stronger than the step that failed to find it
            earlier, later = mcs[0], mcs[1]
            return earlier if self.strength(earlier) <= self.strength(later) + BRIDGE_MARGIN else later
        return min(mcs, key=lambda s: (self.strength(s), -(s.time or 0)))

    def resolve(self, conflict: ConflictRecord, view: StateView, plan: Sequence[SubQuestion]) -> RollbackPlan:
        """Plan the global rollback that settles one conflict."""
        mcs = self.conflict_set(conflict)
        discard = self.choose(conflict, mcs)
        keep = tuple(s for s in mcs if s.id != discard.id)
        checkpoint = view.checkpoint_before([discard])
        step = discard.subquestion
        affected = tuple(sorted(dependents(plan, step))) if isinstance(step, int) else ()
        doomed = discarded_between(view.state(), view.state_at(checkpoint.time))
        reassert = tuple(s for s in doomed if isinstance(s.subquestion, int) and s.subquestion not in affected)
        return RollbackPlan(mcs, discard, keep, checkpoint, affected, reassert, conflict.reason, conflict.source,
                            keep_passages=conflict.kind == "unfounded")

    def settle_roads(self, question: str, chain: Road, whole: Road, evidence: Evidence) -> RoadsVerdict:
        """The road whose answer stands: the answers' type and grounding, then trust, then confidence, then
        (only when both roads are in doubt and close) one grammar-bound model call choosing between the two."""
        for label, ok in (("does not fit the question", lambda r: r.problem is None),
                          ("is not in the passages", lambda r: r.grounded)):
            if ok(chain) != ok(whole):
                winner, loser = (chain, whole) if ok(chain) else (whole, chain)
                return RoadsVerdict(winner, loser, f"the {loser.name} answer {label}")
        if chain.trusted:
            return RoadsVerdict(chain, whole, f"the chain is trusted ({chain.note})")
        if whole.confidence >= self.trust:
            return RoadsVerdict(whole, chain, f"the chain is in doubt ({chain.note}); the whole question's answer "
                                              f"is sure ({whole.confidence:.2f})")
        lead = chain.confidence - whole.confidence
        if abs(lead) >= self.margin or self.call is None:
            winner, loser = (chain, whole) if lead >= 0 else (whole, chain)
            return RoadsVerdict(winner, loser, f"both roads are in doubt; the {winner.name} answer is surer "
                                               f"({winner.confidence:.2f} against {loser.confidence:.2f})")
        # the whole question's own prompt with one line more: the model has just read it (its KV is reused)
        choice = f"{question}\nChoose the answer the passages support: {chain.answer!r} or {whole.answer!r}"
        messages = render_messages(PROMPTS, "answer", evidence=format_evidence(evidence), question=choice)
        try:
            chosen = self.call(AGENT, messages, option_answer((chain.answer, whole.answer)), max_tokens=40).value.answer
        except LLMOutputError as exc:  # logged by the call: the surer road stands, as without a model
            winner, loser = (chain, whole) if lead >= 0 else (whole, chain)
            return RoadsVerdict(winner, loser, f"both roads are in doubt; the model's choice was unusable "
                                               f"({str(exc).splitlines()[0]}), so the surer {winner.name} answer "
                                               f"stands", judged=True)
        winner, loser = (chain, whole) if chosen == chain.answer else (whole, chain)
        return RoadsVerdict(winner, loser, f"both roads are in doubt; asked to choose, the model took the "
                                           f"{winner.name} answer", judged=True)

    def roll_back_chain(self, chain: Sequence[Statement], view: StateView, plan: Sequence[SubQuestion],
                        reason: str) -> RollbackPlan:
        """The chain lost: give up its weakest step's statement and redo that step and every step using it."""
        weakest = min(chain, key=lambda s: (self.strength(s), -(s.time or 0)))
        checkpoint = view.checkpoint_before([weakest])
        affected = tuple(sorted(dependents(plan, weakest.subquestion))) if isinstance(weakest.subquestion, int) else ()
        doomed = discarded_between(view.state(), view.state_at(checkpoint.time))
        reassert = tuple(s for s in doomed if isinstance(s.subquestion, int) and s.subquestion not in affected)
        return RollbackPlan(tuple(chain), weakest, (), checkpoint, affected, reassert, reason, "two-roads")
