"""The two-turn benchmark: turns built from MuSiQue decompositions, runs resumed, the report's figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reagent_local.bench.conversation import (RECORDS, REPORT, TwoTurns, build_two_turns, first_turn, follow_up_turn,
                                              read_records, run_conversation_bench, summarize)
from reagent_local.core.log import EventLog
from reagent_local.errors import BenchRunError
from reagent_local.reasoning.pipeline import Pipeline
from reagent_local.testing import InMemoryIndex, ScriptedLLM

from scenario_runs import scenario_config


@pytest.mark.parametrize("step, first, follow", [
    ("Anna Benson >> spouse", "Who is the spouse of Anna Benson?", None),
    ("#1 >> father", None, "And who is their father?"),
    ("#1 >> capital", None, "And what is its capital?"),
    ("Van Hook Township >> located in the administrative territorial entity",
     "In which administrative territorial entity is Van Hook Township located?", None),
    ("What company did #1 merge with in 2002?", "What company did #1 merge with in 2002?",
     "And what company did it merge with in 2002?"),
    ("who does #1 's voice in spongebob", None, "And who does its voice in spongebob?"),
])
def test_steps_become_a_first_question_and_a_follow_up_that_never_names_the_bridge(step, first, follow) -> None:
    if first is not None:
        assert first_turn(step) == first
    if follow is not None:
        assert follow_up_turn(step) == follow and "#1" not in follow


def test_the_shared_musique_file_gives_two_turns_per_question(shared_data: Path) -> None:
    file = shared_data / "musique" / "musique_ans_dev_sample100.jsonl"
    ids = (shared_data / "splits" / "musique-dev.txt").read_text().split()
    items = build_two_turns(file, ids, 5)
    assert len(items) == 5 and all(i.id in ids for i in items)
    assert all(i.follow_up.startswith("And ") and i.first_answer and i.first_answer not in i.follow_up for i in items)
    with pytest.raises(BenchRunError):
        build_two_turns(file, ["no-such-id"])


ITEM = TwoTurns(id="q1", question="Where was the director of the film Blue Harbour born?", answers=("Aarhus",),
                first="Who directed the film Blue Harbour?", first_answer="Mara Lind", follow_up="And where were they born?")


def scripted_pipeline(log: EventLog) -> Pipeline:
    index = InMemoryIndex()
    index.add("Blue Harbour", "Blue Harbour is a 1998 drama film directed by Mara Lind.")
    index.add("Mara Lind", "Mara Lind is a Danish film director. She was born in Aarhus.")
    llm = ScriptedLLM()
    llm.add_rule({"question": "Where was Mara Lind born?"}, schema="Rewritten")
    llm.add_rule({"subquestions": ["Who directed the film Blue Harbour?", "Where was #1 born?"]}, schema="Decomposition",
                 contains="director of the film")
    llm.add_rule({"subquestions": ["Who directed the film Blue Harbour?"]}, schema="Decomposition",
                 contains="Who directed")
    llm.add_rule({"subquestions": ["Where was Mara Lind born?"]}, schema="Decomposition")
    llm.add_rule({"answer": "Mara Lind", "passages": [1], "subject": "Blue Harbour", "relation": "director"},
                 schema="SubAnswer", contains="Who directed")
    llm.add_rule({"answer": "Aarhus", "passages": [1], "subject": "Mara Lind", "relation": "birth_place"},
                 schema="SubAnswer", contains="Where was Mara Lind born?")
    return Pipeline(scenario_config(), llm=llm, retriever=index, log=log)


def test_a_run_writes_records_and_a_report_and_resumes(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    second = TwoTurns(**{**ITEM.to_dict(), "id": "q2", "answers": ("Aarhus",)})
    with EventLog(tmp_path / "log.duckdb") as log:
        summary = run_conversation_bench(scripted_pipeline(log), [ITEM], folder)
        record = read_records(folder)[0]
        assert record["one_turn"]["answer"] == "Aarhus" and record["follow_up_run"]["answer"] == "Aarhus"
        assert record["follow_up_run"]["rewritten"] == "Where was Mara Lind born?"
        assert record["follow_up_run"]["names_bridge"] and record["turn1"]["em"] == 1.0
        assert summary["questions"] == 1 and summary["as_well_f1"] == 1.0 and summary["follow_up"]["em"] == 1.0
        with pytest.raises(BenchRunError, match="--resume"):
            run_conversation_bench(scripted_pipeline(log), [ITEM, second], folder)
        (folder / RECORDS).write_text((folder / RECORDS).read_text() + '{"id": "torn', encoding="utf-8")
        summary = run_conversation_bench(scripted_pipeline(log), [ITEM, second], folder, resume=True)
    assert [r["id"] for r in read_records(folder)] == ["q1", "q2"] and summary["questions"] == 2
    report = (folder / REPORT).read_text()
    assert "| follow-up (turn 2, rewritten) | 1.000 | 1.000 |" in report and "Where was Mara Lind born?" in report
    assert json.loads((folder / "summary.json").read_text())["rewrite_names_bridge"] == 1.0


def test_the_summary_counts_where_the_follow_up_loses() -> None:
    def rec(one: float, follow: float) -> dict:
        return {"one_turn": {"em": one, "f1": one}, "follow_up_run": {"em": follow, "f1": follow, "names_bridge": False,
                                                                     "names_turn1_answer": True},
                "turn1": {"em": 1.0, "f1": 1.0}}

    s = summarize([rec(1.0, 0.0), rec(0.0, 1.0), rec(1.0, 1.0), rec(0.0, 0.0)])
    assert s["one_turn_right_follow_up_wrong"] == 1 and s["follow_up_right_one_turn_wrong"] == 1
    assert s["one_turn_right"] == 2 and s["follow_up_also_right"] == 1
    assert s["as_well_em"] == 0.75 and s["rewrite_names_bridge"] == 0.0 and s["rewrite_names_turn1_answer"] == 1.0
