"""Supervisor decisions: the statement to give up, where to roll back, what to redo and what to keep."""

from __future__ import annotations

from reagent_local.agents.controller import Controller
from reagent_local.agents.supervisor import Supervisor
from reagent_local.core.channel import ConflictRecord
from reagent_local.core.conflicts import ConflictChecker
from reagent_local.core.knowledge import make_statement
from reagent_local.core.log import EventLog
from reagent_local.core.workspace import Workspace
from reagent_local.plan import plan_from
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


def test_a_broken_bridge_doubts_its_foundation_unless_that_is_clearly_stronger():
    supervisor = Supervisor(ConflictChecker(), Controller(RuleSet()))
    earlier = make_statement("q0 -> Tom Hale", subquestion=0, confidence=0.7)
    later = make_statement("q1 -> Oslo", subquestion=1, confidence=0.6)
    bridge = ConflictRecord((earlier, later), "never mentioned", 1, (), 0, kind="bridge", source="assembler")
    assert supervisor.choose(bridge, (earlier, later)) == earlier
    sure = make_statement("q0 -> Tom Hale", subquestion=0, confidence=1.0)
    assert supervisor.choose(bridge, (sure, make_statement("q1 -> Oslo", subquestion=1, confidence=0.5))).text \
        == "q1 -> Oslo"
