"""`bench fit-router` and the `adaptive` method: the router learned from train runs, and used between RAG and IRCoT."""

from __future__ import annotations

import json
import random

import pytest
from reagent_local.agents.router import Reading, Router, load_router, stop_features
from reagent_local.bench.adaptive import Adaptive
from reagent_local.bench.fit_router import Example, fit_folders, fit_router, render_fit
from reagent_local.bench.methods import MethodContext
from reagent_local.bench.runner import run_benchmark
from reagent_local.cli import main
from reagent_local.config import load_config
from reagent_local.datasets import load_questions, open_corpus
from reagent_local.errors import BenchRunError
from reagent_local.testing import InMemoryIndex, Rule, ScriptedLLM

from bench_support import river_answers
from test_router import constant


def synthetic(n: int = 120, seed: int = 3) -> list[Example]:
    """The first road is right exactly when the model was sure of it; the second road is right on every
    other question, and needs ten calls more."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        confidence = rng.random()
        first = Reading("A", confidence, True, True, 3)
        first_f1, second_f1 = float(confidence > 0.6), float(i % 2 == 0)
        choose = {**stop_features("Who?", first), "second_confidence": rng.random(), "overlap": 0.0} \
            if first_f1 != second_f1 else None
        out.append(Example(f"q{i}", stop_features("Who?", first), choose, first_f1, second_f1, True, True, 1, 11))
    return out


def test_the_fit_learns_to_stop_when_the_first_road_is_sure_and_saves_calls():
    fit = fit_router(synthetic(), "adaptive")
    stop = fit.router.stop
    assert stop is not None and dict(zip(stop.features, stop.weights))["first_confidence"] > 0.5
    assert stop.probability({**dict(zip(stop.features, stop.mean)), "first_confidence": 0.95}) >= stop.threshold
    assert stop.probability({**dict(zip(stop.features, stop.mean)), "first_confidence": 0.1}) < stop.threshold
    policy = fit.report["cv"]["policy"]
    assert policy["f1"] > fit.report["always_second"] and policy["f1"] > fit.report["always_first"]
    assert policy["f1"] <= fit.report["oracle"] and policy["calls"] < fit.report["calls_always_second"]
    assert 0.2 < policy["stopped"] < 0.6
    # the second road alone costs its own calls only (11 with the first read before it, less that one)
    assert fit.report["calls_second_alone"] == 10 and fit.report["calls_always_first"] == 1
    text = render_fit(fit)
    assert "| learned router" in text and "first_confidence" in text
    assert "| the IRCoT alone | | 10.0 |" in text and "| always the IRCoT, after the RAG |" in text


def test_questions_where_the_first_road_gave_no_answer_neither_stop_nor_hide_its_features():
    examples = synthetic()
    for i in range(0, len(examples), 10):  # the first road found nothing here: only the question's features
        e = examples[i]
        examples[i] = Example(e.id, {k: v for k, v in e.stop.items() if k.startswith("question_")}, None,
                              0.0, e.second_f1, False, True, 1, 11)
    fit = fit_router(examples, "adaptive")
    assert "first_confidence" in fit.router.stop.features
    assert fit.report["stop_examples"] == len(examples) - 12


def test_a_fit_where_stopping_never_pays_stores_no_stop_model():
    examples = [Example(f"q{i}", {"x": float(i % 7)}, None, 0.0, 1.0, True, True, 1, 5) for i in range(30)]
    fit = fit_router(examples, "adaptive")
    assert fit.router.stop is None and fit.router.choose is None
    assert fit.report["cv"]["policy"]["f1"] == 1.0


def test_too_few_train_questions_are_refused():
    with pytest.raises(BenchRunError, match="too few"):
        fit_router(synthetic(6), "adaptive")


# -- from real run folders, through the runner and the CLI ----------------------------------------
N = 12


def write_rivers(path):
    records = [{"_id": f"q{i}", "type": "bridge", "level": "hard",
                "question": f"What is the capital of the country where the river Riv{i} flows?",
                "answer": f"City{i}", "supporting_facts": [[f"Riv{i}", 0], [f"Land{i}", 0]],
                "context": [[f"Riv{i}", [f"Riv{i} is a river.", f" Riv{i} flows through Land{i}."]],
                            [f"Land{i}", [f"Land{i} is a country.", f" Its capital is City{i}."]],
                            [f"Peak{i}", [f"Peak{i} is a mountain near the river Riv{i}." * (1 + i % 3)]]]}
               for i in range(N)]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def train_run(tmp_path_factory):
    """rag and ircot on twelve river questions, with the scripted model that reads the prompt."""
    root = tmp_path_factory.mktemp("train")
    data = write_rivers(root / "rivers.json")
    retriever = InMemoryIndex()
    for n, p in enumerate(open_corpus(load_questions(data, "hotpotqa"))):
        retriever.add(p.title, p.text, n)
    config = load_config({"retrieval.top_k": 1, "pipeline.max_retrieval_rounds": 2}, env={})
    out = root / "train-rivers"
    run_benchmark("hotpotqa", data, config=config, methods=["rag", "ircot"], out=out,
                  llm=ScriptedLLM(rules=[Rule(river_answers)]), retriever=retriever)
    return out


def test_the_baselines_records_carry_their_readings(train_run):
    records = [json.loads(line) for line in (train_run / "records.jsonl").read_text().splitlines()]
    rag = [r for r in records if r["method"] == "rag"]
    assert all(set(r["reading"]) >= {"confidence", "grounded", "fits", "cited"} for r in rag)
    assert all("steps" in r["reading"] for r in records if r["method"] == "ircot")


def test_fit_router_writes_a_router_file_and_its_report_naming_where_it_came_from(train_run, tmp_path, capsys):
    kind = "adaptive"
    out, report = tmp_path / f"{kind}.json", tmp_path / f"{kind}.md"
    code, output = reagent(capsys, "bench", "fit-router", str(train_run), "--kind", kind, "--out", str(out),
                           "--report", str(report), "--folds", "3")
    assert code == 0, output
    router = load_router(out, kind=kind)
    provenance = router.provenance
    assert provenance["runs"][0]["folder"] == "train-rivers" and provenance["runs"][0]["questions"] == N
    assert provenance["commit"] and "fit-router" in provenance["command"]
    assert provenance["fit"]["examples"] == N
    assert f"# The {kind} router" in report.read_text() and f"router written to {out}" in output


def reagent(capsys, *args: str) -> tuple[int, str]:
    """The CLI's exit code and everything it printed."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out + err


