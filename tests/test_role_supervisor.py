"""Supervisor decisions: the statement to give up, where to roll back, what to redo and what to keep."""

from __future__ import annotations

from reagent_local.agents.controller import Controller
from reagent_local.agents.supervisor import Supervisor
from reagent_local.core.channel import ConflictRecord
from reagent_local.core.conflicts import ConflictChecker
from reagent_local.core.knowledge import make_statement
from reagent_local.core.log import EventLog
from reagent_local.core.workspace import Workspace
from reagent_local.core.plan import plan_from
from reagent_local.rules import RuleSet

PLAN = plan_from(["In which state were the Games held?", "What is the capital of #1?",
                  "What is the population of #2?", "Which city is the seat of government of #1?"], 4)


def capital(value: str, step: int, confidence: float):
    return make_statement(f"step {step + 1} -> {value}", subject="California", relation="capital", value=value,
                          subquestion=step, confidence=confidence)


def test_the_weaker_statement_goes_and_everything_after_it_is_planned():
    with EventLog(":memory:") as log:
        ws = Workspace.start(log, "q", {})
        ws.checkpoint("before step 2")
        sac = ws.assert_statement("verifier", capital("Sacramento", 1, 0.8))
        before4 = ws.checkpoint("before step 4")
        la = ws.assert_statement("verifier", capital("Los Angeles", 3, 0.6))
        pop = ws.assert_statement("verifier", make_statement("step 3 -> 508,000", subquestion=2))
        controller = Controller(RuleSet())
        plan = Supervisor(ConflictChecker(), controller).resolve(
            ConflictRecord((sac, la), "capital has one value", 1, (5, 6), 7), ws, PLAN)
        assert plan.discard == la and plan.keep == (sac,) and plan.checkpoint == before4
        assert plan.affected_steps == (3,)  # nothing uses step 4's answer
        assert plan.reassert == (pop,)  # step 3 entered after the checkpoint but has nothing to do with the conflict
        assert plan.source == "channel"


def test_reliability_weighs_confidence():
    controller = Controller(RuleSet())
    supervisor = Supervisor(ConflictChecker(), controller)
    strong, weak = capital("Sacramento", 1, 0.8), capital("Los Angeles", 3, 0.7)
    record = ConflictRecord((strong, weak), "two capitals", 1, (), 0)
    assert supervisor.choose(record, (strong, weak)) == weak
    for _ in range(2):
        controller.penalise(strong.agent or "")
    record = ConflictRecord((strong, weak), "two capitals", 1, (), 0)
    assert supervisor.strength(strong) < 0.8


def road(name: str, answer: str, confidence: float, problem=None, grounded=True, trusted=False):
    from reagent_local.agents.assembler import final_statement
    from reagent_local.agents.messages import Road

    return Road(name, answer, final_statement("q?", answer, confidence=confidence), confidence, problem, grounded,
                trusted=trusted)


def test_the_roads_are_settled_by_evidence_before_any_model_call():
    from reagent_local.testing import ScriptedLLM

    from roles_support import caller, evidence

    llm = ScriptedLLM()
    supervisor = Supervisor(ConflictChecker(), Controller(RuleSet()), caller(llm), margin=0.3)
    passages = evidence(("A", "text"))
    typed = supervisor.settle_roads("When?", road("chain", "Oslo", 0.9, problem="no date"), road("whole question", "1961", 0.2), passages)
    assert typed.winner.name == "whole question" and "does not fit" in typed.reason
    found = supervisor.settle_roads("q?", road("chain", "X", 0.9, grounded=False), road("whole question", "Y", 0.2), passages)
    assert found.winner.name == "whole question" and "not in the passages" in found.reason
    trusted = supervisor.settle_roads("q?", road("chain", "X", 0.6, trusted=True), road("whole question", "Y", 0.95),
                                      passages)
    assert trusted.winner.name == "chain" and "trusted" in trusted.reason
    doubted = supervisor.settle_roads("q?", road("chain", "X", 0.9), road("whole question", "Y", 0.5), passages)
    assert doubted.winner.name == "whole question" and "in doubt" in doubted.reason
    surer = supervisor.settle_roads("q?", road("chain", "X", 0.45), road("whole question", "Y", 0.1), passages)
    assert surer.winner.name == "chain" and not surer.judged and llm.requests == []


