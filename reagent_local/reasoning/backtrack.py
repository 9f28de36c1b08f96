"""Global backtracking, carried out: a new plan, the assembler's escalations, and the supervisor's rollback plans.

The decisions come from the roles (the controller allows, the supervisor plans, the
decomposer re-plans, the assembler finds what does not fit together); this collaborator
of the driver only executes and records them.
"""

from __future__ import annotations

from ..agents.assembler import AGENT as ASSEMBLER
from ..agents.controller import AGENT as CONTROLLER
from ..agents.messages import Contradiction, Recheck, StepAnswer
from ..agents.retriever import AGENT as RETRIEVER
from ..agents.supervisor import AGENT as SUPERVISOR, RollbackPlan
from ..agents.verifier import AGENT as VERIFIER
from ..core import events as ev
from .state import Loop, RunState

# The signal name a benchmark record carries for each kind of the assembler's escalation.
ESCALATION_SIGNALS = {"value": "value-conflict", "bridge": "broken-bridge", "unfounded": "unfounded-step"}


class GlobalBacktracking:
    """Carries out a run's global rollbacks (the driver calls it; it asks the driver to solve again)."""

    def __init__(self, run: RunState, loop: Loop) -> None:
        self.run = run
        self.loop = loop

    def replan(self) -> None:
        """A step found no usable answer: back to the plan, which the decomposer makes again, told what failed."""
        run, team = self.run, self.run.team
        assert run.failed is not None and run.plan_checkpoint is not None
        step, failure = run.failed
        run.signal("plan-failed", True, failure, step=step.index)
        plan = team.decomposer.replan(run.question, run.plan(), failure)
        team.controller.count_replan()
        if team.decomposer.same_plan(plan.steps, [(s.sub.text, s.question) for s in run.steps]):
            return  # the same plan again: nothing new to try
        run.ws.rollback_global(run.plan_checkpoint.id, f"the plan failed: {failure}")
        run.backtracks["global"] += 1
        # the first plan's answers go with it, but what they were read from stays for the second road
        run.replanned = True
        run.earlier_cited = tuple(p for s in run.steps for p in s.cited)
        self.loop.start(plan)
        self.loop.solve_pending()

    def settle_across_steps(self) -> None:
        """The assembler's contradictions go to the supervisor through the channel, a bounded number of times;
        one whose signal is silenced (``pipeline.signals_off``) goes nowhere, and leaves the steps uncertain."""
        run, team = self.run, self.run.team
        silenced = set(run.settings.signals_off)
        while team.controller.may_roll_back():
            found = team.assembler.contradictions(run.results())
            escalations = [e for e in found if ESCALATION_SIGNALS[e.kind] not in silenced]
            if not found:
                return
            if not escalations:
                break  # only silenced ones: they leave the steps uncertain, as one past the rollback budget does
            first = escalations[0]
            run.signal(ESCALATION_SIGNALS[first.kind], True, first.reason)
            run.post(ASSEMBLER, (SUPERVISOR,), Contradiction(kind=first.kind, reason=first.reason), first.statements)
            self.loop.deliver()
            self.loop.solve_pending()
        if team.assembler.contradictions(run.results()):
            for step in run.steps:
                step.uncertain = True

    def carry_out(self, plan: RollbackPlan) -> None:
        """Roll every agent back, keep what the conflict does not touch, and reopen the affected steps."""
        run, team = self.run, self.run.team
        if not run.settings.global_backtracking or not team.controller.may_roll_back():
            for step in run.steps:
                step.uncertain = True
            return
        run.ws.record(SUPERVISOR, ev.ConflictSet(
            statements=tuple(s.id for s in plan.conflict_set), texts=tuple(s.text for s in plan.conflict_set),
            discard=plan.discard.id, reason=plan.reason, checkpoint=plan.checkpoint.id,
            affected_steps=plan.affected_steps, reassert=tuple(s.id for s in plan.reassert), source=plan.source))
        run.ws.rollback_global(plan.checkpoint.id, f"conflict: {plan.reason}")
        team.controller.count_rollback()
        run.backtracks["global"] += 1
        team.controller.penalise(plan.discard.agent)
        culprit = run.steps[plan.discard.subquestion]
        culprit.discard_answer(keep_passages=plan.keep_passages)
        for statement in plan.reassert:  # unaffected statements stand as they were
            stamped = run.hold(statement.agent, statement)
            if statement.agent == VERIFIER:
                run.steps[statement.subquestion].statement = stamped
        for index in plan.affected_steps:
            run.steps[index].reopen()
        if run.failed and run.failed[0].index in plan.affected_steps:
            run.failed = None  # the failed step is solved again; a new failure is recorded afresh
        for kept in plan.keep:  # a kept statement that met its rival in a round was never published
            if kept.subquestion not in plan.affected_steps and not run.ws.holds(ASSEMBLER, kept.id):
                run.post(VERIFIER, (ASSEMBLER,), StepAnswer(step=kept.subquestion), [kept])
        for challenge in team.controller.challenges(culprit.index, plan.keep):
            run.challenges += 1
            step = run.steps[challenge.step]
            run.post(CONTROLLER, (RETRIEVER, VERIFIER), Recheck(step=challenge.step, statement=challenge.statement.text,
                                                               question=step.question, exclude=tuple(sorted(step.excluded))),
                     [challenge.statement])
