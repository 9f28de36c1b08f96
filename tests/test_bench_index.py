"""`bench run --index NAME` over a prebuilt index, and `index build` of a JSON array corpus (hash embedder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reagent_local.bench.records import RECORDS_FILE, read_records
from reagent_local.bench.runner import run_benchmark
from reagent_local.cli import main
from reagent_local.config import load_config
from reagent_local.errors import BenchRunError, CorpusFormatError, IndexNotFoundError
from reagent_local.retrieval import build_index
from reagent_local.testing import InMemoryIndex, Rule, ScriptedLLM

HOTPOT = [
    {"_id": f"q{i}", "type": "bridge", "level": "easy", "question": f"What is the capital of Land{i}?",
     "answer": f"City{i}", "supporting_facts": [[f"Land{i}", 0]],
     "context": [[f"Land{i}", [f"Land{i} is a country.", f" Its capital is City{i}."]]]}
    for i in range(4)
]
CORPUS = [{"title": f"Land{i}", "text": f"Land{i} is a country. Its capital is City{i}."} for i in range(4)]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("REAGENT_RETRIEVAL_EMBEDDER", "hash-64")
    monkeypatch.delenv("REAGENT_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hotpot.json").write_text(json.dumps(HOTPOT), encoding="utf-8")
    (tmp_path / "corpus.json").write_text(json.dumps(CORPUS, indent=1), encoding="utf-8")
    return tmp_path


def config_for(home: Path):
    return load_config({"paths.home": str(home / "home"), "retrieval.embedder": "hash-64", "retrieval.top_k": 2},
                       env={})


def reader():
    import re

    def respond(messages, schema):
        found = re.findall(r"capital is (City\d+)", messages[-1]["content"])
        return {"answer": found[0] if found else "unknown"}

    return ScriptedLLM(rules=[Rule(respond, schema="SpanAnswer")])


def test_json_array_corpus_builds_an_index(home: Path) -> None:
    config = config_for(home)
    path = build_index(home / "corpus.json", "lands", config, progress=False)
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["reader"] == "json" and manifest["documents"] == 4 and manifest["passages"] == 4
    assert manifest["passage_words"] is not None  # articles are split like JSONL ones


def test_cli_builds_a_json_corpus_and_refuses_a_bad_one(home: Path, capsys: pytest.CaptureFixture) -> None:
    main(["index", "build", str(home / "corpus.json"), "--name", "lands", "--format", "json", "--quiet"])
    assert (home / "home" / "indexes" / "lands" / "manifest.json").is_file()
    capsys.readouterr()
    bad = home / "bad.json"
    bad.write_text(json.dumps([{"title": "T"}]), encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["index", "build", str(bad), "--name", "bad", "--quiet"])
    err = capsys.readouterr().err
    assert info.value.code == 1 and "Traceback" not in err
    assert "item 1 of the array, has no string field 'text'" in err
    assert not (home / "home" / "indexes" / "bad").exists()
    with pytest.raises(CorpusFormatError, match="not an array"):
        bad.write_text('{"title": "T", "text": "x"}', encoding="utf-8")
        build_index(bad, "bad", config_for(home), fmt="json", progress=False)


def test_run_answers_over_a_prebuilt_index(home: Path) -> None:
    config = config_for(home)
    build_index(home / "corpus.json", "lands", config, progress=False)
    out = home / "run"
    outcome = run_benchmark("hotpotqa", home / "hotpot.json", config=config, methods=["rag"], out=out,
                            llm=reader(), index="lands")
    records = read_records(out / RECORDS_FILE)
    assert len(records) == 4 and all(r["em"] == 1.0 for r in records)
    assert {c["title"] for r in records for c in r["cited"]} <= {f"Land{i}" for i in range(4)}
    saved = json.loads((out / "config.json").read_text())
    assert saved["index"] == "lands" and saved["prebuilt_index"]["name"] == "lands"
    assert saved["prebuilt_index"]["source"]["sha256"] and saved["prebuilt_index"]["passages"] == 4
    assert sorted(p.name for p in config.paths.indexes.iterdir() if p.suffix != ".lock") == ["lands"]  # the file's own index was not built
    assert outcome.summary["index"] == "lands" and "Index: `lands`." in (out / "results.md").read_text()
    with pytest.raises(BenchRunError, match="prebuilt_index.name: folder has 'lands', now None"):
        run_benchmark("hotpotqa", home / "hotpot.json", config=config, methods=["rag"], out=out, llm=reader(),
                      retriever=InMemoryIndex(), resume=True)
    again = run_benchmark("hotpotqa", home / "hotpot.json", config=config, methods=["rag"], out=out, llm=reader(),
                          index="lands", resume=True)
    assert again.new_records == 0


def test_missing_index_is_a_clear_error_before_anything_is_written(home: Path) -> None:
    config = config_for(home)
    with pytest.raises(IndexNotFoundError) as info:
        run_benchmark("hotpotqa", home / "hotpot.json", config=config, methods=["rag"], out=home / "run",
                      llm=reader(), index="nope")
    assert "no index named 'nope'" in str(info.value) and "reagent index build" in str(info.value)
    assert not (home / "run").exists()
    with pytest.raises(ValueError, match="either index"):
        run_benchmark("hotpotqa", home / "hotpot.json", config=config, methods=["rag"], out=home / "run",
                      llm=reader(), index="nope", retriever=object())


def test_cli_missing_index_is_one_line(home: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as info:
        main(["bench", "run", "--dataset", "hotpotqa", "--file", str(home / "hotpot.json"), "--index", "nope",
              "--methods", "rag", "--out", str(home / "run")])
    err = capsys.readouterr().err
    assert info.value.code == 1 and "Traceback" not in err
    assert "no index named 'nope'" in err and "reagent index build SOURCE --name nope" in err
    assert not (home / "run").exists()


def test_default_folder_names_the_filters_and_the_index(home: Path) -> None:
    config = config_for(home)
    build_index(home / "corpus.json", "lands", config, progress=False)
    ids = home / "some.txt"
    ids.write_text("q1\nq2\n", encoding="utf-8")
    outcome = run_benchmark("hotpotqa", home / "hotpot.json", config=config, methods=["rag"], llm=reader(),
                            index="lands", ids=ids)
    assert outcome.folder == home / "home" / "bench-runs" / "hotpotqa-ids-some-index-lands-scripted-nall-seed13"
    assert outcome.new_records == 2
