"""One question's run of the ReAgent loop: the roles decide, the driver carries their decisions out.

Adding a kind of decision: a frozen dataclass in decisions.py (what to do, and a ``then`` asking the
helper what comes next, with what happened), returned by the helper that decides it (roads.py: it
reads the run and never calls the driver); one branch in ``QuestionRun._follow`` that
carries it out; a state change it needs is a method of ``RunState`` (state.py), called from here only.

The plan's steps are solved in waves: every step whose input steps are answered starts
together. The retriever's evidence and the verifier's asserts travel on the channel in
rounds, so the asserts of one wave meet in one round, and statements that conflict there
are escalated to the supervisor. After every round each role reads its inbox: the
retriever searches for the steps rejected or challenged, the verifier answers from the
evidence that came and decides (accept, or retry: a local backtrack, the verifier's state
rolled back to the checkpoint before the attempt), the controller rewards, the supervisor
settles what was escalated (global backtracking: the rollback it plans). The second road
(roads.py) returns decisions that the driver follows; ``outcome.finish`` closes the run.
"""

from __future__ import annotations

from typing import Sequence

from ..agents.assembler import AGENT as ASSEMBLER, Assembly
from ..agents.controller import AGENT as CONTROLLER, BudgetExhausted
from ..agents.decomposer import AGENT as DECOMPOSER
from ..core.evidence import Evidence, EvidencePassage, is_unknown
from ..agents.messages import AnswerMade, EvidenceFound, PlanMade, Recheck, RoadAnswer, StepAnswer
from ..agents.retriever import AGENT as RETRIEVER
from ..agents.supervisor import AGENT as SUPERVISOR, RoadsVerdict, RollbackPlan
from ..agents.verifier import AGENT as VERIFIER, Accept, Attempt, Candidate, graph_facts
from ..config import PipelineConfig
from ..core import events as ev
from ..core.channel import Channel, RoundResult
from ..core.knowledge import Statement
from ..core.workspace import Workspace
from ..errors import LLMOutputError
from .answer import Answer
from .calls import CallLedger
from .decisions import Decision, Done, Meet, Redo
from .outcome import finish
from ..core.plan import Plan
from .roads import FALLBACK, SecondRoad
from .state import RunState
from .steps import Step
from .team import Team


