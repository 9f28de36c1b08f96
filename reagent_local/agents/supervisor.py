"""Supervisor (A_S): turns an escalated conflict into a global rollback plan, and settles the two roads.

Conflicts reach it through the channel: concurrent asserts that contradict each other
in one round. For each, it takes the minimal conflict set, gives up
the statement with the lowest confidence times its agent's reliability, and plans the
rollback: the checkpoint before that statement entered, the steps to solve again (the
discarded one and every step using its answer), and the statements the rollback would
take with it that the conflict does not touch (re-asserted as they were).

The two roads to an answer (the chain of steps, and the whole question read over the
run's evidence) meet on the channel as two asserts; when they disagree the channel
escalates them with the roads' answers, and :meth:`Supervisor.decide` settles them
(:meth:`Supervisor.settle_roads`): with evidence (answer type, grounding, trust, the
model's confidence) and, when that is not clear, one grammar-bound model call that
chooses between the two answers. A chain that loses is rolled back at its weakest step
(:meth:`Supervisor.roll_back_chain`) while the controller allows. Whether a chain is
trusted is the supervisor's call too (:meth:`Supervisor.trust_chain`, with the ``trust`` rules), and so is
the final answer's trust score (:meth:`Supervisor.score_answer`, agents/trust.py), given when the run closes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol, Sequence, Union

from ..core.channel import ConflictRecord
from ..core.conflicts import ConflictChecker, minimal_conflict_set
from ..core.knowledge import KnowledgeState, Statement, discarded_between
from ..core.log import Checkpoint
from ..errors import LLMOutputError
from ..core.plan import SubQuestion, dependents
from ..rules import RuleSet
from ..rules.stages import TRUST
from ..runtime.prompts import render_messages
from . import PROMPTS, Caller
from .controller import Controller
from ..core.evidence import Evidence, format_evidence
from .messages import CHAIN, WHOLE, Road, RoadAnswer
from .trust import Trust, TrustFacts, TrustModel, unscored
from .schemas import option_answer

AGENT = "supervisor"


class StateView(Protocol):
    """What the supervisor reads of the run's state (a Workspace fits)."""

    def state(self) -> KnowledgeState: ...

    def state_at(self, time: int) -> KnowledgeState: ...

    def checkpoint_before(self, statements: Sequence[Statement]) -> Checkpoint: ...


@dataclass(frozen=True)
class RollbackPlan:
    """The supervisor's decision on one conflict; the loop carries it out."""

    conflict_set: tuple[Statement, ...]
    discard: Statement
    keep: tuple[Statement, ...]
    checkpoint: Checkpoint
    affected_steps: tuple[int, ...]
    reassert: tuple[Statement, ...]
    reason: str
    source: str


@dataclass(frozen=True)
class ChainFacts:
    """How the chain's answer came about, as the supervisor weighs it for trust."""

    rule: str | None  # the assemble rule that decided it (None: the model did)
    answered: int  # steps that found their fact
    steps: int  # steps in the plan
    checked: bool  # every step found its fact and none is uncertain


@dataclass(frozen=True)
class RoadsVerdict:
    """Which road's answer stands, and why."""

    winner: Road
    loser: Road
    reason: str
    judged: bool = False  # a model call chose
    rollback: RollbackPlan | None = None  # the chain lost: its weakest step is rolled back


Decision = Union[RollbackPlan, RoadsVerdict]


