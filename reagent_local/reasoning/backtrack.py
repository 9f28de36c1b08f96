"""Global backtracking, decided: a second plan for a caught chain.

The decisions come from the roles (the controller allows, the decomposer re-plans); this helper
of the driver reads the run and returns what to do next (decisions.py). The driver carries it
out: the branch a second plan is solved on.

A chain is caught when a step found no usable answer or kept one it could not make sure of
(the verifier's retries, local backtracking, did not settle it: ``Step.in_doubt``). Asking the same model about
much the same passages rarely mends that (docs/repairs.md: most caught chains never had
their evidence, often because the plan had no step for a hop), so the repair reads
something new: the decomposer makes a second plan, told which step failed and how, and the
chain is solved again on a branch. The second chain's answer replaces the first only when
it is surer (:meth:`GlobalBacktracking.choose`); otherwise the branch is abandoned and every
agent goes back to the first chain's checkpoint.
"""

from __future__ import annotations

from ..agents.assembler import Assembly
from ..core.evidence import is_unknown
from .decisions import Abandon, Decision, Done, SecondPlan
from .state import RunState
from .steps import Step


class GlobalBacktracking:
    """Decides a run's global backtracking; never changes the run."""

    def __init__(self, run: RunState) -> None:
        self.run = run

    def second_plan(self, first: Assembly) -> SecondPlan | None:
        """A caught chain (a step failed, or stayed in doubt): the plan the decomposer makes again, told what
        failed; None when the chain was not caught, no new plan is allowed, or the new plan asks what the old one
        asked (nothing new to read)."""
        run, team = self.run, self.run.team
        failure = self.caught()
        if failure is None or not team.controller.may_replan():
            return None
        step = run.failed[0] if run.failed else next(s for s in run.steps if s.in_doubt(run.settings.min_confidence))
        run.notes.signal("plan-failed", True, failure, step=step.index)
        plan = team.decomposer.replan(run.question, run.plan(), failure)
        team.controller.count_replan()
        if team.decomposer.same_plan(plan.steps, [(s.sub.text, s.question) for s in run.steps]):
            return None
        return SecondPlan(plan, failure, first, then=self.choose)

    def caught(self) -> str | None:
        """What failed in the chain, as the decomposer is told it; None when every step has a sure answer."""
        run = self.run
        if run.failed is not None:
            return run.failed[1]
        doubted = [s for s in run.steps if s.in_doubt(run.settings.min_confidence)]
        if not doubted:
            return None
        return "; ".join(_doubt(s) for s in doubted) + \
            ". A step may have asked for two facts at once or skipped a link of the chain: ask smaller steps."

    def choose(self, first: Assembly, second: Assembly) -> Decision:
        """The second chain's answer (the run's steps are the second plan's now) stands when it is surer than the
        first: it has an answer where the first had none, or every one of its steps was answered and made sure. Otherwise the branch is abandoned."""
        if is_unknown(second.answer):
            return Abandon("the second plan found no answer")
        if is_unknown(first.answer) or self.caught() is None:
            return Done(second)
        return Abandon(f"the second plan's chain answered {second.answer!r} no surer than the first's {first.answer!r}")


def _doubt(step: Step) -> str:
    """How a doubted step reads to the decomposer: its question, the answer kept and why it was doubted."""
    return f"step {step.index + 1} ({step.question!r}) kept {step.answer!r} without being sure of it ({step.doubt()})"
