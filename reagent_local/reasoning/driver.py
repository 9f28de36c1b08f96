"""One question's run of the ReAgent loop: the roles decide, this loop carries their decisions out.

The plan's steps are solved in waves: every step whose input steps are answered starts
together. The retriever's evidence and the verifier's asserts travel on the channel
in rounds, so the asserts of one wave meet in one round, and statements that conflict
there are escalated to the supervisor. A verifier decision to retry is a local
backtrack (its state rolls back to the checkpoint before the attempt, and the
retriever reads the reject and searches again); a supervisor's rollback plan is a
global backtrack (every agent rolls back, the affected steps are solved again). After
the waves, the assembler's cross-step contradictions go to the supervisor through the
channel too; then the assembler answers.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..agents.assembler import AGENT as ASSEMBLER, WHOLE_QUESTION, Assembly
from ..agents.controller import AGENT as CONTROLLER, BudgetExhausted
from ..agents.decomposer import AGENT as DECOMPOSER
from ..agents.evidence import Evidence, EvidencePassage, evidence_payload, is_unknown
from ..agents.retriever import AGENT as RETRIEVER
from ..agents.supervisor import AGENT as SUPERVISOR, Road, RoadsVerdict
from ..agents.verifier import AGENT as VERIFIER, Accept, BuiltOn, Candidate, GiveUp, Retry, graph_facts
from .answer import Answer
from .backtrack import GlobalBacktracking
from .calls import CallLedger
from ..config import PipelineConfig
from ..core import events as ev
from ..core.channel import Channel, Message
from ..core.knowledge import Statement
from ..core.log import Checkpoint
from ..core.workspace import Workspace
from ..errors import LLMOutputError
from .outcome import finish
from .plan import Plan
from .roads import FALLBACK, SecondRoad
from .steps import Step
from .team import Team
from ..text import normalize


class QuestionRun(GlobalBacktracking, SecondRoad):
    """Executes the loop for one question and returns its Answer (global backtracking and the second
    road are carried out by the mixins in backtrack.py and roads.py)."""

    def __init__(self, question: str, *, team: Team, workspace: Workspace, channel: Channel, calls: CallLedger,
                 settings: PipelineConfig) -> None:
        self.question = question
        self.team = team
        self.ws = workspace
        self.channel = channel
        self.calls = calls
        self.settings = settings
        self.steps: list[Step] = []
        self.backtracks = {"local": 0, "global": 0}
        self.challenges = 0
        self.fallback_cited: tuple[EvidencePassage, ...] = ()
        self.first_answer: str | None = None  # the chain's first answer, before the roads were compared
        self.signals: list[str] = []  # conflict signals that fired
        self.whole: Road | None = None  # the second road: the whole question over the run's evidence
        self.whole_evidence: Evidence | None = None
        self.verdict: RoadsVerdict | None = None
        self.roads: dict[str, Road] = {}  # by statement id, while the two roads are compared
        self.reopened = False  # the last verdict rolled the chain back
        self.roads_rollbacks = 0  # global rollbacks the two roads caused (after the chain's first answer)
        self.failed: tuple[Step, str] | None = None  # the first step of the plan that found no usable answer
        self.plan_checkpoint: Checkpoint | None = None  # taken after the first plan: where a new plan starts
        self.replanned = False  # the plan was made again after a step failed
        self.earlier_cited: tuple[EvidencePassage, ...] = ()  # what the first plan's answers were read from

    def execute(self) -> Answer:
        """Plan, solve every step, settle conflicts, assemble; budgets bound the work."""
        status, reason, final = "ok", "", Assembly("unknown")
        try:
            self._plan()
            self._solve_pending()
            if self.settings.global_backtracking:
                # A step that found nothing about the answer it builds on suspects that answer: it is redone
                # first (a rollback to that step), and only a failure that stands sends the run back to the plan.
                self._settle_across_steps()
                if self.failed and self.team.controller.may_replan():
                    self._replan()
                    self._settle_across_steps()
            final = self._assemble()
            self.first_answer = final.answer
            if self.settings.global_backtracking and self.settings.two_roads:
                final = self._two_roads(final)
            elif is_unknown(final.answer) and self.settings.answer_fallback:
                final = self._fallback()
            if final.rule == FALLBACK:
                reason = "no answer through the plan; answered from the passages of the whole question"
        except BudgetExhausted as exc:
            status, reason, final = "budget", f"budget exhausted: {exc.what}", Assembly(self._best_answer())
            self.ws.record(CONTROLLER, ev.BudgetExhausted(what=exc.what, answer=final.answer))
        except LLMOutputError as exc:
            status, reason = "model_error", f"the model's output was unusable: {str(exc).splitlines()[0]}"
            final = Assembly(self._best_answer())
        return finish(self, final.answer, status, reason)

    # -- planning and waves -------------------------------------------------------
    def _plan(self, plan: Plan | None = None) -> None:
        plan = plan or self.team.decomposer.plan(self.question)
        if plan.error:  # visible, logged fallback: the question is one step
            self.ws.record(DECOMPOSER, ev.DecompositionFailed(error=plan.error, raw=plan.raw))
        self.steps = [Step(sub) for sub in plan.steps]
        self.failed = None
        self.ws.record(DECOMPOSER, ev.Plan(subquestions=tuple(s.text for s in plan.steps), attempt=plan.attempt,
                                           depends_on=tuple(s.depends_on for s in plan.steps), reason=plan.reason))
        self.plan_checkpoint = self.plan_checkpoint or self.ws.checkpoint("plan")
        self._post("inform", DECOMPOSER, (RETRIEVER, VERIFIER), {
            "subquestions": [s.text for s in plan.steps], "depends_on": [list(s.depends_on) for s in plan.steps]})
        self.team.retriever.prefetch([s.sub.text for s in self.steps if not s.sub.depends_on])

    def _solve_pending(self) -> None:
        """Waves of ready steps; each wave's evidence and asserts travel in shared rounds."""
        while wave := [s for s in self.steps if not s.done and all(self.steps[k].done for k in s.sub.depends_on)]:
            for step in wave:
                self._start(step)
            while self.channel.pending:
                for message in self._deliver():
                    self._verify(self.steps[message.payload["step"]])

    def _start(self, step: Step) -> None:
        step.start(step.sub.resolve(self._answers()))
        skip = self.team.controller.skip(step.sub, self._answers())
        if skip is not None:  # "Where was unknown born?" cannot be answered: spend no calls on it
            step.give_up()
            self.ws.record(CONTROLLER, ev.Skipped(step=skip.step, reason=skip.reason))
            return
        self._retrieve(step, step.question, prefetched=not step.fresh)

    def _deliver(self) -> list[Message]:
        """Deliver a round and let each agent act on its inbox; returns the evidence for the verifier."""
        result = self.channel.deliver_round()
        for conflict in result.escalations:
            if all(s.subquestion == WHOLE_QUESTION for s in conflict.statements):
                self._settle_roads()
            else:
                self._carry_out(self.team.supervisor.resolve(conflict, self.ws, [s.sub for s in self.steps]))
        for statement in self.team.verifier.read(result.inbox(VERIFIER)):
            for holder in self.ws.holders(statement.id):
                self.ws.retract(holder, statement.id, "challenged by the controller")
        for request in self.team.retriever.read(result.inbox(RETRIEVER)):
            step = self.steps[request.step]
            if request.query is None:  # every new query was tried already: the controller settles the step
                self._override(step)
                continue
            if request.restart:
                step.reopen()
                step.start(step.question)
            self._retrieve(step, request.query, exclude=request.exclude, keep=request.keep, further=request.further)
        return [m for m in result.inbox(VERIFIER) if m.type == "inform" and isinstance(m.payload.get("step"), int)
                and not self.steps[m.payload["step"]].done]

    # -- one attempt at a step: local backtracking -----------------------------------
    def _retrieve(self, step: Step, query: str, *, exclude: Sequence[str] = (), keep: Sequence[str] = (),
                  further: Sequence[str] = (), prefetched: bool = False) -> None:
        """Search for the step; a step searching again reads what it has not read first (and ``keep``,
        and the ``further`` subjects' articles beyond what it read of them)."""
        self.calls.budget.check()
        step.excluded |= set(exclude)
        step.query = query
        read: dict[str, EvidencePassage] = {}
        shown: dict[str, str] = {}  # passage id -> every view of it the step read
        for p in (p for a in step.attempts for p in a.evidence.passages):
            read[p.id] = p
            shown[p.id] = f"{shown.get(p.id, '')} {p.text}"
        step.evidence = self.team.retriever.retrieve(query, exclude=step.excluded, seen=step.seen,
                                                     keep=[read[i] for i in keep if i in read], prefetched=prefetched,
                                                     further=further, shown=shown)
        step.seen |= {p.id for p in step.evidence.passages}
        self._post("inform", RETRIEVER, (VERIFIER,), {"step": step.index, "query": query,
                                                      **evidence_payload(step.evidence)})

    def _verify(self, step: Step) -> None:
        verifier, evidence = self.team.verifier, step.evidence
        assert evidence is not None
        checkpoint = self.ws.checkpoint(f"before {step.label}" + (f" (retry {len(step.attempts)})" if step.attempts else ""))
        attempt = verifier.examine(self._candidate(step, evidence), evidence, query=step.query,
                                   held=self.ws.local_state(VERIFIER), facts=graph_facts(evidence),
                                   rejected=step.rejected, about=self._about(step))
        step.attempts.append(attempt)
        held = self._hold(VERIFIER, attempt.statement)  # tentative: a retry takes it back
        retries = min(1, self.settings.max_backtrack_depth) if step.fresh else self.settings.max_backtrack_depth
        decision = verifier.decide(step.attempts, retries=retries, local=self.settings.local_backtracking)
        chosen = decision.attempt
        self.ws.record(VERIFIER, ev.Decision(step=step.index, decision=decision.name, answer=chosen.candidate.answer,
                                             confidence=chosen.confidence, reasons=decision.reasons, query=chosen.query))
        if isinstance(decision, Accept):
            if chosen is not attempt:  # an earlier, surer attempt stands: this one is taken back
                self.ws.rollback_local(VERIFIER, checkpoint.id, f"{chosen.candidate.answer!r} was surer")
                held = self._hold(VERIFIER, chosen.statement)
            for weaker in decision.retract:
                self.ws.retract(VERIFIER, weaker.id, f"weaker than {held.text!r}")
            self.backtracks["local"] += bool(decision.retract) or chosen is not attempt
            return self._publish(step, chosen, held, uncertain=decision.uncertain)
        self.ws.rollback_local(VERIFIER, checkpoint.id, "; ".join(decision.reasons))
        self.backtracks["local"] += 1
        # named apart so a benchmark record says which local signal sent the step back
        signal = "low-confidence" if attempt.check.ok else "off-subject" if attempt.check.sound else "check-failed"
        self._signal(signal, True, "; ".join(decision.reasons), step=step.index)
        if isinstance(decision, Retry):
            self._post("reject", VERIFIER, (RETRIEVER,), {
                "step": step.index, "answer": attempt.candidate.answer, "reason": "; ".join(decision.reasons),
                "reasons": list(decision.reasons), "question": step.question, "query": step.query,
                "tried": [a.query for a in step.attempts], "hints": list(decision.hints),
                "exclude": list(decision.exclude), "keep": list(decision.keep),
                "subjects": self._subjects(step, attempt)}, [held])
        elif isinstance(decision, GiveUp):
            self._override(step)

    def _about(self, step: Step) -> tuple[BuiltOn, ...]:
        """The answers the step builds on ("Where was #1 born?" asks about #1), where each was read and its
        own article; none without local backtracking, where nothing would act on a doubt."""
        if not self.settings.local_backtracking:
            return ()
        about = []
        for k in step.sub.depends_on:
            earlier = self.steps[k]
            if is_unknown(earlier.answer) or normalize(earlier.answer) in {"yes", "no"}:
                continue
            article = self.team.retriever.own_article(earlier.answer)
            about.append(BuiltOn(earlier.answer, frozenset(p.id for p in earlier.cited),
                                 article[0].passage.title if article else ""))
        return tuple(about)

    def _subjects(self, step: Step, attempt: Any) -> list[str]:
        """What a rejected step asks about: the answers it builds on ("Where was #1 born?"), then the subject
        the model named for its answer; their own articles are read further on the retry."""
        built_on = [self.steps[k].answer for k in step.sub.depends_on if not is_unknown(self.steps[k].answer)]
        named = attempt.candidate.subject.strip()
        return list(dict.fromkeys([*built_on, *([named] if named else [])]))

    def _candidate(self, step: Step, evidence: Evidence) -> Candidate:
        try:
            # told what failed: answers the supervisor gave up, and this step's answers that failed a check
            failed = {a.candidate.answer for a in step.attempts if a.check.problems and not is_unknown(a.candidate.answer)}
            return self.team.verifier.answer(step.index, step.question, evidence, sorted(step.rejected | failed))
        except LLMOutputError as exc:
            self.ws.record(VERIFIER, ev.InvalidOutput(error=str(exc).splitlines()[0]))
            return Candidate(step.index, step.question, "unknown", (), "", "other")

    def _override(self, step: Step) -> None:
        """The verifier gave up: the controller keeps the best usable candidate (uncertain) or none."""
        override = self.team.controller.override(step.question, step.attempts, step=step.index,
                                                 rejected=step.rejected)
        self.ws.record(CONTROLLER, ev.Override(step=step.index, decision=override.decision,
                                               answer=override.attempt.candidate.answer if override.attempt else ""))
        if override.attempt is None or override.statement is None:
            step.give_up()
            reasons = step.attempts[-1].check.reasons() if step.attempts else ["nothing was found"]
            self.failed = self.failed or (step, f"step {step.index + 1} ({step.question!r}) found no usable answer: "
                                                + "; ".join(reasons))
            return
        self._publish(step, override.attempt, self._hold(VERIFIER, override.statement), uncertain=True)

    def _publish(self, step: Step, attempt: Any, statement: Statement, *, uncertain: bool) -> None:
        """The step is answered: its statement goes to the assembler in this wave's round."""
        step.accept(attempt, statement, uncertain=uncertain)
        self._post("assert", VERIFIER, (ASSEMBLER,), {"step": step.index, "answer": attempt.candidate.answer,
                                                      "query": attempt.query}, [statement])

    # -- the answer ------------------------------------------------------------------
    def _assemble(self) -> Assembly:
        assembly = self.team.assembler.assemble(self.question, self._results())
        self._post("inform", ASSEMBLER, (SUPERVISOR, CONTROLLER), {"answer": assembly.answer, "rule": assembly.rule})
        self.channel.deliver_round()
        for step in self.steps:
            if step.statement is not None:
                self.team.controller.reward(step.statement.agent)
        return assembly

    # -- small helpers ----------------------------------------------------------------
    def _signal(self, name: str, fired: bool, detail: str, step: int | None = None, **values: Any) -> None:
        if fired:
            self.signals.append(name)
        self.ws.record(SUPERVISOR, ev.Signal(signal=name, fired=fired, step=step, detail=detail, values=values))

    def _post(self, kind: str, sender: str, recipients: Sequence[str], payload: dict,
              statements: Sequence[Statement] = ()) -> None:
        self.channel.post(Message(kind, sender, tuple(recipients), tuple(statements), payload))

    def _hold(self, agent: str, statement: Statement) -> Statement:
        """Put a statement into an agent's state (or return the copy it already holds)."""
        held = [s for s in self.ws.local_state(agent) if s.id == statement.id]
        return held[0] if held else self.ws.assert_statement(agent, statement)

    def _answers(self) -> dict[int, str]:
        return {s.index: s.answer for s in self.steps if s.done and s.answer}

    def _results(self) -> list:
        return [s.result() for s in self.steps if s.done]

    def _best_answer(self) -> str:
        """Best-supported answer so far: the latest answered step's answer."""
        answered = [s for s in self.steps if s.done and s.answer and not is_unknown(s.answer)]
        return answered[-1].answer if answered else "unknown"
