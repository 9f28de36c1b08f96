"""Supervisor (A_S): turns an escalated conflict into a global rollback plan.

Conflicts reach it through the channel: concurrent asserts that contradict each other
in one round, and contradictions the assembler finds across steps (sent as a reject
addressed to the supervisor). For each, it takes the minimal conflict set, gives up
the statement with the lowest confidence times its agent's reliability, and plans the
rollback: the checkpoint before that statement entered, the steps to solve again (the
discarded one and every step using its answer), and the statements the rollback would
take with it that the conflict does not touch (re-asserted as they were).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from ..core.channel import ConflictRecord
from ..core.conflicts import ConflictChecker, minimal_conflict_set
from ..core.knowledge import KnowledgeState, Statement, discarded_between
from ..core.log import Checkpoint
from ..plan import SubQuestion, dependents
from .controller import Controller

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


class Supervisor:
    """Chooses what to give up and where to roll back to."""

    def __init__(self, checker: ConflictChecker, controller: Controller) -> None:
        self.checker = checker
        self.controller = controller

    def conflict_set(self, conflict: ConflictRecord) -> tuple[Statement, ...]:
        """The minimal conflict set (value conflicts through the core; a broken bridge is already minimal)."""
        if conflict.kind == "bridge" or len(conflict.statements) < 3:
            return tuple(conflict.statements)
        return tuple(minimal_conflict_set(list(conflict.statements), self.checker))

    def strength(self, statement: Statement) -> float:
        """Confidence times the reliability of the agent that made the statement."""
        return statement.confidence * self.controller.score(statement.agent)

    def choose(self, conflict: ConflictRecord, mcs: Sequence[Statement]) -> Statement:
        """The statement to give up: the weakest (the latest on a tie)."""
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
        return RollbackPlan(mcs, discard, keep, checkpoint, affected, reassert, conflict.reason, conflict.source)
