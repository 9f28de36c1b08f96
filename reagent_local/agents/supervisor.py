"""Supervisor (A_S): resolves escalated contradictions with a global rollback.

It asks the core for a minimal conflict set, picks the statement to give up (lowest
confidence times its agent's reliability), and names the rollback target: the last
checkpoint before the earliest statement of the set entered. The pipeline performs
the rollback and re-runs only the affected sub-questions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..core.conflicts import ConflictChecker, minimal_conflict_set
from ..core.knowledge import Statement
from .assembler import Escalation
from .controller import Controller

AGENT = "supervisor"


@dataclass(frozen=True)
class Resolution:
    """What the supervisor decided about one escalation."""

    conflict_set: tuple[Statement, ...]
    discard: Statement
    keep: tuple[Statement, ...]
    reason: str


class Supervisor:
    """Chooses what to discard; the pipeline rolls back and re-runs."""

    def __init__(self, checker: ConflictChecker, controller: Controller) -> None:
        self.checker = checker
        self.controller = controller

    def conflict_set(self, escalation: Escalation) -> tuple[Statement, ...]:
        """The minimal conflict set of an escalation (value conflicts via the core)."""
        if escalation.kind == "value":
            return tuple(minimal_conflict_set(list(escalation.statements), self.checker))
        # a broken bridge: the two steps cannot both stand given the evidence; already minimal
        return tuple(escalation.statements)

    def resolve(self, escalation: Escalation, *, support: Callable[[Statement], float] = lambda s: 0.0) -> Resolution:
        """Pick the weakest statement by confidence x reliability (+ graph support)."""
        mcs = self.conflict_set(escalation)

        def strength(s: Statement) -> tuple[float, int]:
            return (s.confidence * self.controller.score(s.agent) + support(s), -(s.time or 0))

        if escalation.kind == "bridge":
            # the later step was built on the earlier one: doubt the foundation first,
            # unless it is clearly stronger than the step that failed to find it
            earlier, later = mcs[0], mcs[1]
            discard = earlier if strength(earlier)[0] <= strength(later)[0] + 0.2 else later
        else:
            discard = min(mcs, key=strength)
        keep = tuple(s for s in mcs if s.id != discard.id)
        return Resolution(mcs, discard, keep, escalation.reason)


def earliest(statements: Sequence[Statement]) -> Statement:
    """The statement that entered first."""
    return min(statements, key=lambda s: s.time if s.time is not None else 0)
