"""The second road, carried out: the whole question read over the run's evidence, met against the chain.

The chain's answer becomes a :class:`~reagent_local.agents.messages.Road` that the
supervisor trusts or not; a chain in doubt meets the whole question's answer in one
channel round (two asserts carrying the roads), the channel escalates a disagreement,
the supervisor's verdict comes back through the driver (:meth:`SecondRoad.settled` records it), and
a chain that loses is rolled back at its weakest step and solved again once. Every step of it is a
decision returned to the driver (decisions.py: ``Meet``, ``Redo``, ``Done``), which runs the rounds.
"""

from __future__ import annotations

from typing import Sequence

from ..agents.assembler import AGENT as ASSEMBLER, Assembly, final_statement
from ..agents.controller import AGENT as CONTROLLER
from ..agents.messages import CHAIN, WHOLE, EvidenceFound, Road
from ..agents.retriever import AGENT as RETRIEVER
from ..agents.supervisor import ChainFacts, RoadsVerdict
from ..core import events as ev
from ..core.evidence import Evidence, EvidencePassage, is_unknown, supported, values_agree
from ..errors import LLMOutputError
from ..rules import answer_type_problem
from .decisions import Decision, Done, Meet, Redo
from .state import RunState

FALLBACK = "whole-question fallback"  # the Assembly rule of an answer the plan could not give


