"""The second road, carried out: the whole question read over the run's evidence, met against the chain.

A mixin of :class:`reagent_local.run.QuestionRun` (the loop's state lives there). The chain's
answer becomes a :class:`Road`; a chain in doubt meets the whole question's answer in one
channel round, the channel escalates a disagreement, the supervisor settles it, and a chain
that loses is rolled back at its weakest step and solved again once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..agents.assembler import AGENT as ASSEMBLER, Assembly, final_statement
from ..agents.controller import AGENT as CONTROLLER
from ..agents.evidence import EvidencePassage, evidence_payload, grounded_in, is_unknown, values_agree
from ..agents.retriever import AGENT as RETRIEVER
from ..agents.supervisor import AGENT as SUPERVISOR, Road
from ..core import events as ev
from ..errors import LLMOutputError
from ..rules import answer_type_problem
from ..rules.shapes import either_or_options
from ..text import normalize

if TYPE_CHECKING:
    from .driver import QuestionRun

    _Base = QuestionRun
else:
    _Base = object

FALLBACK = "whole-question fallback"  # the Assembly rule of an answer the plan could not give


class SecondRoad(_Base):
    """The loop's second road and its settling."""

    def _two_roads(self, chain: Assembly) -> Assembly:
        """The chain's answer against the whole question's: a doubtful chain meets the second road in one round;
        a disagreement goes to the supervisor, and a chain that loses is redone once at its weakest step."""
        chain_road = self._chain_road(chain)
        if chain_road.trusted and not self.settings.read_trusted_chains:  # one reading of the whole question rarely beats it
            self._signal("two-roads", False, f"the chain is trusted: {chain_road.note}")
            return chain
        whole = self._whole_road()
        if whole is None or is_unknown(chain.answer):
            return self._fallback() if is_unknown(chain.answer) else chain
        if values_agree(chain.answer, whole.answer):
            self._signal("two-roads", False, f"both roads answer {chain.answer!r}")
            return chain
        self._meet(chain_road, whole)
        if self.verdict is None or self.verdict.winner is chain_road:
            return chain
        if self.reopened:  # the chain was rolled back at its weakest step: solve it again and look once more
            self._solve_pending()
            chain = self._assemble()
            if not is_unknown(chain.answer) and values_agree(chain.answer, whole.answer):
                self._signal("two-roads", False, f"redone, the chain answers {chain.answer!r} too")
                return chain
        self.fallback_cited = self._whole_cited(whole)
        return Assembly(whole.answer, "two-roads")  # the supervisor's verdict stands

    def _meet(self, chain: Road, whole: Road) -> None:
        """Both roads assert their answer in one round: the channel escalates the conflict, _settle_roads decides."""
        self.verdict, self.roads = None, {chain.statement.id: chain, whole.statement.id: whole}
        for road in (chain, whole):
            self._post("assert", ASSEMBLER, (SUPERVISOR,), {"road": road.name, "answer": road.answer}, [road.statement])
        while self.channel.pending:
            self._deliver()

    def _settle_roads(self) -> None:
        """The supervisor weighs the two roads; a chain that loses is rolled back at its weakest step."""
        chain, whole = (r for r in self.roads.values())
        assert self.whole_evidence is not None
        self.verdict = verdict = self.team.supervisor.settle_roads(self.question, chain, whole, self.whole_evidence)
        self._signal("two-roads", True, verdict.reason, chain=chain.answer, whole=whole.answer,
                     chain_confidence=chain.confidence, whole_confidence=whole.confidence,
                     winner=verdict.winner.name, judged=verdict.judged, chain_trusted=chain.trusted,
                     chain_problem=chain.problem, whole_problem=whole.problem,
                     chain_grounded=chain.grounded, whole_grounded=whole.grounded)
        self.reopened = False
        held = [s.statement for s in self.steps if s.done and s.statement is not None]
        if verdict.winner is whole and held and self.team.controller.may_roll_back():
            plan = self.team.supervisor.roll_back_chain(held, self.ws, [s.sub for s in self.steps], verdict.reason)
            self._carry_out(plan)
            self.reopened = True
            self.roads_rollbacks += 1

    def _whole_road(self) -> Road | None:
        """The whole question answered from its own search and the steps' passages (one model call, once)."""
        if self.whole is not None or self.whole_evidence is not None:
            return self.whole
        self.calls.budget.check()
        # the passages the steps' answers came from, and (after a new plan) the first plan's
        found = [p for s in self.steps for p in s.cited] + list(self.earlier_cited)
        evidence = self.whole_evidence = self.team.retriever.gather(self.question, found)
        self._post("inform", RETRIEVER, (ASSEMBLER,), {"step": "whole question", "query": self.question,
                                                       **evidence_payload(evidence)})
        try:
            candidate = self.team.assembler.read_whole(self.question, evidence)
        except LLMOutputError as exc:
            self.ws.record(ASSEMBLER, ev.InvalidOutput(error=str(exc).splitlines()[0]))
            return None
        if is_unknown(candidate.answer):
            return None
        confidence = candidate.probability if candidate.probability is not None else 0.5
        statement = final_statement(self.question, candidate.answer, confidence=confidence, cited=candidate.cited)
        problem = answer_type_problem(self.question, candidate.answer, self.team.rules, final=True)
        self.whole = Road("whole question", candidate.answer, statement, confidence, problem,
                          self._grounded(candidate.answer, candidate.cited or evidence.passages))
        return self.whole

    def _chain_road(self, chain: Assembly) -> Road:
        """The chain's answer as a road, as sure as its least sure step; trusted when

        - a rule decided it from steps that all passed their checks with at least ``chain_trust``
          confidence, or
        - the question names two options, every step found its fact, and every fact is at least
          ``options_trust`` sure: choosing between the named options from facts found for each is
          what a single reading of the whole question does worst;

        and never after a new plan: the first plan failed, and the answer the new one gives replaces
        what the run would have answered without it (the whole question read over both plans'
        passages), so it must win that comparison rather than skip it.
        """
        answered = [s for s in self.steps if s.done and s.statement is not None]
        confidence = min((s.statement.confidence for s in answered), default=0.0)
        cited = tuple(p for s in self.steps for p in s.cited)
        problem = answer_type_problem(self.question, chain.answer, self.team.rules, final=True) \
            if not is_unknown(chain.answer) else "no answer"
        every_fact = bool(answered) and len(answered) == len(self.steps)
        checked = every_fact and not any(s.uncertain for s in self.steps)
        by_rule = chain.rule is not None and checked and confidence >= self.settings.chain_trust
        by_options = either_or_options(self.question) is not None and every_fact \
            and confidence >= self.settings.options_trust
        trusted = problem is None and (by_rule or by_options) and not self.replanned
        how = f"rule {chain.rule}" if chain.rule else "the model"
        doubt = "; the plan was made again" if self.replanned else \
            ("; a step is unanswered or unchecked" if not checked else "")
        note = f"{how} chose it from {len(answered)} step(s), least sure {confidence:.2f}" + ("" if trusted else doubt)
        statement = final_statement(self.question, chain.answer, confidence=confidence, cited=cited)
        return Road("chain", chain.answer, statement, confidence, problem, self._grounded(chain.answer, cited),
                    trusted=trusted, note=note)

    def _fallback(self) -> Assembly:
        """The plan gave no answer: the whole question's answer from its passages and the steps' (uncertain)."""
        road = self._whole_road()
        rejection = "no answer in the passages" if road is None else road.problem
        if road is None or rejection:
            self.ws.record(CONTROLLER, ev.FallbackAnswer(answer="unknown", rejected=road.answer if road else "",
                                                         reason=rejection or ""))
            return Assembly("unknown")
        self.fallback_cited = self._whole_cited(road)
        self.ws.record(CONTROLLER, ev.FallbackAnswer(answer=road.answer,
                                                     passages=tuple(p.id for p in self.fallback_cited)))
        return Assembly(road.answer, FALLBACK)

    def _whole_cited(self, road: Road) -> tuple[EvidencePassage, ...]:
        """The passages the whole question's answer came from (the first passage read, if it cited none)."""
        passages = self.whole_evidence.passages if self.whole_evidence else ()
        cited = [p for p in passages if p.id in dict(road.statement.provenance) and not p.suspicious]
        return tuple(cited) or tuple(passages[:1])

    def _grounded(self, answer: str, passages: Sequence[EvidencePassage]) -> bool:
        return normalize(answer) in {"yes", "no"} or grounded_in(answer, [f"{p.title}: {p.text}" for p in passages])
