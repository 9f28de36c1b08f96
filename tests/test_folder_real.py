"""This project's own docs/ as an index with the real embedder, and a real model citing them (slow)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import pulled_model
from reagent_local.config import load_config
from reagent_local.core.log import EventLog
from reagent_local.reasoning.pipeline import Pipeline

pytestmark = pytest.mark.slow
DOCS = Path(__file__).resolve().parents[1] / "docs"
# the README's example questions and the file each one's answer is in
QUESTIONS = [("What port does reagent serve listen on by default?", "serve.md"),
             ("Which embedding model does the dense index use?", "retrieval.md"),
             ("What does the supervisor compute when a conflict is escalated?", "agents.md")]


@pytest.fixture(scope="module")
def docs_index(tmp_path_factory):
    from reagent_local.retrieval import Index, build_index

    model = pulled_model("smollm2-135m")
    home = tmp_path_factory.mktemp("home")
    config = load_config({"paths.home": str(home), "paths.models_dir": str(model.parent),
                          "llm.model": "smollm2-135m"}, env={})
    build_index(DOCS, "project-docs", config, include=["*.md"], progress=False)
    with Index.open("project-docs", config) as index:
        yield config, index, home


def test_the_docs_folder_answers_with_the_file_and_the_lines(docs_index):
    _config, index, _home = docs_index
    for question, where in QUESTIONS:
        hits = index.search(question, k=5)
        assert where in {h.passage.origin.path for h in hits}, (question, [h.passage.id for h in hits])
        assert all(h.passage.origin.lines and h.passage.origin.lines[0] >= 1 for h in hits)


def test_a_real_model_cites_where_its_passages_are(docs_index):
    from reagent_local.reasoning.wiring import load_llm

    config, index, home = docs_index
    llm = load_llm("smollm2-135m", config)
    try:
        with EventLog(home / "log.duckdb") as log:
            answer = Pipeline(config, llm=llm, retriever=index, log=log).ask(QUESTIONS[0][0])
    finally:
        llm.close()
    assert answer.passages and all(p.origin is not None and p.origin.path.endswith(".md") for p in answer.passages)
    assert answer.sources() == [p.origin.label() for p in answer.passages]
    assert all(p["origin"]["label"] for p in answer.to_dict()["passages"])
