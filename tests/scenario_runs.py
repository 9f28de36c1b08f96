"""Scripted runs for the trace tests: the real Pipeline with ScriptedLLM over an in-memory index.

``rollback_run(log)`` answers the 1984-Olympics question and produces, in one run:
- a local rollback: the model is unsure of its first answer to step 1 ("Los Angeles", a
  city read from its passage, confidence 0.4), so the verifier rolls its state back and
  the retriever reformulates;
- a global rollback: step 4 claims Los Angeles is the capital of California while
  step 2 said Sacramento; the supervisor finds that conflict set and rolls everyone
  back to the checkpoint before step 4;
- a passage with planted markup (``PLANTED``) that must show as text in a trace.
"""

from __future__ import annotations

from dataclasses import replace

from reagent_local.config import Config, PipelineConfig
from reagent_local.core.log import EventLog
from reagent_local.reasoning.pipeline import Pipeline
from reagent_local.testing import InMemoryIndex, ScriptedLLM

QUESTION = "What is the population of the capital of the state where the 1984 Summer Olympics were held?"
# Closes the JSON <script> block if embedded raw; runs if ever inserted with innerHTML.
PLANTED = ("</script><script>window.__pwned = 1; document.title = 'pwned';</script>"
           "<img src=x onerror=\"window.__pwned = 2\"> & <b>bold</b>")
WRONG_STATE = "Los Angeles"  # the city, where step 1 asks for the state
WRONG_CAPITAL = "Los Angeles"


def olympics_index() -> InMemoryIndex:
    """The passages the scripted run retrieves from; one of them carries PLANTED."""
    idx = InMemoryIndex()
    idx.add("1984 Summer Olympics", "The 1984 Summer Olympics were held in Los Angeles, California. " + PLANTED)
    idx.add("California", "California is a state in the Western United States. Its capital is Sacramento "
                          "and its most populous city is Los Angeles.")
    idx.add("Sacramento", "Sacramento is the capital city of California, with a population of 508,000.")
    idx.add("Los Angeles", "Los Angeles is the largest city of California and the seat of Los Angeles County "
                           "government; it hosted the 1984 Summer Olympics.")
    return idx


def olympics_llm(step4_answers: tuple[str, ...] = (WRONG_CAPITAL,), wrong_state: bool = True) -> ScriptedLLM:
    """Scripted answers: step 1 first says Los Angeles, unsure (if ``wrong_state``); step 4 says ``step4_answers``, then
    Sacramento."""
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": [
        "In which state were the 1984 Summer Olympics held?",
        "What is the capital of #1?",
        "What is the population of #2?",
        "Which city is the seat of the government of #1?",
    ]}, schema="Decomposition")
    if wrong_state:
        llm.add_rule({"answer": WRONG_STATE, "passages": [1], "subject": "1984 Summer Olympics", "relation": "other"},
                     schema="SubAnswer", contains="In which state", times=1, confidence=0.4)
    llm.add_rule({"query": "1984 Summer Olympics host state"}, schema="Reformulation",
                 contains="In which state")
    llm.add_rule({"answer": "California", "passages": [1], "subject": "1984 Summer Olympics", "relation": "other"},
                 schema="SubAnswer", contains="In which state")
    llm.add_rule({"answer": "Sacramento", "passages": [1], "subject": "California", "relation": "capital"},
                 schema="SubAnswer", contains="What is the capital of California?")
    llm.add_rule({"answer": "508,000", "passages": [1], "subject": "Sacramento", "relation": "population"},
                 schema="SubAnswer", contains="population of Sacramento")
    for city in step4_answers:
        llm.add_rule({"answer": city, "passages": [1, 2], "subject": "California", "relation": "capital"},
                     schema="SubAnswer", contains="seat of the government of California", times=1)
    llm.add_rule({"answer": "Sacramento", "passages": [1, 2], "subject": "California", "relation": "capital"},
                 schema="SubAnswer", contains="seat of the government of California")
    llm.add_rule({"query": "California state capital seat of government"}, schema="Reformulation")
    llm.add_rule({"answer": "508,000"}, schema="FinalAnswer")
    return llm


def scenario_config(backtracking: str = "both", **pipeline) -> Config:
    """Three passages per search; both kinds of backtracking unless told; other pipeline settings as given.

    The second road is off unless asked for (``two_roads=True``): these scenarios script the chain's calls only.
    Every question-shape rule is on and passages are focused (500 characters), unless told otherwise: the
    scenarios test what the rules and the focusing do, whatever the shipped defaults keep.
    """
    base = Config()
    pipeline.setdefault("two_roads", False)
    pipeline.setdefault("rules", ("all",))
    return replace(base, pipeline=replace(PipelineConfig(), backtracking=backtracking, **pipeline),
                   retrieval=replace(base.retrieval, top_k=3, focus_chars=500))


