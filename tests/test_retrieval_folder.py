"""A folder of Markdown, text, HTML and PDF as an index: passages, origins, skips, bad input, citations.

The hash embedder (no model) and ScriptedLLM: milliseconds to seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from docs_support import PDF_PAGE_2, hash_config, make_folder
from rich.console import Console

from reagent_local.core.log import EventLog
from reagent_local.errors import IndexBuildError
from reagent_local.retrieval.passages import Origin
from reagent_local.reasoning.answer import Answer
from reagent_local.reasoning.pipeline import Pipeline
from reagent_local.reasoning.wiring import open_kg
from reagent_local.retrieval import Index, build_index
from reagent_local.retrieval import build as build_module
from reagent_local.retrieval.folder_scan import matches, scan
from reagent_local.retrieval.store import PassageStore
from reagent_local.testing import ScriptedLLM, answer_citing
from reagent_local.trace.html import render_html
from reagent_local.trace.load import load_trace
from reagent_local.trace.terminal import render


def _passages(index_path: Path) -> dict:
    store = PassageStore(index_path / "passages.duckdb")
    try:
        return {p.id: p for p in store.passages(0, store.count())}
    finally:
        store.close()


@pytest.fixture
def built(tmp_path):
    docs = make_folder(tmp_path)
    config = hash_config(tmp_path)
    lines: list[str] = []
    path = build_index(docs, "docs", config, progress=False, log=lines.append)
    return config, docs, path, lines


def test_passages_follow_the_documents_structure_and_carry_their_origin(built):
    _config, _docs, path, _lines = built
    passages = _passages(path)
    assert sorted(passages) == ["guide.md#0", "guide.md#1", "guide.md#2", "notes.txt#0", "page.html#0", "page.html#1",
                                "papers/birds.pdf#0", "papers/birds.pdf#1"]
    guide = [passages[f"guide.md#{n}"] for n in range(3)]
    assert {p.title for p in guide} == {"Kettle Guide"}  # the first heading, not the file name
    assert [p.origin for p in guide] == [
        Origin("guide.md", ("Kettle Guide",), None, (1, 3)),
        Origin("guide.md", ("Kettle Guide", "Install"), None, (5, 13)),  # the code fence's '#' line is no heading
        Origin("guide.md", ("Kettle Guide", "Use"), None, (15, 17))]
    assert guide[1].text.startswith("Install\n\nRun the installer") and "# this comment is not a heading" in guide[1].text
    html = [passages["page.html#0"], passages["page.html#1"]]
    assert {p.title for p in html} == {"Help Page"}  # <title>
    assert [p.origin for p in html] == [Origin("page.html", ("Help",), None, (4, 6)),
                                        Origin("page.html", ("Help", "Contact"), None, (7, 8))]
    assert html[0].text == "Help\n\nWelcome to the help page\nof the workshop."
    assert "never indexed" not in "".join(p.text for p in passages.values())  # scripts, styles and nav are dropped
    assert "Home | About" not in html[0].text
    notes = passages["notes.txt#0"]
    assert notes.title == "notes" and notes.origin == Origin("notes.txt", (), None, (1, 4))
    pdf = [passages["papers/birds.pdf#0"], passages["papers/birds.pdf#1"]]
    assert {p.title for p in pdf} == {"Birds of Nowhere"}  # the PDF's metadata
    assert [p.origin.page for p in pdf] == [1, 2] and pdf[1].text == PDF_PAGE_2
    assert pdf[1].origin.label() == "papers/birds.pdf, page 2"
    assert guide[1].origin.label() == "guide.md § Kettle Guide > Install, lines 5-13"


def test_skipped_files_are_counted_by_reason_and_the_bad_ones_named(built):
    _config, docs, path, lines = built
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["format"] == "docs" and manifest["documents"] == 4 and manifest["passages"] == 8
    assert manifest["source"]["path"] == str(docs) and "kg" not in manifest
    folder = manifest["folder"]
    assert folder["skipped"] == {"hidden": 2, "binary": 2, "link-outside": 1, "no-text-pdf": 1, "encrypted": 1,
                                 "damaged": 1}
    named = {s["path"]: s["reason"] for s in folder["skipped_files"]}
    assert named == {"sub/outside.md": "link-outside", "papers/scan.pdf": "no-text-pdf",
                     "papers/locked.pdf": "encrypted", "papers/broken.pdf": "damaged", "logo.png": "binary",
                     "sub/blob": "binary"}
    said = "\n".join(lines)
    for needle in ("skipped papers/locked.pdf: an encrypted PDF", "skipped papers/broken.pdf: a damaged PDF",
                   "skipped papers/scan.pdf: no text layer (needs OCR)", "skipped sub/outside.md: a link leading outside",
                   "read 4 files of"):
        assert needle in said, said
    assert all(line.count("\n") == 0 for line in lines)  # one line each
    assert "Secrets outside" not in "".join(p.text for p in _passages(path).values())


def test_search_returns_the_origin_and_the_knowledge_graph_is_off(built):
    config, _docs, path, _lines = built
    with Index.open("docs", config) as index:
        hits = index.search("blue heron Lake Varn", k=3)
        assert hits[0].passage.id == "papers/birds.pdf#1" and hits[0].passage.origin.page == 2
        assert index.get("guide.md#1").origin.heading == ("Kettle Guide", "Install")
        assert open_kg(index, config) is None  # folders have no knowledge graph, and that is no error
    assert not (path / "kg.duckdb").exists()


def test_ask_with_a_scripted_model_cites_the_pdfs_page_two(built, tmp_path):
    config, _docs, _path, _lines = built
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": ["What is the secret of page two?"]}, schema="Decomposition")
    llm.add_rule(answer_citing("blue heron"), schema="SubAnswer")
    llm.add_rule({"answer": "the blue heron"}, schema="FinalAnswer")
    with Index.open("docs", config) as index, EventLog(tmp_path / "log.duckdb") as log:
        answer = Pipeline(config, llm=llm, retriever=index, log=log).ask("What is the secret of page two?")
        trace = load_trace(log, answer.run_id)
    assert "blue heron" in answer.answer
    cited = {p.id: p for p in answer.passages}
    assert cited["papers/birds.pdf#1"].origin == Origin("papers/birds.pdf", (), 2, None)
    assert "papers/birds.pdf, page 2" in answer.sources()
    data = answer.to_dict()
    [pdf] = [p for p in data["passages"] if p["id"] == "papers/birds.pdf#1"]
    assert pdf["origin"] == {"path": "papers/birds.pdf", "heading": [], "page": 2, "lines": None,
                             "label": "papers/birds.pdf, page 2"}
    assert data["subquestions"][0]["passages"][0]["origin"]["page"] == 2
    assert trace.passages["papers/birds.pdf#1"].origin["label"] == "papers/birds.pdf, page 2"
    console = Console(record=True, width=160)
    render(trace, console)
    shown = console.export_text()
    assert "papers/birds.pdf, page 2" in shown  # the supporting passage
    assert "papers/birds.pdf page 2" in shown  # the retriever's message in the timeline
    assert "papers/birds.pdf, page 2" in render_html(trace)
    # an answer served by `reagent serve` to `reagent ask` (share/remote.py) keeps its origins
    served = Answer.from_dict(json.loads(json.dumps(data)))
    assert served.sources() == answer.sources() and served.passages[0].origin == answer.passages[0].origin
    assert served.subquestions[0].passages[0].origin is not None


def test_a_single_file_is_a_source_too(tmp_path):
    docs = make_folder(tmp_path)
    config = hash_config(tmp_path)
    path = build_index(docs / "guide.md", "guide", config, progress=False)
    assert sorted(_passages(path)) == ["guide.md#0", "guide.md#1", "guide.md#2"]
    with pytest.raises(IndexBuildError, match=r"nothing readable in .*scan.pdf: skipped 1 no text layer \(needs OCR\)"):
        build_index(docs / "papers" / "scan.pdf", "scan", config, progress=False)


def test_include_and_exclude_globs(tmp_path):
    docs = make_folder(tmp_path)
    config = hash_config(tmp_path)
    only_md = build_index(docs, "md", config, progress=False, include=["*.md"])
    assert {p.split("#")[0] for p in _passages(only_md)} == {"guide.md"}
    no_papers = build_index(docs, "nopapers", config, progress=False, exclude=["papers", "*.txt"])
    assert {p.split("#")[0] for p in _passages(no_papers)} == {"guide.md", "page.html"}
    assert matches("docs/**/*.md", "docs/a/b/c.md") and matches("docs/**/*.md", "docs/c.md")
    assert not matches("*.md", "guide.mdx") and matches("drafts", "notes/drafts/x.txt")
    listing = scan(docs, exclude=["papers"])
    assert "papers" in {s.rel for s in listing.skipped if s.reason == "excluded"}  # pruned, not walked


def test_an_empty_folder_and_one_with_nothing_readable_are_one_clear_error(tmp_path):
    config = hash_config(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(IndexBuildError, match="empty is empty: no files to read"):
        build_index(empty, "e", config, progress=False)
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / ".hidden.md").write_text("# x\n\nhidden\n")
    (junk / "a.png").write_bytes(b"\x89PNG")
    (junk / "b.txt").write_bytes(b"\x00\x01" * 50)
    with pytest.raises(IndexBuildError) as info:
        build_index(junk, "j", config, progress=False)
    assert "nothing readable in" in str(info.value) and "skipped 1 hidden, 1 binary, 1 binary content under a text name" in str(info.value)
    left = [p.name for p in config.paths.indexes.iterdir() if p.suffix != ".lock"]
    assert left == []  # nothing half-built stays


def test_a_file_that_vanishes_during_the_build_is_skipped_and_named(tmp_path, monkeypatch):
    docs = make_folder(tmp_path)
    config = hash_config(tmp_path)
    real = build_module.scan_source

    def scan_then_delete(*args, **kwargs):
        listing = real(*args, **kwargs)
        (docs / "notes.txt").unlink()
        return listing

    monkeypatch.setattr(build_module, "scan_source", scan_then_delete)
    lines: list[str] = []
    path = build_index(docs, "v", config, progress=False, log=lines.append)
    assert "skipped notes.txt: removed during the build" in lines
    assert "notes.txt#0" not in _passages(path) and "guide.md#0" in _passages(path)


def test_options_that_apply_only_to_folders_are_refused_for_corpus_files(tmp_path):
    config = hash_config(tmp_path)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"title": "A", "text": "Some text here."}) + "\n")
    with pytest.raises(IndexBuildError, match="apply to folders of documents"):
        build_index(corpus, "c", config, progress=False, include=["*.md"])


def _cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "REAGENT_HOME": str(home), "REAGENT_RETRIEVAL_EMBEDDER": "hash-64", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "reagent_local", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_the_cli_builds_a_folder_and_says_what_it_skipped(tmp_path):
    docs = make_folder(tmp_path)
    home = tmp_path / "home"
    done = _cli("index", "build", str(docs), "--name", "docs", "--quiet", home=home)
    assert done.returncode == 0, done.stderr
    assert "skipped papers/locked.pdf: an encrypted PDF (it needs a password)" in done.stderr
    assert "folder     4 files read, 8 passages" in done.stdout
    assert "kg         none (folders of documents have none)" in done.stdout
    found = _cli("search", "blue heron", "--index", "docs", "-k", "1", home=home)
    assert "papers/birds.pdf, page 2" in found.stdout
    empty = tmp_path / "nothing"
    empty.mkdir()
    failed = _cli("index", "build", str(empty), "--name", "x", home=home)
    assert failed.returncode != 0 and "Traceback" not in failed.stderr and "is empty" in failed.stderr


def test_serve_shows_where_every_cited_passage_is(built, tmp_path):
    import httpx
    from serve_support import running

    from reagent_local.api import ReAgent
    from reagent_local.serve import ServeSettings, Service
    from reagent_local.serve.live import ObservedLog

    config, _docs, _path, _lines = built
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": ["What is the secret of page two?"]}, schema="Decomposition")
    llm.add_rule(answer_citing("blue heron"), schema="SubAnswer")
    llm.add_rule({"answer": "the blue heron"}, schema="FinalAnswer")
    pipeline = Pipeline(config, llm=llm, retriever=Index.open("docs", config), log=ObservedLog(tmp_path / "log.duckdb"))
    service = Service(ReAgent(pipeline), ServeSettings(model="scripted", index="docs",
                                                       allowed_hosts=("127.0.0.1", "localhost")))
    with running(service) as server:
        plain = httpx.post(server.url + "/api/ask", json={"question": "What is the secret of page two?"}, timeout=60)
        with httpx.stream("POST", server.url + "/api/ask", timeout=60,
                          json={"question": "What is the secret of page two?", "stream": True}) as response:
            lines = [line for line in response.iter_lines() if line.startswith("data:")]
    origins = {p["id"]: p.get("origin") for p in plain.json()["passages"]}
    assert origins["papers/birds.pdf#1"]["label"] == "papers/birds.pdf, page 2"
    page = json.loads(lines[-1][5:])  # the answer event: what the page draws, passage text included
    [pdf] = [p for p in page["passages"] if p["id"] == "papers/birds.pdf#1"]
    assert pdf["origin"]["page"] == 2 and pdf["text"] == PDF_PAGE_2
