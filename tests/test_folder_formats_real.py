"""A folder of docx, pptx, epub, csv (and xlsx) files made here, indexed with the real embedder, and a real
model answering one question from each, citing the file and its place (slow: a few minutes a question)."""

from __future__ import annotations

import re

import pytest
from formats_support import FACTS, STAFF_CSV, docx_bytes, epub_bytes, pptx_bytes, xlsx_bytes

from conftest import pulled_model
from reagent_local.config import load_config
from reagent_local.core.log import EventLog
from reagent_local.reasoning.pipeline import Pipeline

pytestmark = pytest.mark.slow
MODEL = "qwen2.5-coder-1.5b"
# file, the answer as a regular expression
ASKED = [("report.docx", r"Halvorsen"), ("deck.pptx", r"4,?200"), ("book.epub", r"\bblue\b"),
         ("staff.csv", r"Ilse Lind")]


@pytest.fixture(scope="module")
def formats_index(tmp_path_factory):
    from reagent_local.retrieval import Index, build_index

    model = pulled_model(MODEL)
    folder = tmp_path_factory.mktemp("kept")
    (folder / "report.docx").write_bytes(docx_bytes())
    (folder / "deck.pptx").write_bytes(pptx_bytes())
    (folder / "book.epub").write_bytes(epub_bytes())
    (folder / "staff.csv").write_text(STAFF_CSV, encoding="utf-8")
    (folder / "budget.xlsx").write_bytes(xlsx_bytes())
    home = tmp_path_factory.mktemp("home")
    config = load_config({"paths.home": str(home), "paths.models_dir": str(model.parent), "llm.model": MODEL}, env={})
    build_index(folder, "kept", config, progress=False)
    with Index.open("kept", config) as index:
        yield config, index, home


def test_each_format_answers_its_question_with_its_origin_shown(formats_index):
    from reagent_local.reasoning.wiring import load_llm

    config, index, home = formats_index
    for name, _answer in ASKED:  # the retriever alone finds each file's passage
        question, _text, label = FACTS[name]
        assert label in [h.passage.origin.label() for h in index.search(question, k=3)], question
    llm = load_llm(MODEL, config)
    try:
        with EventLog(home / "log.duckdb") as log:
            pipeline = Pipeline(config, llm=llm, retriever=index, log=log)
            answers = [pipeline.ask(FACTS[name][0]) for name, _answer in ASKED]
    finally:
        llm.close()
    for (name, expected), answer in zip(ASKED, answers):
        question, _text, label = FACTS[name]
        assert re.search(expected, answer.answer, re.IGNORECASE), (question, answer.answer)
        assert label in answer.sources(), (question, answer.sources())