class SecondRoad:
    """The run's second road: read once, met against the chain, settled by the supervisor (decisions, never changes)."""

    def __init__(self, run: RunState) -> None:
        self.run = run
        self.whole: Road | None = None  # the whole question's road, once read
        self.whole_evidence: Evidence | None = None

    def answer(self, chain: Assembly) -> Decision:
        """The chain's answer against the whole question's: a doubtful chain meets the second road in one round;
        a disagreement goes to the supervisor, and a chain that loses is redone once at its weakest step."""
        run = self.run
        chain_road = self._chain_road(chain)
        if chain_road.trusted:  # one reading of the whole question rarely beats it
            run.notes.signal("two-roads", False, f"the chain is trusted: {chain_road.note}")
            return Done(chain)
        whole = self._whole_road()
        if whole is None or is_unknown(chain.answer):
            return self.fallback() if is_unknown(chain.answer) else Done(chain)
        if values_agree(chain.answer, whole.answer):
            run.notes.signal("two-roads", False, f"both roads answer {chain.answer!r}")
            return Done(chain)
        return Meet(chain_road, whole, self.whole_evidence, then=lambda verdict: self._met(chain, whole, verdict))

    def _met(self, chain: Assembly, whole: Road, verdict: RoadsVerdict | None) -> Decision:
        """The supervisor's verdict on the two roads: the chain stands, or is redone (rolled back at its weakest
        step), or the whole question's answer stands."""
        if verdict is None or verdict.winner.name == CHAIN:
            return Done(chain)
        if verdict.rollback is not None:  # the chain was rolled back at its weakest step: solve it again, look once more
            return Redo(then=lambda redone: self._redone(redone, whole))
        return Done(Assembly(whole.answer, "two-roads"), self._whole_cited(whole))  # the supervisor's verdict stands

    def _redone(self, chain: Assembly, whole: Road) -> Done:
        """The redone chain stands only if it now agrees with the whole question's answer."""
        if not is_unknown(chain.answer) and values_agree(chain.answer, whole.answer):
            self.run.notes.signal("two-roads", False, f"redone, the chain answers {chain.answer!r} too")
            return Done(chain)
        return Done(Assembly(whole.answer, "two-roads"), self._whole_cited(whole))

    def settled(self, verdict: RoadsVerdict) -> None:
        """The supervisor weighed the two roads: record its verdict (the driver rolls back a chain that lost)."""
        notes = self.run.notes
        chain, whole = (verdict.winner, verdict.loser) if verdict.winner.name == CHAIN else (verdict.loser, verdict.winner)
        notes.signal("two-roads", True, verdict.reason, chain=chain.answer, whole=whole.answer,
                     chain_confidence=chain.confidence, whole_confidence=whole.confidence,
                     winner=verdict.winner.name, judged=verdict.judged, chain_trusted=chain.trusted,
                     chain_problem=chain.problem, whole_problem=whole.problem,
                     chain_grounded=chain.grounded, whole_grounded=whole.grounded)

    def fallback(self) -> Done:
        """The plan gave no answer: the whole question's answer from its passages and the steps' (uncertain)."""
        run = self.run
        road = self._whole_road()
        rejection = "no answer in the passages" if road is None else road.problem
        if road is None or rejection:
            run.ws.record(CONTROLLER, ev.FallbackAnswer(answer="unknown", rejected=road.answer if road else "",
                                                        reason=rejection or ""))
            return Done(Assembly("unknown"))
        cited = self._whole_cited(road)
        run.ws.record(CONTROLLER, ev.FallbackAnswer(answer=road.answer, passages=tuple(p.id for p in cited)))
        return Done(Assembly(road.answer, FALLBACK), cited)

    def _whole_road(self) -> Road | None:
        """The whole question answered from its own search and the steps' passages (one model call, once)."""
        run, team = self.run, self.run.team
        if self.whole is not None or self.whole_evidence is not None:
            return self.whole
        team.controller.check_budget()
        found = [p for s in run.steps for p in s.cited]  # the passages the steps' answers came from
        self.whole_evidence = team.retriever.gather(run.question, found)
        # handed over, not delivered in a round: the assembler reads it at once (the channel rule, core/channel.py)
        run.hand(RETRIEVER, (ASSEMBLER,), EvidenceFound.of(None, self.whole_evidence))
        try:
            candidate = team.assembler.read_whole(run.question, self.whole_evidence)
        except LLMOutputError as exc:
            run.ws.record(ASSEMBLER, ev.InvalidOutput(error=str(exc).splitlines()[0]))
            return None
        if is_unknown(candidate.answer):
            return None
        confidence = candidate.probability if candidate.probability is not None else 0.5
        run.notes.whole_confidence = confidence
        statement = final_statement(run.question, candidate.answer, confidence=confidence, cited=candidate.cited)
        problem = answer_type_problem(run.question, candidate.answer, team.rules)
        grounded = supported(candidate.answer, candidate.cited or self.whole_evidence.passages)
        self.whole = Road(WHOLE, candidate.answer, statement, confidence, problem, grounded)
        return self.whole

    def _chain_road(self, chain: Assembly) -> Road:
        """The chain's answer as a road, as sure as its least sure step; the supervisor says whether it is trusted."""
        run = self.run
        answered = [s for s in run.steps if s.done and s.statement is not None]
        confidence = min((s.statement.confidence for s in answered if s.statement is not None), default=0.0)
        cited = tuple(p for s in run.steps for p in s.cited)
        problem = answer_type_problem(run.question, chain.answer, run.team.rules) \
            if not is_unknown(chain.answer) else "no answer"
        every_fact = bool(answered) and len(answered) == len(run.steps)
        how = ChainFacts(rule=chain.rule, answered=len(answered), steps=len(run.steps),
                         checked=every_fact and not any(s.uncertain for s in run.steps))
        statement = final_statement(run.question, chain.answer, confidence=confidence, cited=cited)
        road = Road(CHAIN, chain.answer, statement, confidence, problem, supported(chain.answer, cited))
        return run.team.supervisor.trust_chain(run.question, road, how)

    def _whole_cited(self, road: Road) -> tuple[EvidencePassage, ...]:
        """The passages the whole question's answer came from (the first passage read, if it cited none)."""
        passages: Sequence[EvidencePassage] = self.whole_evidence.passages if self.whole_evidence else ()
        cited = [p for p in passages if p.id in dict(road.statement.provenance) and not p.suspicious]
        return tuple(cited) or tuple(passages[:1])
