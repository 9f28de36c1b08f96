"""Answer-Assembler decisions: the final answer (by a rule or by the model) and the whole question read."""

from __future__ import annotations

from reagent_local.agents.assembler import AnswerAssembler
from reagent_local.agents.schemas import option_answer
from reagent_local.rules import RuleSet
from reagent_local.testing import ScriptedLLM

from roles_support import caller, steps


def assembler(llm, rules=("all",)) -> AnswerAssembler:
    return AnswerAssembler(caller(llm), RuleSet(rules))


def test_a_rule_decides_before_the_model_and_is_named():
    llm = ScriptedLLM()
    result = assembler(llm).assemble("What film came out first, Blue Harbour or Red Sky?", steps(
        ("1981", ()), ("1962", ()), questions=["When was Blue Harbour released?", "When was Red Sky released?"]))
    assert (result.answer, result.rule) == ("Red Sky", "compare-options") and llm.requests == []


def test_the_model_answers_joins_no_rule_decides():
    llm = ScriptedLLM(responses=[{"answer": "Oslo and Rome"}])
    result = assembler(llm).assemble("Where were they born?", steps(("Oslo", ()), ("Rome", ())))
    assert (result.answer, result.rule) == ("Oslo and Rome", None)
    assert "1. q0 -> Oslo" in llm.requests[0].messages[-1]["content"]


def test_switching_a_rule_off_leaves_the_case_to_the_model():
    llm = ScriptedLLM(responses=[{"answer": "The Tallows"}])
    result = assembler(llm, ("all", "-compare-options", "-option-grammar")).assemble(
        "Which band was formed first, The Tallows or Red Kite?", steps(("1990", ()), ("1985", ())))
    assert result.answer == "The Tallows" and llm.requests[0].schema == "FinalAnswer"


def test_an_either_or_question_gets_an_option_from_the_grammar():
    llm = ScriptedLLM()
    llm.add_rule({"answer": "Red Kite"}, schema="OptionAnswer")
    agent = assembler(llm)
    result = agent.assemble("Which band is more popular, The Tallows or Red Kite?", steps(("very", ()), ("hugely", ())))
    assert result.answer == "Red Kite" and llm.requests[0].schema == "OptionAnswer"
    assert agent.rules.names_fired == ["option-grammar"]
    schema = option_answer(("The Tallows", "Red Kite")).model_json_schema()
    assert schema["properties"]["answer"]["enum"] == ["The Tallows", "Red Kite"]


def test_the_second_road_reads_the_evidence_sent_to_it():
    from reagent_local.agents.messages import EvidenceFound
    from reagent_local.core.channel import Message

    from roles_support import evidence

    passages = evidence(("Red Sky", "Red Sky (film) is a 1962 film."))
    question = "Which film came out first, Blue Harbour or Red Sky?"
    found = EvidenceFound.of(None, passages)
    inbox = [Message.of(found, "retriever", ("assembler",)), Message.of(EvidenceFound.of(0, passages), "retriever",
                                                                         ("verifier", "assembler"))]
    assert AnswerAssembler.read(inbox) == [found]  # the whole question's, not a step's
    llm = ScriptedLLM()
    llm.add_rule({"answer": "Red Sky (film)", "passages": [1], "subject": "", "relation": "other"}, schema="SubAnswer")
    rules = RuleSet(("all",))
    read = AnswerAssembler(caller(llm), rules).read_whole(question, found.evidence)
    assert (read.answer, read.cited) == ("Red Sky (film)", found.evidence.passages[:1]) and rules.names_fired == []


def test_an_option_grammar_spells_quotes_and_backslashes_safely_and_answers_as_given():
    import json

    from llama_cpp.llama_grammar import json_schema_to_gbnf

    from reagent_local.agents.schemas import option_answer

    schema = option_answer(('I Cannot Say "Farewell"', "back\\slash", "Tanjuska"))
    rule = next(line for line in json_schema_to_gbnf(json.dumps(schema.model_json_schema())).splitlines()
                if line.startswith("answer ::="))
    # the converter's only escapes left are the JSON string's own quotes
    assert rule.replace('\\"', "").count("\\") == 0, rule
    assert schema.model_validate_json('{"answer": "I Cannot Say \'Farewell\'"}').answer == 'I Cannot Say "Farewell"'
    assert schema.model_validate_json('{"answer": "back/slash"}').answer == "back\\slash"
