"""Global backtracking, decided: the assembler's contradictions to escalate.

The decisions come from the roles (the controller allows, the assembler finds what does not
fit together); this helper of the driver reads the run and returns what to do next
(decisions.py). The driver carries it out: the rounds, the rollback the supervisor plans for
an escalation.
"""

from __future__ import annotations

from .decisions import Escalate, Uncertain
from .state import RunState

# The signal name a benchmark record carries for each kind of the assembler's escalation.
ESCALATION_SIGNALS = {"value": "value-conflict", "bridge": "broken-bridge", "unfounded": "unfounded-step"}


class GlobalBacktracking:
    """Decides a run's global backtracking; never changes the run."""

    def __init__(self, run: RunState) -> None:
        self.run = run

    def across_steps(self) -> Escalate | Uncertain | None:
        """The next of the assembler's contradictions to send to the supervisor, while rollbacks are left; the steps
        in doubt when one is left that cannot be sent (no rollback left, or only silenced ones:
        ``pipeline.signals_off``); None when the steps agree."""
        run, team = self.run, self.run.team
        if team.controller.may_roll_back():
            found = team.assembler.contradictions(run.results())
            if not found:
                return None
            silenced = set(run.settings.signals_off)
            escalations = [e for e in found if ESCALATION_SIGNALS[e.kind] not in silenced]
            if escalations:
                first = escalations[0]
                run.notes.signal(ESCALATION_SIGNALS[first.kind], True, first.reason)
                return Escalate(first, then=self.across_steps)
        # only silenced ones, or past the rollback budget: they leave the steps uncertain
        return Uncertain() if team.assembler.contradictions(run.results()) else None
