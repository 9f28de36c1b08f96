"""Controller decisions: skip, override, challenge, the rollback bound, reliability and the budget."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reagent_local.agents.controller import Budget, BudgetExhausted, Controller
from reagent_local.agents.verifier import Candidate, Verifier
from reagent_local.core.conflicts import ConflictChecker
from reagent_local.core.knowledge import make_statement
from reagent_local.core.plan import SubQuestion
from reagent_local.rules import RuleSet
from reagent_local.testing import ScriptedLLM

from roles_support import caller, evidence

EVIDENCE = evidence(("Mara Lind", "Mara Lind (born 1961 in Oslo) is a Danish director."))


def tried(answer: str, question: str = "Where was Mara Lind born?"):
    agent = Verifier(caller(ScriptedLLM()), ConflictChecker(), RuleSet())
    return agent.examine(Candidate(0, question, answer, EVIDENCE.passages, "Mara Lind", "other"), EVIDENCE,
                         query=question)


def test_a_step_needing_an_unanswered_step_is_skipped():
    controller = Controller(RuleSet())
    sub = SubQuestion(1, "Where was #1 born?", (0,))
    assert controller.skip(sub, {0: "unknown"}).reason == "depends on unanswered step(s) [1]"
    assert controller.skip(sub, {0: "Mara Lind"}) is None


def test_the_override_keeps_the_surest_attempt_its_confidence_capped():
    # every attempt of a step sent back for a retry passed its checks (the verifier retries no other)
    controller = Controller(RuleSet())
    attempts = [replace(tried("Oslo"), confidence=0.6), replace(tried("1961"), confidence=0.3)]
    kept = controller.override(attempts, step=0)
    assert (kept.decision, kept.step, kept.attempt.candidate.answer) == ("keep best candidate", 0, "Oslo")
    assert kept.statement.confidence == 0.4


def test_repeated_conflicts_on_a_step_challenge_the_statements_that_won():
    controller = Controller(RuleSet(), challenge_after=2)
    winner = make_statement("capital -> Sacramento", subquestion=1)
    assert controller.challenges(3, [winner]) == []
    (challenge,) = controller.challenges(3, [winner])
    assert (challenge.step, challenge.statement) == (1, winner)
    assert controller.challenges(3, [winner]) == []  # one challenge per step


def test_global_rollbacks_are_bounded():
    controller = Controller(RuleSet(), max_rollbacks=1)
    assert controller.may_roll_back()
    controller.count_rollback()
    assert not controller.may_roll_back()


def test_reliability_drops_on_discard_and_recovers_on_survival():
    controller = Controller(RuleSet())
    assert controller.penalise("verifier") == 0.8 and controller.reward("verifier") == 0.85


def test_the_budget_stops_at_its_call_limit():
    budget = Budget(max_llm_calls=1, max_seconds=60)
    budget.charge_call()
    with pytest.raises(BudgetExhausted, match="1 LLM calls"):
        budget.charge_call()


def test_the_controller_owns_the_budgets_a_step_solved_again_gets_one_retry():
    budget = Budget(max_llm_calls=1, max_seconds=60)
    controller = Controller(RuleSet(), budget=budget, max_retries=2)
    assert (controller.retries(fresh=False), controller.retries(fresh=True)) == (2, 1)
    assert Controller(RuleSet(), max_retries=0).retries(fresh=True) == 0
    controller.check_budget()
    budget.charge_call()  # the call ledger charges every model call to the controller's budget
    with pytest.raises(BudgetExhausted):
        controller.check_budget()
    assert Controller(RuleSet()).budget.max_seconds == float("inf")  # on its own: no limit


def test_the_controller_rewards_the_agents_of_the_statements_an_answer_stood_on():
    from reagent_local.agents.messages import AnswerMade, Recheck
    from reagent_local.core.channel import Message

    controller = Controller(RuleSet())
    controller.penalise("verifier")
    stood_on = make_statement("q -> a", agent="verifier", subquestion=0)
    controller.read([Message.of(AnswerMade(answer="a", rule="chain-last-step"), "assembler", ("controller",),
                                (stood_on,)),
                     Message.of(Recheck(step=0, statement="q -> a", question="q"), "controller", ("verifier",),
                                (stood_on,))])  # not an answer: no reward
    assert controller.score("verifier") == 0.85