def rollback_run(log: EventLog) -> str:
    """Run the scenario into ``log`` and return its run id."""
    answer = Pipeline(scenario_config(), llm=olympics_llm(), retriever=olympics_index(), log=log).ask(QUESTION)
    assert answer.backtracks == {"local": 1, "global": 1}, answer.backtracks  # the scenario's premise
    return answer.run_id


def simple_run(log: EventLog, question: str = "Who directed the film Blue Harbour?") -> str:
    """A one-step run with no backtracking; returns its run id."""
    idx = InMemoryIndex()
    idx.add("Blue Harbour", "Blue Harbour is a 1998 drama film directed by Mara Lind.")
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": [question]}, schema="Decomposition")
    llm.add_rule({"answer": "Mara Lind", "passages": [1], "subject": "Blue Harbour", "relation": "director"},
                 schema="SubAnswer")
    return Pipeline(scenario_config(), llm=llm, retriever=idx, log=log).ask(question).run_id


CAPITAL_QUESTION = "What is the capital of the state where the 1984 Summer Olympics were held?"


def capitals_llm() -> ScriptedLLM:
    """Steps 2, 3 and 4 all use step 1 (one wave, one round): step 3 claims Los Angeles against both others' Sacramento
    once, then says Sacramento."""
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": ["In which state were the 1984 Summer Olympics held?", "What is the capital of #1?",
                                   "Which city is the seat of the government of #1?",
                                   "Which city is the state capital of #1?"]}, schema="Decomposition")
    llm.add_rule({"answer": "California", "passages": [1], "subject": "1984 Summer Olympics", "relation": "other"},
                 schema="SubAnswer", contains="In which state")
    llm.add_rule({"answer": WRONG_CAPITAL, "passages": [1, 2], "subject": "California", "relation": "capital"},
                 schema="SubAnswer", contains="seat of the government of California", times=1, confidence=0.6)
    llm.add_rule({"answer": "Sacramento", "passages": [1], "subject": "California", "relation": "capital"},
                 schema="SubAnswer")
    llm.add_rule({"query": "California state capital seat of government"}, schema="Reformulation")
    llm.add_rule({"answer": "Sacramento"}, schema="FinalAnswer")
    return llm


def challenge_run(log: EventLog) -> str:
    """Step 3's Los Angeles meets two Sacramentos in one round: two conflicts on step 3, two global rollbacks, then
    the controller challenges the claim that won the second."""
    answer = Pipeline(scenario_config("global"), llm=capitals_llm(), retriever=olympics_index(), log=log).ask(
        CAPITAL_QUESTION)
    assert answer.challenges == 1, answer.challenges
    return answer.run_id


def nonsense_run(log: EventLog) -> str:
    """The model answers with text that is not JSON: llm_error and invalid_output notes, a step with no answer."""
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": ["Who directed the film Blue Harbour?"]}, schema="Decomposition")
    llm.add_rule("@@@ not json \x1b[31m", schema="SubAnswer")
    llm.add_rule({"query": "Blue Harbour"}, schema="Reformulation")
    return Pipeline(scenario_config(), llm=llm, retriever=olympics_index(), log=log).ask(
        "Who directed the film Blue Harbour?").run_id


def channel_run(log: EventLog) -> str:
    """No pipeline: concurrent conflicting asserts (an escalation), a judge result and notes of other kinds (an
    override that kept nothing, as older runs' logs hold)."""
    from conftest import append_raw
    from reagent_local.core import events as ev
    from reagent_local.core.channel import Channel, Message
    from reagent_local.core.conflicts import Verdict
    from reagent_local.core.knowledge import make_statement
    from reagent_local.core.workspace import Workspace

    ws = Workspace.start(log, "What is the capital of California?", {})
    channel = Channel(ws)
    a = make_statement(subject="California", relation="capital", value="Sacramento")
    b = make_statement(subject="California", relation="capital", value="Los Angeles")
    channel.post(Message("assert", "verifier", ("assembler",), (a,)))
    channel.post(Message("assert", "retriever", ("assembler",), (b,)))
    channel.deliver_round()
    ws.record_judgement("verifier", a, b, Verdict(True, "LLM judge: contradict"), cached=False)
    ws.record("controller", ev.Override(step=0, decision="no usable answer"))
    ws.record("controller", ev.BudgetExhausted(what="LLM calls", answer="Sacramento"))
    append_raw(ws, "kg", "custom_kind", {"detail": "<b>not markup</b>"})  # a kind this version does not know
    ws.finish("Sacramento", "budget", {"uncertain": True, "uncertain_reason": "budget exhausted: LLM calls"},
              uncertain=True)
    return ws.run_id
