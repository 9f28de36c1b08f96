"""This project's own docs/ as an index with the real embedder, and a real model citing them (slow).

The README's example ("Ask your own documents"): three questions whose answers sit in two
different files (serve.md, retrieval.md), answered by qwen2.5-coder-1.5b and cited by file,
heading and lines. About 2-3 minutes a question on two busy cores.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import pulled_model
from reagent_local.config import load_config
from reagent_local.core.log import EventLog
from reagent_local.reasoning.pipeline import Pipeline

pytestmark = pytest.mark.slow
DOCS = Path(__file__).resolve().parents[1] / "docs"
MODEL = "qwen2.5-coder-1.5b"
# question, the file its answer is in, the answer (a regular expression), what a line holding it holds
QUESTIONS = [("What port does reagent serve listen on by default?", "serve.md", r"\b8080\b", "8080"),
             ("How many questions may wait in the reagent serve queue by default?", "serve.md", r"\b8\b", "--queue"),
             ("Which backend runs the sentence embedder by default?", "retrieval.md", r"onnx-int8", "onnx-int8")]


def _lines_holding(path: str, answer: str, needle: str) -> set[int]:
    lines = (DOCS / path).read_text(encoding="utf-8").splitlines()
    return {n for n, line in enumerate(lines, 1) if needle in line and re.search(answer, line)}


@pytest.fixture(scope="module")
def docs_index(tmp_path_factory):
    from reagent_local.retrieval import Index, build_index

    model = pulled_model(MODEL)
    home = tmp_path_factory.mktemp("home")
    config = load_config({"paths.home": str(home), "paths.models_dir": str(model.parent), "llm.model": MODEL}, env={})
    build_index(DOCS, "project-docs", config, include=["*.md"], progress=False)
    with Index.open("project-docs", config) as index:
        yield config, index, home


def test_the_docs_folder_finds_each_answer_with_its_file_and_lines(docs_index):
    _config, index, _home = docs_index
    for question, where, answer, needle in QUESTIONS:
        hits = index.search(question, k=5)
        assert all(h.passage.origin.lines and h.passage.origin.lines[0] >= 1 for h in hits)
        holding = [h for h in hits if h.passage.origin.path == where and needle in h.passage.text]
        assert holding, (question, [h.passage.id for h in hits])
        # the line range is the file's own: the answer is on one of the lines of a passage that holds it
        on_lines = _lines_holding(where, answer, needle)
        assert any(on_lines & set(range(h.passage.origin.lines[0], h.passage.origin.lines[1] + 1)) for h in holding), \
            (question, [h.passage.origin.label() for h in holding])


def test_a_real_model_answers_the_three_questions_and_cites_two_files(docs_index):
    from reagent_local.reasoning.wiring import load_llm

    config, index, home = docs_index
    llm = load_llm(MODEL, config)
    answers = []
    try:
        with EventLog(home / "log.duckdb") as log:
            pipeline = Pipeline(config, llm=llm, retriever=index, log=log)
            answers = [pipeline.ask(question) for question, *_rest in QUESTIONS]
    finally:
        llm.close()
    cited_files = set()
    for (question, where, expected, _needle), answer in zip(QUESTIONS, answers):
        assert re.search(expected, answer.answer, re.IGNORECASE), (question, answer.answer)
        assert answer.passages, question
        assert all(p.origin is not None and p.origin.path.endswith(".md") and p.origin.lines for p in answer.passages)
        assert where in {p.origin.path for p in answer.passages}, (question, answer.sources())
        assert answer.sources() == [p.origin.label() for p in answer.passages]
        assert all(p["origin"]["label"] for p in answer.to_dict()["passages"])
        cited_files |= {p.origin.path for p in answer.passages}
    assert {"serve.md", "retrieval.md"} <= cited_files