def test_close_roads_are_settled_by_one_grammar_bound_choice():
    from reagent_local.testing import ScriptedLLM

    from roles_support import caller, evidence

    llm = ScriptedLLM()
    llm.add_rule({"answer": "Y"}, schema="OptionAnswer")
    supervisor = Supervisor(ConflictChecker(), Controller(RuleSet()), caller(llm), margin=0.3)
    verdict = supervisor.settle_roads("q?", road("chain", "X", 0.45), road("whole question", "Y", 0.4),
                                      evidence(("A", "text")))
    assert verdict.winner.name == "whole question" and verdict.judged
    (request,) = llm.requests
    assert request.messages[-1]["content"].endswith("Choose the answer the passages support: 'X' or 'Y'")


def test_an_unusable_choice_leaves_the_surer_road_standing():
    from reagent_local.testing import ScriptedLLM

    from roles_support import caller, evidence

    llm = ScriptedLLM()
    llm.add_rule('{"answer": "Y', schema="OptionAnswer")  # not JSON: the model was cut off
    supervisor = Supervisor(ConflictChecker(), Controller(RuleSet()), caller(llm), margin=0.3)
    verdict = supervisor.settle_roads("q?", road("chain", "X", 0.45), road("whole question", "Y", 0.4),
                                      evidence(("A", "text")))
    assert verdict.winner.name == "chain" and "unusable" in verdict.reason and len(llm.requests) == 1


def test_a_chain_that_loses_is_rolled_back_at_its_weakest_step():
    with EventLog(":memory:") as log:
        ws = Workspace.start(log, "q", {})
        ws.checkpoint("before step 1")
        s1 = ws.assert_statement("verifier", make_statement("step 1 -> California", subquestion=0, confidence=0.9))
        before2 = ws.checkpoint("before step 2")
        s2 = ws.assert_statement("verifier", capital("Sacramento", 1, 0.3))
        ws.checkpoint("before step 3")
        s3 = ws.assert_statement("verifier", make_statement("step 3 -> 508,000", subquestion=2, confidence=0.8))
        plan = Supervisor(ConflictChecker(), Controller(RuleSet())).roll_back_chain(
            [s1, s2, s3], ws, PLAN, "the whole question's answer is surer")
        assert plan.discard == s2 and plan.checkpoint == before2 and plan.source == "two-roads"
        assert plan.affected_steps == (1, 2)  # step 3 uses step 2's answer
        assert plan.reassert == ()


def _roads_conflict(ws, chain_answer: str, chain_confidence: float, whole_answer: str, whole_confidence: float):
    """Two roads' asserts as the channel escalates them, and the chain's step statements."""
    from reagent_local.agents.assembler import final_statement
    from reagent_local.agents.messages import CHAIN, WHOLE, Road, RoadAnswer

    from roles_support import evidence

    ws.checkpoint("before step 1")
    s1 = ws.assert_statement("verifier", make_statement("step 1 -> California", subquestion=0, confidence=0.9))
    ws.checkpoint("before step 2")
    s2 = ws.assert_statement("verifier", capital("Sacramento", 1, chain_confidence))
    question = "What is the capital of the state that hosted the Games?"
    chain = Road(CHAIN, chain_answer, final_statement(question, chain_answer, confidence=chain_confidence),
                 chain_confidence, note="the model chose it")
    whole = Road(WHOLE, whole_answer, final_statement(question, whole_answer, confidence=whole_confidence),
                 whole_confidence)
    bodies = (RoadAnswer(question=question, road=chain, steps=(s1, s2)),
              RoadAnswer(question=question, road=whole, evidence=evidence(("Sacramento", "The capital."))))
    return ConflictRecord((chain.statement, whole.statement), "one value", 1, (8, 9), 10, bodies=bodies), s2


