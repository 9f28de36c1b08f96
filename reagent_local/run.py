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

from .agents.assembler import AGENT as ASSEMBLER, Assembly
from .agents.controller import AGENT as CONTROLLER, BudgetExhausted
from .agents.decomposer import AGENT as DECOMPOSER
from .agents.evidence import Evidence, EvidencePassage, is_unknown
from .agents.retriever import AGENT as RETRIEVER
from .agents.supervisor import AGENT as SUPERVISOR, RollbackPlan
from .agents.verifier import AGENT as VERIFIER, Accept, Candidate, GiveUp, Retry, graph_facts
from .answer import Answer
from .calls import CallLedger
from .config import PipelineConfig
from .core import events as ev
from .core.channel import Channel, Message
from .core.knowledge import Statement
from .core.workspace import Workspace
from .errors import LLMOutputError
from .rules import answer_type_problem
from .outcome import finish
from .steps import Step
from .team import Team


class QuestionRun:
    """Executes the loop for one question and returns its Answer."""

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

    def execute(self) -> Answer:
        """Plan, solve every step, settle conflicts, assemble; budgets bound the work."""
        status, reason, final = "ok", "", Assembly("unknown")
        try:
            self._plan()
            self._solve_pending()
            if self.settings.global_backtracking:
                self._settle_across_steps()
            final = self._assemble()
            if is_unknown(final.answer) and self.settings.answer_fallback:
                final = self._fallback()
                reason = "" if is_unknown(final.answer) else \
                    "no answer through the plan; answered from the passages of the whole question"
        except BudgetExhausted as exc:
            status, reason, final = "budget", f"budget exhausted: {exc.what}", Assembly(self._best_answer())
            self.ws.record(CONTROLLER, ev.BudgetExhausted(what=exc.what, answer=final.answer))
        except LLMOutputError as exc:
            status, reason = "model_error", f"the model's output was unusable: {str(exc).splitlines()[0]}"
            final = Assembly(self._best_answer())
        return finish(self, final.answer, status, reason)

    # -- planning and waves -------------------------------------------------------
    def _plan(self) -> None:
        plan = self.team.decomposer.plan(self.question)
        if plan.error:  # visible, logged fallback: the question is one step
            self.ws.record(DECOMPOSER, ev.DecompositionFailed(error=plan.error, raw=plan.raw))
        self.steps = [Step(sub) for sub in plan.steps]
        self.ws.record(DECOMPOSER, ev.Plan(subquestions=tuple(s.text for s in plan.steps),
                                           depends_on=tuple(s.depends_on for s in plan.steps)))
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
            self._carry_out(self.team.supervisor.resolve(conflict, self.ws, [s.sub for s in self.steps]))
        for statement in self.team.verifier.read(result.inbox(VERIFIER)):
            for holder in self.ws.holders(statement.id):
                self.ws.retract(holder, statement.id, "challenged by the controller")
        for request in self.team.retriever.read(result.inbox(RETRIEVER)):
            step = self.steps[request.step]
            if request.restart:
                step.reopen()
                step.start(step.question)
            self._retrieve(step, request.query, exclude=request.exclude)
        return [m for m in result.inbox(VERIFIER) if m.type == "inform" and isinstance(m.payload.get("step"), int)
                and not self.steps[m.payload["step"]].done]

    # -- one attempt at a step: local backtracking -----------------------------------
    def _retrieve(self, step: Step, query: str, *, exclude: Sequence[str] = (), prefetched: bool = False) -> None:
        self.calls.budget.check()
        step.excluded |= set(exclude)
        step.query = query
        step.evidence = self.team.retriever.retrieve(query, exclude=step.excluded, prefetched=prefetched)
        self._post("inform", RETRIEVER, (VERIFIER,), {"step": step.index, "query": query,
                                                      **_evidence_payload(step.evidence)})

    def _verify(self, step: Step) -> None:
        verifier, evidence = self.team.verifier, step.evidence
        assert evidence is not None
        checkpoint = self.ws.checkpoint(f"before {step.label}" + (f" (retry {len(step.attempts)})" if step.attempts else ""))
        attempt = verifier.examine(self._candidate(step, evidence), evidence, query=step.query,
                                   held=self.ws.local_state(VERIFIER), facts=graph_facts(evidence),
                                   rejected=step.rejected)
        step.attempts.append(attempt)
        held = self._hold(VERIFIER, attempt.statement)  # tentative: a retry takes it back
        retries = min(1, self.settings.max_backtrack_depth) if step.fresh else self.settings.max_backtrack_depth
        decision = verifier.decide(step.attempts, retries=retries, local=self.settings.local_backtracking)
        self.ws.record(VERIFIER, ev.Decision(step=step.index, decision=decision.name, answer=attempt.candidate.answer,
                                             confidence=attempt.confidence, reasons=decision.reasons, query=step.query))
        if isinstance(decision, Accept):
            for weaker in decision.retract:
                self.ws.retract(VERIFIER, weaker.id, f"weaker than {held.text!r}")
            self.backtracks["local"] += bool(decision.retract)
            return self._publish(step, attempt, held, uncertain=decision.uncertain)
        self.ws.rollback_local(VERIFIER, checkpoint.id, "; ".join(decision.reasons))
        self.backtracks["local"] += 1
        if isinstance(decision, Retry):
            self._post("reject", VERIFIER, (RETRIEVER,), {
                "step": step.index, "answer": attempt.candidate.answer, "reason": "; ".join(decision.reasons),
                "reasons": list(decision.reasons), "question": step.question, "query": step.query,
                "hints": list(decision.hints), "exclude": list(decision.exclude)}, [held])
        elif isinstance(decision, GiveUp):
            self._override(step)

    def _candidate(self, step: Step, evidence: Evidence) -> Candidate:
        try:
            return self.team.verifier.answer(step.index, step.question, evidence)
        except LLMOutputError as exc:
            self.ws.record(VERIFIER, ev.InvalidOutput(error=str(exc).splitlines()[0]))
            return Candidate(step.index, step.question, "unknown", (), "", "other")

    def _override(self, step: Step) -> None:
        """The verifier gave up: the controller keeps the best usable candidate (uncertain) or none."""
        override = self.team.controller.override(step.question, step.attempts, step=step.index)
        self.ws.record(CONTROLLER, ev.Override(step=step.index, decision=override.decision,
                                               answer=override.attempt.candidate.answer if override.attempt else ""))
        if override.attempt is None or override.statement is None:
            step.give_up()
            return
        self._publish(step, override.attempt, self._hold(VERIFIER, override.statement), uncertain=True)

    def _publish(self, step: Step, attempt: Any, statement: Statement, *, uncertain: bool) -> None:
        """The step is answered: its statement goes to the assembler in this wave's round."""
        step.accept(attempt, statement, uncertain=uncertain)
        self._post("assert", VERIFIER, (ASSEMBLER,), {"step": step.index, "answer": attempt.candidate.answer,
                                                      "query": attempt.query}, [statement])

    # -- global backtracking ---------------------------------------------------------
    def _settle_across_steps(self) -> None:
        """The assembler's contradictions go to the supervisor through the channel, a bounded number of times."""
        while self.team.controller.may_roll_back():
            escalations = self.team.assembler.contradictions(self._results())
            if not escalations:
                return
            first = escalations[0]
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
        culprit.discard_answer()
        for statement in plan.reassert:  # unaffected statements stand as they were
            stamped = self._hold(statement.agent, statement)
            if statement.agent == VERIFIER:
                self.steps[statement.subquestion].statement = stamped
        for index in plan.affected_steps:
            self.steps[index].reopen()
        for kept in plan.keep:  # a kept statement that met its rival in a round was never published
            if kept.subquestion not in plan.affected_steps and not self.ws.holds(ASSEMBLER, kept.id):
                self._post("assert", VERIFIER, (ASSEMBLER,), {"step": kept.subquestion}, [kept])
        for challenge in self.team.controller.challenges(culprit.index, plan.keep):
            self.challenges += 1
            step = self.steps[challenge.step]
            self._post("challenge", CONTROLLER, (RETRIEVER, VERIFIER), {
                "step": challenge.step, "statement": challenge.statement.text, "question": step.question,
                "exclude": sorted(step.excluded)}, [challenge.statement])

    # -- the answer ------------------------------------------------------------------
    def _assemble(self) -> Assembly:
        assembly = self.team.assembler.assemble(self.question, self._results())
        self._post("inform", ASSEMBLER, (SUPERVISOR, CONTROLLER), {"answer": assembly.answer, "rule": assembly.rule})
        self.channel.deliver_round()
        for step in self.steps:
            if step.statement is not None:
                self.team.controller.reward(step.statement.agent)
        return assembly

    def _fallback(self) -> Assembly:
        """The plan gave no answer: the verifier answers the whole question from its passages and the steps'."""
        self.calls.budget.check()
        evidence = self.team.retriever.gather(self.question, [s.evidence for s in self.steps])
        self._post("inform", RETRIEVER, (VERIFIER,), {"step": "whole question", "query": self.question,
                                                      **_evidence_payload(evidence)})
        try:
            candidate = self.team.verifier.answer(len(self.steps), self.question, evidence)
        except LLMOutputError as exc:
            self.ws.record(VERIFIER, ev.InvalidOutput(error=str(exc).splitlines()[0]))
            return Assembly("unknown")
        rejection = ("no answer in the passages" if is_unknown(candidate.answer)
                     else answer_type_problem(self.question, candidate.answer, self.team.rules))
        if rejection:
            self.ws.record(CONTROLLER, ev.FallbackAnswer(answer="unknown", rejected=candidate.answer, reason=rejection))
            return Assembly("unknown")
        self.fallback_cited = tuple(p for p in candidate.cited if not p.suspicious) or evidence.passages[:1]
        self.ws.record(CONTROLLER, ev.FallbackAnswer(answer=candidate.answer,
                                                     passages=tuple(p.id for p in self.fallback_cited)))
        self._post("inform", ASSEMBLER, (SUPERVISOR, CONTROLLER), {"answer": candidate.answer, "fallback": True})
        self.channel.deliver_round()
        return Assembly(candidate.answer)

    # -- small helpers ----------------------------------------------------------------
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


def _evidence_payload(evidence: Evidence) -> dict:
    """The passages and graph facts of a retriever message, as logged."""
    return {"passages": [{"id": p.id, "title": p.title, "score": round(p.score, 4), "text": p.text,
                          "suspicious": p.suspicious} for p in evidence.passages],
            "facts": [f.text for f in evidence.facts]}
