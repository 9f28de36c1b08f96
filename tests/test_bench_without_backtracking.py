"""Exact accounting: every ReAgent record carries the answer its question gets with backtracking off.

A scripted benchmark with known answers, through the real pipeline: on q1 a local retry fixes
step 1 (and step 2 then asks about another person), on q2 a retry of an unsure right answer
breaks it, on q3 nothing fires. One `reagent-both` run must give exactly 1 fixed and 1 broken,
and its answers without backtracking must be those of a separate `reagent-none` run.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from reagent_local.bench.memo_llm import CallMemo, MemoLLM, request_key
from reagent_local.bench.records import RECORDS_FILE, read_records
from reagent_local.bench.runner import run_benchmark
from reagent_local.config import load_config
from reagent_local.datasets import load_questions, open_corpus
from reagent_local.errors import LLMOutputError
from reagent_local.llm import Message
from reagent_local.testing import InMemoryIndex, ScriptedLLM, answer_citing

from pydantic import BaseModel

QUESTIONS = [
    ("q1", "When was the founder of the Ardent Company born?", "1870",
     [["Ardent Company", ["The Ardent Company was founded in 1901 by Mira Voss."]],
      ["Mira Voss", ["Mira Voss (born 1870), founder of the Ardent Company, was a merchant."]],
      ["Paul Reed", ["Paul Reed (born 1855) was a sailor on the Ardent."]]]),
    ("q2", "Where was Ilse Brandt born?", "Kessel",
     [["Ilse Brandt", ["Ilse Brandt (born 1950 in Kessel) is a painter."]],
      ["Brandt family", ["The Brandt family settled in Oberau in 1960."]]]),
    ("q3", "What is the capital of Norland?", "Vesk",
     [["Norland", ["Norland is a country whose capital is Vesk."]]]),
]
SLOW = 0.3  # seconds of the one call only the run without backtracking makes


def write_dataset(path: Path) -> Path:
    records = [{"_id": qid, "type": "bridge", "level": "hard", "question": q, "answer": a,
                "supporting_facts": [[context[0][0], 0]], "context": context} for qid, q, a, context in QUESTIONS]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def scripted_model() -> ScriptedLLM:
    """Answers decided by the prompt alone (as a greedy model with the aligned prefill): no rule counts its uses."""
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": ["Who founded the Ardent Company?", "When was #1 born?"]},
                 schema="Decomposition", contains="Ardent")
    for _, question, _, _ in QUESTIONS[1:]:
        llm.add_rule({"subquestions": [question]}, schema="Decomposition", contains=question)
    llm.add_rule({"query": "Ardent Company founder"}, schema="Reformulation", contains="Ardent")
    llm.add_rule({"query": "Brandt family Oberau"}, schema="Reformulation", contains="Brandt")
    # q1, step 1: first a name in no passage (a failed check), then on the retry the founder
    llm.add_rule(answer_citing("Mira Voss", "Ardent Company"), schema="SubAnswer", contains="It is not Paul Reed",
                 confidence=0.95)
    llm.add_rule({"answer": "Paul Reed", "passages": [1], "subject": "Ardent Company", "relation": "other"},
                 schema="SubAnswer", contains="Who founded the Ardent Company?", confidence=0.95)
    llm.add_rule(answer_citing("1870", "Mira Voss"), schema="SubAnswer", contains="When was Mira Voss born?",
                 confidence=0.95)

    def slowly_1855(messages: list[Message], schema: type[BaseModel]) -> dict:
        time.sleep(SLOW)
        return answer_citing("1855", "Paul Reed")(messages, schema)

    llm.add_rule(slowly_1855, schema="SubAnswer", contains="When was Paul Reed born?", confidence=0.95)
    # q2: the right answer, unsure; the retry reads another passage and is sure of the wrong one
    llm.add_rule(answer_citing("Oberau", "Ilse Brandt"), schema="SubAnswer", contains="Oberau", confidence=0.9)
    llm.add_rule(answer_citing("Kessel", "Ilse Brandt"), schema="SubAnswer", contains="Ilse Brandt born?",
                 confidence=0.2)
    llm.add_rule(answer_citing("Vesk", "Norland"), schema="SubAnswer", contains="Norland?", confidence=0.95)
    return llm


def run(data: Path, out: Path, methods: list[str]) -> list[dict]:
    index = InMemoryIndex()
    for n, passage in enumerate(open_corpus(load_questions(data, "hotpotqa"))):
        index.add(passage.title, passage.text, n)
    config = load_config({"retrieval.top_k": 1}, env={})
    run_benchmark("hotpotqa", data, config=config, methods=methods, out=out, llm=scripted_model(), retriever=index)
    return read_records(out / RECORDS_FILE)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("exact")
    data = write_dataset(folder / "tiny.json")
    both = {r["id"]: r for r in run(data, folder / "both", ["reagent-both"])}
    none = {r["id"]: r for r in run(data, folder / "none", ["reagent-none"])}
    return {"both": both, "none": none, "folder": folder}


def test_one_run_gives_exact_fixed_and_broken(runs: dict) -> None:
    both = runs["both"]
    assert {q: r["prediction"] for q, r in both.items()} == {"q1": "1870", "q2": "Oberau", "q3": "Vesk"}
    assert {q: r["answer_without_backtracking"] for q, r in both.items()} == {"q1": "1855", "q2": "Kessel",
                                                                              "q3": "Vesk"}
    assert [both[q]["em_without_backtracking"] for q in ("q1", "q2", "q3")] == [0.0, 1.0, 1.0]
    summary = json.loads((runs["folder"] / "both" / "summary.json").read_text())
    effect = summary["backtracking"]["reagent-both"]
    assert (effect["fired"], effect["exact"], effect["unknown"]) == (2, 2, 0)
    assert effect["fixed"] == ["q1"] and effect["broken"] == ["q2"]
    assert "| reagent-both | 3 | 2 | 2 | 1 | 1 | 0 | 1, " in (runs["folder"] / "both" / "results.md").read_text()


def test_the_answers_without_backtracking_are_a_separate_none_runs(runs: dict) -> None:
    both, none = runs["both"], runs["none"]
    for qid in both:
        assert both[qid]["answer_without_backtracking"] == none[qid]["prediction"]
        cost = both[qid]["without_backtracking_cost"]
        if both[qid]["backtracked"]:  # the calls before the paths part replayed, the rest made: none's calls
            assert cost["replayed"] + cost["calls"] == none[qid]["llm_calls"] and cost["replayed"] > 0
            assert cost["run_id"] and cost["run_id"] != both[qid]["run_id"]
        else:  # nothing fired: the run's own answer at no cost
            assert cost == {"calls": 0, "replayed": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0,
                            "run_id": None, "error": None}
    # q1's step 2 asks about another person without the retry: the one call the second run makes itself
    assert both["q1"]["without_backtracking_cost"]["calls"] == 1
    assert both["q2"]["without_backtracking_cost"]["calls"] == 0
    # that call's time and cost are the second run's, not the question's
    assert both["q1"]["without_backtracking_cost"]["seconds"] >= SLOW > both["q1"]["seconds"]
    assert both["q1"]["llm_calls"] == 5 and none["q1"]["llm_calls"] == 3
    assert none["q1"]["answer_without_backtracking"] == "1855"  # reagent-none: its own answer


def test_a_paired_compare_of_the_two_runs_agrees(runs: dict) -> None:
    from reagent_local.bench.compare_view import comparison

    result = comparison([runs["folder"] / "both", runs["folder"] / "none"], resamples=200)
    assert result["all"]["fixed"] == ["q1"] and result["all"]["broken"] == ["q2"]


class Echo(BaseModel):
    text: str


def test_memo_llm_replays_only_exact_requests_and_remembers_failures() -> None:
    inner = ScriptedLLM()
    inner.add_rule({"text": "a"}, contains="first")
    inner.add_rule("{not json", contains="broken")
    memo = CallMemo()
    recorder, replayer = MemoLLM(inner, memo), MemoLLM(inner, memo, replay=True)
    ask = [{"role": "user", "content": "first"}]
    assert recorder.generate_json(ask, Echo, max_tokens=10).value.text == "a"
    assert recorder.generate_json(ask, Echo, max_tokens=10).value.text == "a"  # recording never replays
    assert len(inner.requests) == 2 and len(memo) == 1
    with pytest.raises(LLMOutputError):
        recorder.generate_json([{"role": "user", "content": "broken"}], Echo)
    assert replayer.generate_json(ask, Echo, max_tokens=10).value.text == "a"
    with pytest.raises(LLMOutputError):
        replayer.generate_json([{"role": "user", "content": "broken"}], Echo)
    assert len(inner.requests) == 3 and replayer.tally.replayed == 2 and replayer.tally.calls == 0
    replayer.generate_json(ask, Echo, max_tokens=11)  # another max_tokens is another request
    assert len(inner.requests) == 4 and replayer.tally.calls == 1 and replayer.tally.prompt_tokens == 1
    assert replayer.model_id == "scripted"
    key = request_key("m", ask, Echo, 10, 0.0, 0)
    assert key != request_key("m", ask, Echo, 10, 0.0, 1) and key != request_key("other", ask, Echo, 10, 0.0, 0)
    memo.clear()
    assert len(memo) == 0


def test_what_counts_as_fired() -> None:
    from types import SimpleNamespace

    from reagent_local.bench.without_backtracking import fired

    quiet = dict(backtracks={"local": 0, "global": 0}, signals=(), roads=None)
    assert not fired(SimpleNamespace(**quiet))
    assert fired(SimpleNamespace(**{**quiet, "backtracks": {"local": 0, "global": 1}}))
    # the roads can change an answer without a rollback: a signal or a verdict is enough
    assert fired(SimpleNamespace(**{**quiet, "signals": ("two-roads",)}))
    assert fired(SimpleNamespace(**{**quiet, "roads": {"winner": "whole"}}))