def test_the_roads_conflict_the_channel_escalates_is_settled_with_the_chains_rollback_while_allowed():
    from reagent_local.agents.supervisor import RoadsVerdict, RollbackPlan

    with EventLog(":memory:") as log:
        ws = Workspace.start(log, "q", {})
        conflict, weakest = _roads_conflict(ws, "Los Angeles", 0.2, "Sacramento", 0.9)
        controller = Controller(RuleSet(), max_rollbacks=1)
        verdict = Supervisor(ConflictChecker(), controller).decide(conflict, ws, PLAN[:2])
        assert isinstance(verdict, RoadsVerdict) and verdict.winner.name == "whole question"
        assert isinstance(verdict.rollback, RollbackPlan) and verdict.rollback.discard == weakest
        assert verdict.rollback.source == "two-roads" and verdict.rollback.affected_steps == (1,)
        controller.count_rollback()  # the bound is spent: the verdict stands without a rollback
        assert Supervisor(ConflictChecker(), controller).decide(conflict, ws, PLAN[:2]).rollback is None
    with EventLog(":memory:") as log:
        ws = Workspace.start(log, "q", {})
        kept = Supervisor(ConflictChecker(), Controller(RuleSet())).decide(
            _roads_conflict(ws, "Sacramento, CA", 0.95, "Oslo", 0.2)[0], ws, PLAN[:2])
        assert kept.winner.name == "chain" and kept.rollback is None


def test_any_other_escalated_conflict_is_planned_as_a_rollback():
    from reagent_local.agents.supervisor import RollbackPlan

    with EventLog(":memory:") as log:
        ws = Workspace.start(log, "q", {})
        ws.checkpoint("before step 2")
        sac = ws.assert_statement("verifier", capital("Sacramento", 1, 0.8))
        la = ws.assert_statement("verifier", capital("Los Angeles", 3, 0.6))
        plan = Supervisor(ConflictChecker(), Controller(RuleSet())).decide(
            ConflictRecord((sac, la), "two capitals", 1, (5, 6), 7), ws, PLAN)
        assert isinstance(plan, RollbackPlan) and plan.discard == la


def test_the_supervisor_trusts_a_chain_by_its_rule_or_by_the_question_shape():
    from reagent_local.agents.assembler import final_statement
    from reagent_local.agents.messages import CHAIN, Road
    from reagent_local.agents.supervisor import ChainFacts

    def chain(question: str, confidence: float, problem=None) -> Road:
        return Road(CHAIN, "Red Sky", final_statement(question, "Red Sky", confidence=confidence), confidence, problem)

    rules = RuleSet(["all"])
    supervisor = Supervisor(ConflictChecker(), Controller(rules), trust=0.5, options_trust=0.3, rules=rules)
    by_rule = ChainFacts(rule="chain-last-step", answered=2, steps=2, checked=True)
    by_model = ChainFacts(rule=None, answered=2, steps=2, checked=True)
    plain, either = "Who directed Red Sky?", "Which film came out first, Blue Harbour or Red Sky?"
    assert supervisor.trust_chain(plain, chain(plain, 0.6), by_rule).trusted
    assert not supervisor.trust_chain(plain, chain(plain, 0.4), by_rule).trusted  # below the bar
    assert not supervisor.trust_chain(plain, chain(plain, 0.9), by_model).trusted  # the model chose, no shape
    trusted = supervisor.trust_chain(either, chain(either, 0.4), by_model)  # the either-or shape's lower bar
    assert trusted.trusted and "either-or-trust" in rules.names_fired
    assert not supervisor.trust_chain(either, chain(either, 0.4, problem="not an option"), by_model).trusted
    unchecked = ChainFacts(rule="chain-last-step", answered=1, steps=2, checked=False)
    doubted = supervisor.trust_chain(plain, chain(plain, 0.9), unchecked)
    assert not doubted.trusted and doubted.note.endswith("a step is unanswered or unchecked")
    off = RuleSet(["all", "-either-or-trust"])
    strict = Supervisor(ConflictChecker(), Controller(off), options_trust=0.3, rules=off)
    assert not strict.trust_chain(either, chain(either, 0.4), by_model).trusted  # the rule switched off
