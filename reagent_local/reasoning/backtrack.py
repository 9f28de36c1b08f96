"""Global backtracking, carried out: re-planning, the assembler's escalations, and the supervisor's rollback plans.

A mixin of :class:`reagent_local.run.QuestionRun` (the loop's state lives there): the
decisions come from the roles (the controller allows, the supervisor plans, the decomposer
re-plans); these methods only execute and record them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..agents.assembler import AGENT as ASSEMBLER
from ..agents.controller import AGENT as CONTROLLER
from ..agents.retriever import AGENT as RETRIEVER
from ..agents.supervisor import AGENT as SUPERVISOR, RollbackPlan
from ..agents.verifier import AGENT as VERIFIER
from ..core import events as ev
from .plan import SubQuestion

# The signal name a benchmark record carries for each kind of the assembler's escalation.
ESCALATION_SIGNALS = {"value": "value-conflict", "bridge": "broken-bridge", "unfounded": "unfounded-step"}

if TYPE_CHECKING:
    from .driver import QuestionRun

    _Base = QuestionRun
else:
    _Base = object


class GlobalBacktracking(_Base):
    """The loop's global rollbacks."""

    def _replan(self) -> None:
        """A step found no usable answer: back to the plan, which the decomposer makes again, told what failed."""
        step, failure = self.failed
        self._signal("plan-failed", True, failure, step=step.index)
        plan = self.team.decomposer.replan(self.question, [s.sub for s in self.steps], failure)
        self.team.controller.count_replan()
        if self._same_plan(plan.steps):
            return  # the same plan again: nothing new to try
        self.ws.rollback_global(self.plan_checkpoint.id, f"the plan failed: {failure}")
        self.backtracks["global"] += 1
        # the first plan's answers go with it, but what they were read from stays for the second road
        self.replanned = True
        self.earlier_cited = tuple(p for s in self.steps for p in s.cited)
        self._plan(plan)
        self._solve_pending()

    def _same_plan(self, steps: Sequence[SubQuestion]) -> bool:
        """The new plan asks what the old one asked, step for step, written with "#1" or with the answer
        found for it ("Where was #1 born?" again as "Where was Mara Lind born?"): solving it would repeat
        every call."""
        return len(steps) == len(self.steps) and all(
            new.text in (old.sub.text, old.question) for new, old in zip(steps, self.steps))

    def _settle_across_steps(self) -> None:
        """The assembler's contradictions go to the supervisor through the channel, a bounded number of times."""
        while self.team.controller.may_roll_back():
            escalations = self.team.assembler.contradictions(self._results())
            if not escalations:
                return
            first = escalations[0]
            self._signal(ESCALATION_SIGNALS[first.kind], True, first.reason)
            self._post("reject", ASSEMBLER, (SUPERVISOR,), {"escalation": first.kind, "reason": first.reason},
                       first.statements)
            self._deliver()
            self._solve_pending()
        if self.team.assembler.contradictions(self._results()):
            for step in self.steps:
                step.uncertain = True

    def _carry_out(self, plan: RollbackPlan) -> None:
        """Roll every agent back, keep what the conflict does not touch, and reopen the affected steps."""
        if not self.settings.global_backtracking or not self.team.controller.may_roll_back():
            for step in self.steps:
                step.uncertain = True
            return
        self.ws.record(SUPERVISOR, ev.ConflictSet(
            statements=tuple(s.id for s in plan.conflict_set), texts=tuple(s.text for s in plan.conflict_set),
            discard=plan.discard.id, reason=plan.reason, checkpoint=plan.checkpoint.id,
            affected_steps=plan.affected_steps, reassert=tuple(s.id for s in plan.reassert), source=plan.source))
        self.ws.rollback_global(plan.checkpoint.id, f"conflict: {plan.reason}")
        self.team.controller.count_rollback()
        self.backtracks["global"] += 1
        self.team.controller.penalise(plan.discard.agent)
        culprit = self.steps[plan.discard.subquestion]
        culprit.discard_answer(keep_passages=plan.keep_passages)
        for statement in plan.reassert:  # unaffected statements stand as they were
            stamped = self._hold(statement.agent, statement)
            if statement.agent == VERIFIER:
                self.steps[statement.subquestion].statement = stamped
        for index in plan.affected_steps:
            self.steps[index].reopen()
        if self.failed and self.failed[0].index in plan.affected_steps:
            self.failed = None  # the failed step is solved again; a new failure is recorded afresh
        for kept in plan.keep:  # a kept statement that met its rival in a round was never published
            if kept.subquestion not in plan.affected_steps and not self.ws.holds(ASSEMBLER, kept.id):
                self._post("assert", VERIFIER, (ASSEMBLER,), {"step": kept.subquestion}, [kept])
        for challenge in self.team.controller.challenges(culprit.index, plan.keep):
            self.challenges += 1
            step = self.steps[challenge.step]
            self._post("challenge", CONTROLLER, (RETRIEVER, VERIFIER), {
                "step": challenge.step, "statement": challenge.statement.text, "question": step.question,
                "exclude": sorted(step.excluded)}, [challenge.statement])
