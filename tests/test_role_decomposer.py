"""Question-Decomposer decisions: the plan, sent back when a plan-check rule objects, reshaped by the plan rules."""

from __future__ import annotations

from reagent_local.agents.decomposer import QuestionDecomposer
from reagent_local.rules import RuleSet
from reagent_local.testing import ScriptedLLM

from roles_support import caller

QUESTION = "Who founded the shipyard whose largest dock is in Larvik?"


def decomposer(llm, rules=("all",)) -> tuple[QuestionDecomposer, RuleSet]:
    rule_set = RuleSet(rules)
    return QuestionDecomposer(caller(llm), rule_set), rule_set


def test_a_plan_that_fails_again_after_it_was_sent_back_leaves_the_question_whole():
    question = "Where was the performer of the song Quiet Shore born?"
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": ["Who performed the song Quiet Shore?", "Where was the performer born?"]},
                 schema="Decomposition")
    agent, rules = decomposer(llm)
    plan = agent.plan(question)
    assert [s.text for s in plan.steps] == [question] and not plan.error
    assert len(llm.requests) == 2 and rules.names_fired == ["anchor-each-step"]
    assert rules.fired[-1].detail == "the second plan failed the same way: the question is kept whole"


def test_a_plan_that_drops_a_name_of_the_question_stands():
    # no rule sends it back (keep-named-parts, which did, was removed: its own removal cost nothing on dev)
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": ["Which shipyard has a dock?", "Who founded #1?"]}, schema="Decomposition")
    agent, rules = decomposer(llm)
    assert [s.text for s in agent.plan(QUESTION).steps] == ["Which shipyard has a dock?", "Who founded #1?"]
    assert len(llm.requests) == 1 and rules.names_fired == []


def test_unusable_output_makes_the_question_one_step_and_says_why():
    llm = ScriptedLLM()
    llm.add_rule("not json", schema="Decomposition")
    plan = decomposer(llm)[0].plan(QUESTION)
    assert [s.text for s in plan.steps] == [QUESTION] and "not JSON" in plan.error and plan.raw == "not json"


def test_plan_rules_reshape_the_plan_and_are_recorded():
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": ["How many members does The Tallows have?", "How many members does Red Kite have?",
                                   "Which band has more members?"]}, schema="Decomposition")
    agent, rules = decomposer(llm)
    plan = agent.plan("Which band has more members, The Tallows or Red Kite?")
    assert len(plan.steps) == 2 and rules.names_fired == ["either-or-steps"]
    one = ScriptedLLM()
    one.add_rule({"subquestions": ["Who was the director of Actrius?"]}, schema="Decomposition")
    agent, rules = decomposer(one)
    assert [s.text for s in agent.plan("Who directed the film Actrius?").steps] == ["Who directed the film Actrius?"]
    assert rules.names_fired == ["single-step-verbatim"]
    agent, rules = decomposer(one, ("all", "-single-step-verbatim"))
    assert [s.text for s in agent.plan("Who directed the film Actrius?").steps] == ["Who was the director of Actrius?"]


def test_a_plan_that_restates_the_question_is_sent_back_with_what_failed():
    question = "When was the author of the novel whose sequel won the Nordic Prize born?"
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": [question, "When was #1 born?"]}, schema="Decomposition", times=1)
    llm.add_rule({"subquestions": ["Which novel has a sequel that won the Nordic Prize?", "Who wrote #1?",
                                   "When was #2 born?"]}, schema="Decomposition")
    agent, rules = decomposer(llm)
    plan = agent.plan(question)
    assert len(plan.steps) == 3 and rules.names_fired == ["split-the-question"]
    assert "repeat the whole question" in llm.requests[1].messages[-1]["content"]


def test_a_plan_with_a_step_that_names_nothing_is_sent_back():
    question = "Where was the performer of the song Quiet Shore born?"
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": ["Who performed the song Quiet Shore?", "Where was the performer born?"]},
                 schema="Decomposition", times=1)
    llm.add_rule({"subquestions": ["Who performed the song Quiet Shore?", "Where was #1 born?"]},
                 schema="Decomposition")
    agent, rules = decomposer(llm)
    plan = agent.plan(question)
    assert [s.depends_on for s in plan.steps] == [(), (0,)] and rules.names_fired == ["anchor-each-step"]
    assert "step(s) 2 name nothing" in llm.requests[1].messages[-1]["content"]


def test_plan_checks_switched_off_send_nothing_back():
    llm = ScriptedLLM(responses=[{"subquestions": ["Who directed Blue Harbour?", "Where was the director born?"]}])
    agent, rules = decomposer(llm, ("all", "-anchor-each-step"))
    plan = agent.plan("Where was the director of Blue Harbour born?")
    assert [s.text for s in plan.steps] == ["Who directed Blue Harbour?", "Where was the director born?"]
    assert len(llm.requests) == 1 and rules.names_fired == []
