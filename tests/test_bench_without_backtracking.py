"""Exact accounting: every ReAgent record carries the answer its question gets with backtracking off.

A scripted benchmark with known answers, through the real pipeline: on q1 a local retry fixes
step 1 (and step 2 then asks about another person), on q2 a retry of an unsure right answer
breaks it, on q3 nothing fires. One `reagent-both` run must give exactly 1 fixed and 1 broken,
and its answers without backtracking must be those of a separate `reagent-none` run.
"""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from reagent_local.bench.memo_llm import CallMemo, MemoLLM, request_key
from reagent_local.errors import LLMOutputError
from reagent_local.testing import ScriptedLLM

from bench_support import SLOW, run_exact, write_exact_dataset

@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("exact")
    data = write_exact_dataset(folder / "tiny.json")
    both = {r["id"]: r for r in run_exact(data, folder / "both", ["reagent-both"])}
    none = {r["id"]: r for r in run_exact(data, folder / "none", ["reagent-none"])}
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
