"""One question's run of the ReAgent loop (the pipeline's per-question state).

Steps (sub-questions) are solved in order; a step that depends on '#k' waits for
step k. Local backtracking happens inside a step (the verifier rolls its own state
back to the checkpoint taken before the step and the retriever tries a reformulated
query); global backtracking happens across steps (the supervisor rolls every agent
back to the checkpoint before a minimal conflict set and only the affected steps are
solved again).
"""

from __future__ import annotations

import time
from functools import partial
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from .agents.assembler import AGENT as ASSEMBLER, AnswerAssembler, Escalation, StepResult
from .agents.controller import AGENT as CONTROLLER, Budget, BudgetExhausted, Controller
from .agents.decomposer import AGENT as DECOMPOSER, QuestionDecomposer, SubQuestion
from .agents.evidence import Evidence, EvidencePassage, answer_type_problem, is_unknown, normalize
from .agents.retriever import AGENT as RETRIEVER, RetrieverAgent
from .agents.supervisor import AGENT as SUPERVISOR, Supervisor
from .agents.verifier import AGENT as VERIFIER, Candidate, Check, LLMJudge, Verifier, confidence_of
from .answer import Answer, PassageRef, SubQuestionResult
from .core.channel import Channel, Message as ChannelMessage
from .core.conflicts import ConflictChecker
from .errors import LLMOutputError
from .core.knowledge import Statement, make_statement
from .llm import JsonResult, Message
from .core.workspace import Workspace

if TYPE_CHECKING:
    from .pipeline import Pipeline


@dataclass
class Step:
    """Live state of one sub-question."""

    sub: SubQuestion
    question: str = ""
    answer: str = ""
    statement: Statement | None = None
    evidence: Evidence | None = None
    cited: tuple[EvidencePassage, ...] = ()
    excluded: set[str] = field(default_factory=set)
    rejected: set[str] = field(default_factory=set)
    uncertain: bool = False
    done: bool = False