def test_fit_router_refuses_a_folder_without_the_records_it_needs(train_run, tmp_path, capsys):
    import shutil

    folder = tmp_path / "rag-only"
    shutil.copytree(train_run, folder)
    lines = [line for line in (folder / "records.jsonl").read_text().splitlines() if '"method": "rag"' in line]
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(BenchRunError, match="no rag and ircot records"):
        fit_folders([folder], "adaptive")
    code, output = reagent(capsys, "bench", "fit-router", str(folder), "--out", str(tmp_path / "r.json"))
    assert code != 0 and "Traceback" not in output and "error:" in output and "--methods rag,ircot" in output


def test_fit_router_names_the_removed_reagent_kind(train_run, tmp_path, capsys):
    code, output = reagent(capsys, "bench", "fit-router", str(train_run), "--kind", "reagent",
                           "--out", str(tmp_path / "r.json"))
    assert code != 0 and "Traceback" not in output and "was removed" in output and "--kind adaptive" in output
    assert not (tmp_path / "r.json").exists()


# -- adaptive -------------------------------------------------------------------------------------
def adaptive_ctx(llm):
    index = InMemoryIndex()
    index.add("Land3", "Land3 is a country. Its capital is City3.")
    index.add("Riv3", "Riv3 is a river. Riv3 flows through Land3.")
    config = load_config({"retrieval.top_k": 1, "pipeline.max_retrieval_rounds": 2}, env={})
    return MethodContext(config, llm, retriever=index)


QUESTION = "What is the capital of the country where the river Riv3 flows?"


def adaptive_llm(rag_answer: str) -> ScriptedLLM:
    return ScriptedLLM(rules=[
        Rule({"thought": "Riv3 flows through Land3.", "answer": "City3"}, schema="ReasoningStep"),
        Rule({"answer": rag_answer}, schema="SpanAnswer", times=1, confidence=0.9),
        Rule({"answer": "City3"}, schema="SpanAnswer", confidence=0.6),
    ])


def test_adaptive_stops_after_rag_when_the_router_says_so():
    llm = adaptive_llm("Paris")
    result = Adaptive(adaptive_ctx(llm), Router("adaptive", stop=constant(0.9, 0.8))).answer(QUESTION)
    assert result.prediction == "Paris" and result.llm_calls == 1
    assert result.route["winner"] == "rag" and result.route["stop"]["taken"]


def test_adaptive_runs_ircot_otherwise_and_the_router_chooses_between_the_answers():
    for choose, winner, prediction in ((0.9, "rag", "Paris"), (0.1, "ircot", "City3")):
        llm = adaptive_llm("Paris")
        router = Router("adaptive", stop=constant(0.3, 0.8), choose=constant(choose, 0.5))
        result = Adaptive(adaptive_ctx(llm), router).answer(QUESTION)
        assert result.prediction == prediction and result.route["winner"] == winner
        assert result.llm_calls == 1 + 2  # RAG's call, then IRCoT's step and read, all counted
        assert result.route["choose"]["features"]["second_steps"] == 1.0


def test_adaptive_with_agreeing_answers_needs_no_choice():
    llm = adaptive_llm("City3")
    result = Adaptive(adaptive_ctx(llm), Router("adaptive")).answer(QUESTION)
    assert result.prediction == "City3" and "choose" not in result.route and result.llm_calls == 3
