"""Scripted runs for the trace tests: the real Pipeline with ScriptedLLM over an in-memory index.

``rollback_run(log)`` answers the 1984-Olympics question and produces, in one run:
- a local rollback: the first answer to step 1 ("Nevada") is in none of its passages,
  so the verifier rolls its state back and the retriever reformulates;
- a global rollback: step 4 claims Los Angeles is the capital of California while
  step 2 said Sacramento; the supervisor finds that conflict set and rolls everyone
  back to the checkpoint before step 4;
- a passage with planted markup (``PLANTED``) that must show as text in a trace.
"""

from __future__ import annotations

from dataclasses import replace

from reagent_local.config import Config, PipelineConfig
from reagent_local.log import EventLog
from reagent_local.pipeline import Pipeline
from reagent_local.testing import InMemoryIndex, ScriptedLLM

QUESTION = "What is the population of the capital of the state where the 1984 Summer Olympics were held?"
# Closes the JSON <script> block if embedded raw; runs if ever inserted with innerHTML.
PLANTED = ("</script><script>window.__pwned = 1; document.title = 'pwned';</script>"
           "<img src=x onerror=\"window.__pwned = 2\"> & <b>bold</b>")
WRONG_STATE = "Nevada"
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


def olympics_llm() -> ScriptedLLM:
    """Scripted answers: a wrong first answer for step 1, a conflicting first answer for step 4."""
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": [
        "In which state were the 1984 Summer Olympics held?",
        "What is the capital of #1?",
        "What is the population of #2?",
        "Which city is the seat of the government of #1?",
    ]}, schema="Decomposition")
    llm.add_rule({"answer": WRONG_STATE, "passages": [1], "subject": "1984 Summer Olympics", "relation": "other"},
                 schema="SubAnswer", contains="In which state", times=1)
    llm.add_rule({"query": "1984 Summer Olympics host state"}, schema="Reformulation",
                 contains="In which state")
    llm.add_rule({"answer": "California", "passages": [1], "subject": "1984 Summer Olympics", "relation": "other"},
                 schema="SubAnswer", contains="In which state")
    llm.add_rule({"answer": "Sacramento", "passages": [1], "subject": "California", "relation": "capital"},
                 schema="SubAnswer", contains="What is the capital of California?")
    llm.add_rule({"answer": "508,000", "passages": [1], "subject": "Sacramento", "relation": "population"},
                 schema="SubAnswer", contains="population of Sacramento")
    llm.add_rule({"answer": WRONG_CAPITAL, "passages": [1, 2], "subject": "California", "relation": "capital"},
                 schema="SubAnswer", contains="seat of the government of California", times=1)
    llm.add_rule({"answer": "Sacramento", "passages": [1, 2], "subject": "California", "relation": "capital"},
                 schema="SubAnswer", contains="seat of the government of California")
    llm.add_rule({"query": "California state capital seat of government"}, schema="Reformulation")
    llm.add_rule({"answer": "508,000"}, schema="FinalAnswer")
    return llm


def scenario_config() -> Config:
    """Both kinds of backtracking, three passages per search."""
    base = Config()
    return replace(base, pipeline=replace(PipelineConfig(), backtracking="both"),
                   retrieval=replace(base.retrieval, top_k=3))


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