class QuestionRun:
    """Executes the loop for one question and returns its Answer."""

    def __init__(self, pipeline: "Pipeline", question: str) -> None:
        self.p = pipeline
        self.question = question
        cfg = pipeline.config
        self.budget = Budget(cfg.pipeline.max_llm_calls, cfg.pipeline.max_seconds)
        self.controller = Controller()
        self.tokens = [0, 0]
        self.llm_seconds = 0.0
        self.backtracks = {"local": 0, "global": 0}
        self.challenges = 0
        self.started = time.monotonic()
        self.run_id = pipeline.log.start_run(question, _config_dict(cfg))
        self.ws = Workspace(pipeline.log, self.run_id)
        # the channel checks concurrent asserts with rules only; LLM judging is the verifier's job
        self.channel = Channel(self.ws, ConflictChecker())
        self.checker = ConflictChecker(LLMJudge(self.call), on_judgement=partial(self.ws.record_judgement, VERIFIER))
        self.decomposer = QuestionDecomposer(self.call, cfg.pipeline.max_subquestions)
        self.retriever = RetrieverAgent(pipeline.retriever, self.call, top_k=cfg.retrieval.top_k,
                                        mode=cfg.retrieval.mode, passage_chars=cfg.retrieval.passage_chars,
                                        kg=pipeline.kg if cfg.retrieval.use_kg else None)
        self.verifier = Verifier(self.call, self.checker)
        self.assembler = AnswerAssembler(self.call, self.checker)
        self.supervisor = Supervisor(self.checker, self.controller)
        self.steps: list[Step] = []
        self.prefetched: dict[int, Future] = {}
        self.fallback_cited: tuple[EvidencePassage, ...] = ()

    # -- accounting -------------------------------------------------------------
    def call(self, agent: str, messages: Sequence[Message], schema: type, *, max_tokens: int) -> JsonResult:
        """An LLM call on behalf of an agent: budget-checked, counted and logged."""
        self.budget.charge_call()
        model = self.p.model_for(agent)
        try:
            result = model.generate_json(messages, schema, max_tokens=max_tokens,
                                         temperature=self.p.config.llm.temperature, seed=self.p.config.llm.seed)
        except LLMOutputError as exc:
            self.p.log.record_llm_call(self.run_id, agent=agent, model=getattr(model, "model_id", "?"),
                                       prompt=list(messages), output=exc.raw, prompt_tokens=None,
                                       completion_tokens=None, seconds=None)
            self.ws.note(agent, "llm_error", {"error": str(exc).splitlines()[0], "raw": exc.raw[:2000]})
            raise
        call = result.call
        self.tokens[0] += call.prompt_tokens
        self.tokens[1] += call.completion_tokens
        self.llm_seconds += call.seconds
        self.p.log.record_llm_call(self.run_id, agent=agent, model=call.model_id, prompt=list(call.messages),
                                   output=call.raw, prompt_tokens=call.prompt_tokens,
                                   completion_tokens=call.completion_tokens, seconds=call.seconds)
        return result

    # -- the loop ---------------------------------------------------------------
    def execute(self) -> Answer:
        """Decompose, solve every step, resolve conflicts, assemble; never loops forever."""
        status, final, uncertain_reason = "ok", "", ""
        try:
            self._plan()
            for step in self.steps:
                self._solve(step)
            if self.p.global_backtracking:
                self._resolve_globally()
            final = self._assemble()
            if is_unknown(final) and self.p.config.pipeline.answer_fallback:
                final = self._fallback_answer()
                if not is_unknown(final):
                    uncertain_reason = "no answer through the plan; answered from the passages of the whole question"
        except BudgetExhausted as exc:
            status, uncertain_reason = "budget", f"budget exhausted: {exc.what}"
            final = self._best_answer()
            self.ws.note(CONTROLLER, "budget_exhausted", {"what": exc.what, "answer": final})
        except LLMOutputError as exc:
            status, uncertain_reason = "model_error", f"the model's output was unusable: {str(exc).splitlines()[0]}"
            final = self._best_answer()
        uncertain = bool(uncertain_reason) or any(s.uncertain for s in self.steps) or is_unknown(final)
        if not uncertain_reason and uncertain:
            uncertain_reason = "a step could not be verified" if not is_unknown(final) else "no answer found"
        answer = self._answer(final, uncertain, uncertain_reason)
        self.p.log.finish_run(self.run_id, answer=final, status=status, uncertain=uncertain, stats={
            "uncertain": uncertain, "uncertain_reason": uncertain_reason, "llm_calls": answer.llm_calls,
            "prompt_tokens": answer.prompt_tokens, "completion_tokens": answer.completion_tokens,
            "seconds": answer.seconds, "llm_seconds": answer.llm_seconds, "backtracks": dict(self.backtracks),
            "challenges": self.challenges, "reliability": dict(self.controller.reliability),
            "subquestions": [s.question for s in answer.subquestions],
            "passages": [p.id for p in answer.passages]})
        return answer

    def _plan(self) -> None:
        try:
            plan = self.decomposer.decompose(self.question)
        except LLMOutputError as exc:
            # visible, logged fallback: the question is treated as one step
            self.ws.note(DECOMPOSER, "decomposition_failed", {"error": str(exc).splitlines()[0], "raw": exc.raw})
            plan = [SubQuestion(0, self.question, ())]
        self.steps = [Step(sub) for sub in plan]
        self._send("inform", DECOMPOSER, [RETRIEVER, VERIFIER],
                   {"subquestions": [s.text for s in plan], "depends_on": [list(s.depends_on) for s in plan]})
        self._prefetch()

    def _prefetch(self) -> None:
        """Retrieve for independent steps concurrently while the model works on step 1."""
        independent = [s for s in self.steps if not s.sub.depends_on]
        if len(independent) < 2:
            return
        pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="retrieve")
        for step in independent:
            self.prefetched[step.sub.index] = pool.submit(self.retriever.retrieve, step.sub.text)
        pool.shutdown(wait=False)

    def _send(self, kind: str, sender: str, recipients: Sequence[str], payload: dict,
              statements: Sequence[Statement] = ()) -> Any:
        self.channel.post(ChannelMessage(type=kind, sender=sender, recipients=tuple(recipients),
                                         statements=tuple(statements), payload=payload))
        return self.channel.deliver_round()

    # -- one step with local backtracking ----------------------------------------
    def _answers(self) -> dict[int, str]:
        return {s.sub.index: s.answer for s in self.steps if s.done and s.answer}

    def _solve(self, step: Step, *, fresh: bool = False) -> None:
        """Retrieve, answer, verify; on failure backtrack locally up to the depth limit."""
        cfg = self.p.config.pipeline
        step.question = step.sub.resolve(self._answers())
        unanswered = [k + 1 for k in step.sub.depends_on if is_unknown(self.steps[k].answer)]
        if unanswered:
            # "Where was unknown born?" cannot be answered: spend no calls on it
            step.answer, step.statement, step.evidence, step.cited = "unknown", None, None, ()
            step.done, step.uncertain = True, True
            self.ws.note(CONTROLLER, "skipped", {"step": step.sub.index,
                                                 "reason": f"depends on unanswered step(s) {unanswered}"})
            return
        checkpoint = self.ws.checkpoint(f"before step {step.sub.index + 1}")
        query = step.question
        tried: list[tuple[float, Candidate, Evidence, Check]] = []
        # a step redone after a global rollback gets one retry: its first pass already had its full depth
        max_depth = min(1, cfg.max_backtrack_depth) if fresh else cfg.max_backtrack_depth
        for depth in range(max_depth + 1):
            self.budget.check()
            evidence = self._retrieve(step, query, use_prefetch=(depth == 0 and not fresh))
            try:
                candidate = self.verifier.answer(step.sub.index, step.question, evidence)
            except LLMOutputError as exc:
                candidate = Candidate(step.sub.index, step.question, "unknown", (), "", "other")
                self.ws.note(VERIFIER, "invalid_output", {"error": str(exc).splitlines()[0]})
            check = self.verifier.check(candidate, evidence, verified=self.ws.local_state(VERIFIER),
                                        facts=self._facts(evidence))
            if candidate.answer in step.rejected:
                check = Check(check.problems + (f"{candidate.answer!r} was discarded by the supervisor",),
                              check.kg_conflicts, check.kg_supports, check.own_conflicts)
            confidence = confidence_of(candidate, evidence, check)
            # the verifier asserts tentatively; a failed check takes it back with a local rollback
            statement = self._assert(candidate.to_statement(confidence), {"step": step.sub.index,
                                                                          "answer": candidate.answer, "query": query})
            tried.append((confidence, candidate, evidence, check))
            if check.ok and statement is not None:
                self._accept(step, candidate, evidence, statement)
                return
            if self._drop_weaker(check, statement) and self.p.local_backtracking:
                self._accept(step, candidate, evidence, statement)
                return
            if not self.p.local_backtracking:
                # no local backtracking (ablation): the first answer stands, flagged
                self._accept(step, candidate, evidence, statement, uncertain=True)
                return
            reasons = self._reasons(check) or ["the assertion conflicted with a concurrent one"]
            self.ws.rollback_local(VERIFIER, checkpoint.id, "; ".join(reasons))
            self._send("reject", VERIFIER, [RETRIEVER], {"step": step.sub.index, "answer": candidate.answer,
                                                         "reason": "; ".join(reasons)},
                       [statement or candidate.to_statement(confidence)])
            self.backtracks["local"] += 1
            repeated = sum(normalize(t[1].answer) == normalize(candidate.answer) for t in tried) > 1
            if depth == max_depth or repeated:
                # new evidence gave the same rejected answer again: more retries will not help
                break
            step.excluded |= {p.id for p in candidate.cited if p.suspicious}
            hints = [p.title for p in evidence.passages[:3]]
            query = self.retriever.reformulate(step.question, query, "; ".join(reasons), hints)
        self._override(step, tried)

    def _drop_weaker(self, check: Check, statement: Statement | None) -> bool:
        """Only conflicts with older, weaker statements of this step: retract those, keep the new one."""
        if statement is None or check.problems or check.kg_conflicts or not check.own_conflicts:
            return False
        if any(held.confidence >= statement.confidence for held, _ in check.own_conflicts):
            return False
        for held, verdict in check.own_conflicts:
            self.ws.retract(VERIFIER, held.id, f"weaker than {statement.text!r}: {verdict.reason}")
        self.backtracks["local"] += 1
        return True

    def _assert(self, statement: Statement, payload: dict) -> Statement | None:
        """Post an assert on the channel; the applied (time-stamped) statement, or None if escalated."""
        result = self._send("assert", VERIFIER, [ASSEMBLER], payload, [statement])
        applied = [s for s in result.applied if s.id == statement.id]
        if applied:
            return applied[0]
        held = [s for s in self.ws.local_state(VERIFIER) if s.id == statement.id]
        return held[0] if held else None

    def _override(self, step: Step, tried: list) -> None:
        """Depth exhausted: the controller keeps the best candidate seen, marked uncertain."""
        # a candidate of the wrong type ("Where ...?" -> a date) is no answer at all
        usable = [t for t in tried if not is_unknown(t[1].answer) and not t[3].kg_conflicts
                  and not answer_type_problem(step.question, t[1].answer)]
        if not usable:
            step.answer, step.done, step.uncertain = "unknown", True, True
            self.ws.note(CONTROLLER, "override", {"step": step.sub.index, "decision": "no usable answer"})
            return
        confidence, candidate, evidence, _ = max(usable, key=lambda t: t[0])
        self.ws.note(CONTROLLER, "override", {"step": step.sub.index, "decision": "keep best candidate",
                                                "answer": candidate.answer})
        statement = self._assert(candidate.to_statement(min(confidence, 0.4)),
                                 {"step": step.sub.index, "answer": candidate.answer, "override": True})
        self._accept(step, candidate, evidence, statement, uncertain=True)

    def _accept(self, step: Step, candidate: Candidate, evidence: Evidence, statement: Statement | None,
                uncertain: bool = False) -> None:
        step.answer, step.statement, step.evidence = candidate.answer, statement, evidence
        step.cited, step.done, step.uncertain = candidate.cited or evidence.passages[:1], True, uncertain

    def _retrieve(self, step: Step, query: str, *, use_prefetch: bool) -> Evidence:
        future = self.prefetched.pop(step.sub.index, None) if use_prefetch else None
        evidence = future.result() if future is not None and query == step.sub.text and not step.excluded else \
            self.retriever.retrieve(query, exclude=step.excluded)
        self._send("inform", RETRIEVER, [VERIFIER], {"step": step.sub.index, "query": query, **_evidence_payload(evidence)})
        return evidence

    def _facts(self, evidence: Evidence) -> list[Statement]:
        """Knowledge-graph facts of the evidence as statements of the agent 'kg'."""
        out = []
        for fact in evidence.facts:
            try:
                out.append(make_statement(fact.text, subject=fact.subject, relation=fact.relation, value=fact.value,
                                          agent="kg", provenance=[(fact.passage_id, 1.0)], confidence=0.9))
            except ValueError:
                continue  # a relation the core has no rule for: the graph fact is context only
        return out

    @staticmethod
    def _reasons(check: Check) -> list[str]:
        reasons = list(check.problems)
        reasons += [f"contradicts the infobox fact {f.text!r}" for f, _ in check.kg_conflicts]
        reasons += [f"contradicts verified {h.text!r}: {v.reason}" for h, v in check.own_conflicts]
        return reasons

    # -- global backtracking -------------------------------------------------------
    def _step_results(self) -> list[StepResult]:
        return [StepResult(s.sub.index, s.question, s.answer, s.statement,
                           tuple(p.text for p in (s.evidence.passages if s.evidence else ())), s.sub.depends_on)
                for s in self.steps if s.done]

    def _resolve_globally(self) -> None:
        """Escalated contradictions -> minimal conflict set -> global rollback -> re-run affected steps."""
        for _ in range(self.p.config.pipeline.max_backtrack_depth):
            escalations = self.assembler.contradictions(self._step_results())
            if not escalations:
                return
            self._handle(escalations[0])
        if self.assembler.contradictions(self._step_results()):
            for step in self.steps:
                step.uncertain = True

    def _step_of(self, statement: Statement) -> Step:
        return next(s for s in self.steps if s.sub.index == statement.subquestion)

    def _handle(self, escalation: Escalation) -> None:
        self._send("reject", ASSEMBLER, [SUPERVISOR], {"escalation": escalation.kind, "reason": escalation.reason},
                   escalation.statements)
        resolution = self.supervisor.resolve(escalation)
        # roll back to just before the statement given up entered: everything after it is undone
        target = self.ws.checkpoint_before([resolution.discard])
        self.ws.note(SUPERVISOR, "conflict_set", {"statements": [s.id for s in resolution.conflict_set],
                                                  "texts": [s.text for s in resolution.conflict_set],
                                                  "discard": resolution.discard.id, "reason": resolution.reason,
                                                  "checkpoint": target.id})
        discarded = self.ws.rollback_global(target.id, f"conflict: {resolution.reason}")
        self.backtracks["global"] += 1
        self.controller.penalise(resolution.discard.agent)
        culprit = self._step_of(resolution.discard)
        culprit.rejected.add(culprit.answer)
        culprit.excluded |= {p.id for p in culprit.cited}
        affected = self._dependents(culprit.sub.index)
        # statements the rollback removed but that the conflict does not touch are re-asserted as they were
        for statement in discarded:
            step = next((s for s in self.steps if s.sub.index == statement.subquestion), None)
            if step is not None and step.sub.index not in affected and statement.agent == VERIFIER:
                step.statement = self.ws.assert_statement(VERIFIER, statement)
        if self.controller.record_conflict(culprit.sub.index) >= self.controller.challenge_after:
            self._challenge(resolution.keep)
        for step in self.steps:
            if step.sub.index in affected:
                step.done = False
        for step in self.steps:
            if step.sub.index in affected:
                self._solve(step, fresh=True)

    def _dependents(self, index: int) -> set[int]:
        """A step and every step that (transitively) uses its answer."""
        affected = {index}
        changed = True
        while changed:
            changed = False
            for step in self.steps:
                if step.sub.index not in affected and affected & set(step.sub.depends_on):
                    affected.add(step.sub.index)
                    changed = True
        return affected

    def _challenge(self, statements: Sequence[Statement]) -> None:
        """Repeated conflicts: re-check the statements that were kept with fresh evidence."""
        for statement in statements:
            step = next((s for s in self.steps if s.sub.index == statement.subquestion), None)
            if step is None or step.sub.index in self.controller.challenged:
                continue
            self.controller.challenged.add(step.sub.index)
            self.challenges += 1
            self._send("challenge", CONTROLLER, [RETRIEVER, VERIFIER],
                       {"step": step.sub.index, "statement": statement.text}, [statement])
            if any(s.id == statement.id for s in self.ws.local_state(VERIFIER)):
                self.ws.retract(VERIFIER, statement.id, "challenged by the controller")
            self._solve(step, fresh=True)

    # -- assembling ------------------------------------------------------------------
    def _assemble(self) -> str:
        results = self._step_results()
        final = self.assembler.assemble(self.question, results) if results else "unknown"
        self._send("inform", ASSEMBLER, [SUPERVISOR, CONTROLLER], {"answer": final})
        for step in self.steps:
            if step.statement is not None:
                self.controller.reward(step.statement.agent)
        return final

    def _fallback_answer(self) -> str:
        """The plan gave no answer: the verifier answers the whole question from its passages and the steps'."""
        self.budget.check()
        evidence = self.retriever.retrieve(self.question)
        seen = {p.id for p in evidence.passages}
        extra: list[EvidencePassage] = []
        for step in self.steps:
            for passage in (step.evidence.passages[:2] if step.evidence else ()):
                if passage.id not in seen:
                    seen.add(passage.id)
                    extra.append(passage)
        evidence = Evidence(evidence.query, evidence.passages + tuple(extra[: self.p.config.retrieval.top_k]),
                            evidence.facts)
        self._send("inform", RETRIEVER, [VERIFIER], {"step": "whole question", "query": self.question,
                                                      **_evidence_payload(evidence)})
        try:
            candidate = self.verifier.answer(len(self.steps), self.question, evidence)
        except LLMOutputError as exc:
            self.ws.note(VERIFIER, "invalid_output", {"error": str(exc).splitlines()[0]})
            return "unknown"
        rejection = ("no answer in the passages" if is_unknown(candidate.answer)
                     else answer_type_problem(self.question, candidate.answer))
        if rejection:
            self.ws.note(CONTROLLER, "fallback_answer", {"answer": "unknown", "rejected": candidate.answer,
                                                         "reason": rejection})
            return "unknown"
        self.fallback_cited = tuple(p for p in candidate.cited if not p.suspicious) or evidence.passages[:1]
        self.ws.note(CONTROLLER, "fallback_answer", {"answer": candidate.answer,
                                                     "passages": [p.id for p in self.fallback_cited]})
        self._send("inform", ASSEMBLER, [SUPERVISOR, CONTROLLER], {"answer": candidate.answer, "fallback": True})
        return candidate.answer

    def _best_answer(self) -> str:
        """Best-supported answer so far: the latest answered step's answer."""
        answered = [s for s in self.steps if s.done and s.answer and not is_unknown(s.answer)]
        return answered[-1].answer if answered else "unknown"

    def _answer(self, final: str, uncertain: bool, reason: str) -> Answer:
        subs = []
        cited: dict[str, PassageRef] = {}  # by passage id, first citation first
        for step in self.steps:
            refs = tuple(PassageRef(p.id, p.title, p.text) for p in step.cited)
            for ref in refs:
                cited.setdefault(ref.id, ref)
            subs.append(SubQuestionResult(step.question or step.sub.text, step.answer or "unknown", refs,
                                          step.uncertain, tuple(f.text for f in step.evidence.facts) if step.evidence else ()))
        for p in self.fallback_cited:
            cited.setdefault(p.id, PassageRef(p.id, p.title, p.text))
        return Answer(
            question=self.question, answer=final, run_id=self.run_id, subquestions=tuple(subs),
            passages=tuple(cited.values()), backtracks=dict(self.backtracks), llm_calls=self.budget.llm_calls,
            prompt_tokens=self.tokens[0], completion_tokens=self.tokens[1],
            seconds=time.monotonic() - self.started, llm_seconds=self.llm_seconds, uncertain=uncertain,
            uncertain_reason=reason, challenges=self.challenges, judge_calls=self.checker.stats["judge_calls"])


def _evidence_payload(evidence: Evidence) -> dict:
    """The passages and graph facts of a retriever message, as logged."""
    return {"passages": [{"id": p.id, "title": p.title, "score": round(p.score, 4), "text": p.text,
                          "suspicious": p.suspicious} for p in evidence.passages],
            "facts": [f.text for f in evidence.facts]}


def _config_dict(config: Any) -> dict:
    from dataclasses import asdict

    return {k: {kk: (str(vv) if not isinstance(vv, (int, float, str, bool, type(None), dict)) else vv)
                for kk, vv in v.items()} for k, v in asdict(config).items()}