class QuestionRun:
    """Carries out the loop for one question and returns its Answer."""

    def __init__(self, question: str, *, team: Team, workspace: Workspace, channel: Channel, calls: CallLedger,
                 settings: PipelineConfig) -> None:
        self.run = RunState(question, team, workspace, channel, settings)
        self.calls = calls
        self.roads = SecondRoad(self.run)

    def execute(self) -> Answer:
        """Plan, solve every step, settle conflicts, assemble; budgets bound the work."""
        run, team, settings = self.run, self.run.team, self.run.settings
        status, reason, final = "ok", "", Assembly("unknown")
        try:
            self.start(team.decomposer.plan(run.question))
            self.solve_pending()
            final = self.assemble()
            run.first_answer = final.answer
            if settings.global_backtracking and settings.two_roads:
                final = self._follow(self.roads.answer(final))
            elif is_unknown(final.answer) and settings.answer_fallback:
                final = self._follow(self.roads.fallback())
            if final.rule == FALLBACK:
                reason = "no answer through the plan; answered from the passages of the whole question"
        except BudgetExhausted as exc:
            status, reason, final = "budget", f"budget exhausted: {exc.what}", Assembly(run.best_answer())
            run.ws.record(CONTROLLER, ev.BudgetExhausted(what=exc.what, answer=final.answer))
        except LLMOutputError as exc:
            status, reason = "model_error", f"the model's output was unusable: {str(exc).splitlines()[0]}"
            final = Assembly(run.best_answer())
        return finish(run, self.calls, final.answer, status, reason)

    # -- the helpers' decisions, carried out -------------------------------------------
    def _follow(self, decision: Decision | None) -> Assembly:
        """Carry out a helper's decision, and each one it leads to, up to an answer (or nothing more to do)."""
        run = self.run
        while decision is not None and not isinstance(decision, Done):
            if isinstance(decision, Meet):  # both roads assert in one round; the supervisor settles a conflict
                run.verdict = None
                run.post(ASSEMBLER, (SUPERVISOR,), RoadAnswer(question=run.question, road=decision.chain,
                                                              steps=tuple(run.held())), [decision.chain.statement])
                run.post(ASSEMBLER, (SUPERVISOR,), RoadAnswer(question=run.question, road=decision.whole,
                                                              evidence=decision.evidence), [decision.whole.statement])
                while run.channel.pending:
                    self.deliver()
                decision = decision.then(run.verdict)
            elif isinstance(decision, Redo):
                self.solve_pending()
                decision = decision.then(self.assemble())
        if decision is None:
            return Assembly("unknown")
        if decision.cited is not None:
            run.fallback_cited = decision.cited
        return decision.answer

    def _roll_back(self, plan: RollbackPlan) -> None:
        """The supervisor's rollback plan: carried out (the run's state), the kept statements published, the
        statements that won repeated conflicts challenged."""
        run, team = self.run, self.run.team
        if not run.settings.global_backtracking or not team.controller.may_roll_back():
            return run.doubt_all()
        culprit = run.roll_back(plan)
        for kept in plan.keep:  # a kept statement that met its rival in a round was never published
            if kept.subquestion not in plan.affected_steps and not run.ws.holds(ASSEMBLER, kept.id):
                run.post(VERIFIER, (ASSEMBLER,), StepAnswer(step=kept.subquestion), [kept])
        for challenge in team.controller.challenges(culprit.index, plan.keep):
            run.challenges += 1
            step = run.steps[challenge.step]
            run.post(CONTROLLER, (RETRIEVER, VERIFIER), Recheck(step=challenge.step, statement=challenge.statement.text,
                                                               question=step.question, exclude=tuple(sorted(step.excluded))),
                     [challenge.statement])

    # -- the loop ------------------------------------------------------------------------
    def start(self, plan: Plan) -> None:
        """Take a plan: its steps replace the run's, and the retriever is told (it starts searching)."""
        run = self.run
        if plan.error:  # visible, logged fallback: the question is one step
            run.ws.record(DECOMPOSER, ev.DecompositionFailed(error=plan.error, raw=plan.raw))
        run.take_plan(plan)
        run.team.retriever.read([run.hand(DECOMPOSER, (RETRIEVER,), PlanMade(  # read at once: it starts searching
            subquestions=tuple(s.text for s in plan.steps), depends_on=tuple(s.depends_on for s in plan.steps)))])

    def solve_pending(self) -> None:
        """Waves of ready steps; each wave's evidence and asserts travel in shared rounds."""
        run = self.run
        while wave := [s for s in run.steps if not s.done and all(run.steps[k].done for k in s.sub.depends_on)]:
            for step in wave:
                self._start_step(step)
            while run.channel.pending:
                inbox = run.team.verifier.read(self.deliver().inbox(VERIFIER))
                # a step settled in this round (by a rollback, or by the controller) reads its evidence no more
                for found in [f for f in inbox.verify if not run.steps[f.step].done]:
                    self._verify(run.steps[found.step], found)

    def deliver(self) -> RoundResult:
        """Deliver a round: the supervisor settles what was escalated, the verifier withdraws what was challenged,
        the retriever searches again for the steps rejected or challenged."""
        run, team = self.run, self.run.team
        result = run.channel.deliver_round()
        for conflict in result.escalations:
            decision = team.supervisor.decide(conflict, run.ws, run.plan())
            if isinstance(decision, RoadsVerdict):
                self.roads.settled(decision)  # recorded; a chain that lost is rolled back at its weakest step
                run.verdict = decision
                if decision.rollback is not None:
                    self._roll_back(decision.rollback)
                    run.roads_rollbacks += 1
            else:
                self._roll_back(decision)
        for statement in team.verifier.read(result.inbox(VERIFIER)).withdraw:
            for holder in run.ws.holders(statement.id):
                run.ws.retract(holder, statement.id, "challenged by the controller")
        for request in team.retriever.read(result.inbox(RETRIEVER)):
            step = run.steps[request.step]
            if request.query is None:  # every new query was tried already: the controller settles the step
                self._override(step)
                continue
            if request.restart:
                step.reopen()
                step.start(step.question)
            self._retrieve(step, request.query, exclude=request.exclude, keep=request.keep, further=request.further)
        return result

    def assemble(self) -> Assembly:
        """The assembler's answer; the controller reads it at once (handed over, no round: core/channel.py) and
        rewards the agents whose statements it stood on."""
        run = self.run
        assembly = run.team.assembler.assemble(run.question, run.results())
        run.team.controller.read([run.hand(ASSEMBLER, (CONTROLLER,), AnswerMade(answer=assembly.answer, rule=assembly.rule),
                                           [s.statement for s in run.steps if s.statement is not None])])
        return assembly

    # -- one attempt at a step: local backtracking -----------------------------------
    def _start_step(self, step: Step) -> None:
        run = self.run
        step.start(step.sub.resolve(run.answers()))
        skip = run.team.controller.skip(step.sub, run.answers())
        if skip is not None:  # "Where was unknown born?" cannot be answered: spend no calls on it
            step.give_up()
            run.ws.record(CONTROLLER, ev.Skipped(step=skip.step, reason=skip.reason))
            return
        self._retrieve(step, step.question, prefetched=not step.fresh)

    def _retrieve(self, step: Step, query: str, *, exclude: Sequence[str] = (), keep: Sequence[str] = (),
                  further: Sequence[str] = (), prefetched: bool = False) -> None:
        """Search for the step; a step searching again reads what it has not read first (and ``keep``,
        and the ``further`` subjects' articles beyond what it read of them)."""
        team = self.run.team
        team.controller.check_budget()
        step.excluded |= set(exclude)
        read: dict[str, EvidencePassage] = {}
        shown: dict[str, str] = {}  # passage id -> every view of it the step read
        for p in (p for a in step.attempts for p in a.evidence.passages):
            read[p.id] = p
            shown[p.id] = f"{shown.get(p.id, '')} {p.text}"
        evidence = team.retriever.retrieve(query, exclude=step.excluded, seen=step.seen,
                                           keep=[read[i] for i in keep if i in read], prefetched=prefetched,
                                           further=further, shown=shown)
        step.seen |= {p.id for p in evidence.passages}
        earlier = [self.run.steps[k].built_on() for k in step.sub.depends_on]
        about = team.retriever.built_on(earlier) if team.verifier.acts_on_doubts else ()
        self.run.post(RETRIEVER, (VERIFIER,), EvidenceFound.of(step.index, evidence, about))

    def _verify(self, step: Step, found: EvidenceFound) -> None:
        run, verifier = self.run, self.run.team.verifier
        evidence = step.evidence = found.evidence
        checkpoint = run.ws.checkpoint(f"before {step.label}" + (f" (retry {len(step.attempts)})" if step.attempts else ""))
        attempt = verifier.examine(self._candidate(step, evidence), evidence, query=found.query,
                                   held=run.ws.local_state(VERIFIER), facts=graph_facts(evidence),
                                   rejected=step.rejected, about=found.about)
        step.attempts.append(attempt)
        held = run.hold(VERIFIER, attempt.statement)  # tentative: a retry takes it back
        decision = verifier.decide(step.attempts, retries=run.team.controller.retries(step.fresh))
        chosen = decision.attempt
        run.ws.record(VERIFIER, ev.Decision(step=step.index, decision=decision.name, answer=chosen.candidate.answer,
                                            confidence=chosen.confidence, reasons=decision.reasons, query=chosen.query))
        if isinstance(decision, Accept):
            if chosen is not attempt:  # an earlier, surer attempt stands: this one is taken back
                run.ws.rollback_local(VERIFIER, checkpoint.id, f"{chosen.candidate.answer!r} was surer")
                held = run.hold(VERIFIER, chosen.statement)
            for weaker in decision.retract:
                run.ws.retract(VERIFIER, weaker.id, f"weaker than {held.text!r}")
            run.backtracks["local"] += bool(decision.retract) or chosen is not attempt
            return self._publish(step, chosen, held, uncertain=decision.uncertain)
        run.ws.rollback_local(VERIFIER, checkpoint.id, "; ".join(decision.reasons))
        run.backtracks["local"] += 1
        run.notes.signal(attempt.check.retry_signal, True, "; ".join(decision.reasons), step=step.index)
        built_on = [run.steps[k].answer for k in step.sub.depends_on]
        run.post(VERIFIER, (RETRIEVER,), verifier.rejection(step.index, step.attempts, decision, built_on), [held])

    def _candidate(self, step: Step, evidence: Evidence) -> Candidate:
        verifier = self.run.team.verifier
        try:
            return verifier.answer(step.index, step.question, evidence, verifier.not_again(step.rejected))
        except LLMOutputError as exc:
            self.run.ws.record(VERIFIER, ev.InvalidOutput(error=str(exc).splitlines()[0]))
            return Candidate(step.index, step.question, "unknown", (), "", "other")

    def _override(self, step: Step) -> None:
        """A retried step has no new query left: the controller keeps its surest attempt (uncertain)."""
        run = self.run
        override = run.team.controller.override(step.attempts, step=step.index)
        run.ws.record(CONTROLLER, ev.Override(step=step.index, decision=override.decision,
                                              answer=override.attempt.candidate.answer))
        self._publish(step, override.attempt, run.hold(VERIFIER, override.statement), uncertain=True)

    def _publish(self, step: Step, attempt: Attempt, statement: Statement, *, uncertain: bool) -> None:
        """The step is answered: its statement goes to the assembler in this wave's round."""
        step.accept(attempt, statement, uncertain=uncertain)
        self.run.post(VERIFIER, (ASSEMBLER,), StepAnswer(step=step.index, answer=attempt.candidate.answer,
                                                        query=attempt.query), [statement])