class Supervisor:
    """Chooses what to give up and where to roll back to."""

    def __init__(self, checker: ConflictChecker, controller: Controller, call: Caller | None = None, *,
                 margin: float = 0.3, trust: float = 0.5, options_trust: float = 0.3,
                 rules: RuleSet | None = None, trust_model: TrustModel | None = None) -> None:
        self.checker = checker
        self.trust_model = trust_model  # the answer's trust score (agents/trust.py); None: unscored
        self.controller = controller
        self.call = call
        self.margin = margin  # when both roads are in doubt, a confidence lead this large settles them
        self.trust = trust  # a road answer at least this sure is not in doubt
        self.options_trust = options_trust  # the lower bar a ``trust`` rule allows a chain
        self.rules = rules if rules is not None else controller.rules

    def decide(self, conflict: ConflictRecord, view: StateView, plan: Sequence[SubQuestion]) -> Decision:
        """An escalated conflict settled: the two roads' answers by a verdict (with the chain's rollback when it
        loses and the controller allows one), any other conflict by a rollback plan."""
        roads = {b.road.name: b for b in conflict.bodies if isinstance(b, RoadAnswer)}
        if set(roads) != {CHAIN, WHOLE} or len(conflict.bodies) != 2:
            return self.resolve(conflict, view, plan)
        chain, whole = roads[CHAIN], roads[WHOLE]
        if whole.evidence is None:
            raise ValueError("the whole question's road must carry the evidence it was read over")
        verdict = self.settle_roads(chain.question, chain.road, whole.road, whole.evidence)
        if verdict.winner is whole.road and chain.steps and self.controller.may_roll_back():
            return replace(verdict, rollback=self.roll_back_chain(chain.steps, view, plan, verdict.reason))
        return verdict

    def conflict_set(self, conflict: ConflictRecord) -> tuple[Statement, ...]:
        """The minimal conflict set (through the core)."""
        if len(conflict.statements) < 3:
            return tuple(conflict.statements)
        return tuple(minimal_conflict_set(list(conflict.statements), self.checker))

    def strength(self, statement: Statement) -> float:
        """Confidence times the reliability of the agent that made the statement."""
        return statement.confidence * self.controller.score(statement.agent)

    def choose(self, conflict: ConflictRecord, mcs: Sequence[Statement]) -> Statement:
        """The statement to give up: the weakest (the latest on a tie)."""
        return min(mcs, key=lambda s: (self.strength(s), -(s.time or 0)))

    def resolve(self, conflict: ConflictRecord, view: StateView, plan: Sequence[SubQuestion]) -> RollbackPlan:
        """Plan the global rollback that settles one conflict."""
        mcs = self.conflict_set(conflict)
        discard = self.choose(conflict, mcs)
        keep = tuple(s for s in mcs if s.id != discard.id)
        checkpoint = view.checkpoint_before([discard])
        step = discard.subquestion
        affected = tuple(sorted(dependents(plan, step))) if isinstance(step, int) else ()
        doomed = discarded_between(view.state(), view.state_at(checkpoint.time))
        reassert = tuple(s for s in doomed if isinstance(s.subquestion, int) and s.subquestion not in affected)
        return RollbackPlan(mcs, discard, keep, checkpoint, affected, reassert, conflict.reason, conflict.source)

    def trust_chain(self, question: str, chain: Road, how: ChainFacts) -> Road:
        """The chain's road, trusted when

        - a rule decided it from steps that all passed their checks with at least ``trust`` confidence, or
        - a ``trust`` rule fits the question (an 'A or B?' question), every step found its fact, and every
          fact is at least ``options_trust`` sure.
        """
        every_fact = how.answered > 0 and how.answered == how.steps
        by_rule = how.rule is not None and how.checked and chain.confidence >= self.trust
        shape = self.rules.first(TRUST, question, record=False)  # recorded only when it is what trusts the chain
        by_shape = shape is not None and every_fact and chain.confidence >= self.options_trust
        trusted = chain.problem is None and (by_rule or by_shape)
        if trusted and not by_rule and shape is not None:
            self.rules.fire(shape.rule, detail=f"every fact at least {self.options_trust:.2f} sure")
        made = f"rule {how.rule}" if how.rule else "the model"
        doubt = "; a step is unanswered or unchecked" if not how.checked else ""
        note = f"{made} chose it from {how.answered} step(s), least sure {chain.confidence:.2f}" + ("" if trusted else doubt)
        return replace(chain, trusted=trusted, note=note)

    def score_answer(self, facts: TrustFacts) -> Trust:
        """The final answer's trust score: the probability, from what the run knows at its end, that it is right."""
        return self.trust_model.score(facts) if self.trust_model is not None else unscored(facts)

    def settle_roads(self, question: str, chain: Road, whole: Road, evidence: Evidence) -> RoadsVerdict:
        """The road whose answer stands: the answers' type and grounding, then trust, then confidence, then (only
        when both roads are in doubt and close) one grammar-bound model call choosing between the two."""
        for label, ok in (("does not fit the question", lambda r: r.problem is None),
                          ("is not in the passages", lambda r: r.grounded)):
            if ok(chain) != ok(whole):
                winner, loser = (chain, whole) if ok(chain) else (whole, chain)
                return RoadsVerdict(winner, loser, f"the {loser.name} answer {label}")
        if chain.trusted:
            return RoadsVerdict(chain, whole, f"the chain is trusted ({chain.note})")
        if whole.confidence >= self.trust:
            return RoadsVerdict(whole, chain, f"the chain is in doubt ({chain.note}); the whole question's answer "
                                              f"is sure ({whole.confidence:.2f})")
        lead = chain.confidence - whole.confidence
        if abs(lead) >= self.margin or self.call is None:
            winner, loser = (chain, whole) if lead >= 0 else (whole, chain)
            return RoadsVerdict(winner, loser, f"both roads are in doubt; the {winner.name} answer is surer "
                                               f"({winner.confidence:.2f} against {loser.confidence:.2f})")
        # the whole question's own prompt with one line more: the model has just read it (its KV is reused)
        choice = f"{question}\nChoose the answer the passages support: {chain.answer!r} or {whole.answer!r}"
        messages = render_messages(PROMPTS, "answer", evidence=format_evidence(evidence), question=choice)
        try:
            chosen = self.call(AGENT, messages, option_answer((chain.answer, whole.answer)), max_tokens=40).value.answer
        except LLMOutputError as exc:  # logged by the call: the surer road stands, as without a model
            winner, loser = (chain, whole) if lead >= 0 else (whole, chain)
            return RoadsVerdict(winner, loser, f"both roads are in doubt; the model's choice was unusable "
                                               f"({str(exc).splitlines()[0]}), so the surer {winner.name} answer "
                                               f"stands", judged=True)
        winner, loser = (chain, whole) if chosen == chain.answer else (whole, chain)
        return RoadsVerdict(winner, loser, f"both roads are in doubt; asked to choose, the model took the "
                                           f"{winner.name} answer", judged=True)

    def roll_back_chain(self, chain: Sequence[Statement], view: StateView, plan: Sequence[SubQuestion],
                        reason: str) -> RollbackPlan:
        """The chain lost: give up its weakest step's statement and redo that step and every step using it."""
        weakest = min(chain, key=lambda s: (self.strength(s), -(s.time or 0)))
        checkpoint = view.checkpoint_before([weakest])
        affected = tuple(sorted(dependents(plan, weakest.subquestion))) if isinstance(weakest.subquestion, int) else ()
        doomed = discarded_between(view.state(), view.state_at(checkpoint.time))
        reassert = tuple(s for s in doomed if isinstance(s.subquestion, int) and s.subquestion not in affected)
        return RollbackPlan(tuple(chain), weakest, (), checkpoint, affected, reassert, reason, "two-roads")
