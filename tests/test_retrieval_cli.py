"""The index, search and bench retrieval commands, driven through click with the hash embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from reagent_local.cli import cli, main
from reagent_local.config import load_config
from reagent_local.bench.retrieval_bench import format_table, run_retrieval_bench

HOTPOT = [
    {"_id": "q1", "question": "Which film did Ventura Pons direct in 1997?", "answer": "Actrius", "type": "bridge",
     "level": "hard", "supporting_facts": [["Actrius", 0], ["Ventura Pons", 0]],
     "context": [["Actrius", ["Actrius is a 1997 Catalan film directed by Ventura Pons."]],
                 ["Ventura Pons", ["Ventura Pons is a Catalan film director."]],
                 ["Alabama", ["Alabama is a state whose capital is Montgomery."]]]},
    {"_id": "q2", "question": "What is the capital of Alabama?", "answer": "Montgomery", "type": "bridge",
     "level": "easy", "supporting_facts": [["Alabama", 0]],
     "context": [["Alabama", ["Alabama is a state whose capital is Montgomery."]],
                 ["Albedo", ["Albedo measures diffuse reflection of sunlight."]]]},
]


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("REAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("REAGENT_RETRIEVAL_EMBEDDER", "hash-64")
    monkeypatch.delenv("REAGENT_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in (
        ("Actrius", "Actrius is a 1997 Catalan drama film directed by Ventura Pons."),
        ("Alabama", "Alabama is a state in the United States. Its capital is Montgomery."),
        ("Albedo", "Albedo is the fraction of sunlight that is diffusely reflected."))))
    return tmp_path, source


def test_build_list_info_search(env):
    tmp_path, source = env
    runner = CliRunner()
    built = runner.invoke(cli, ["index", "build", str(source), "--name", "tiny", "--quiet"])
    assert built.exit_code == 0, built.output
    assert "passages 3" in built.output and "kg         none" in built.output
    listed = runner.invoke(cli, ["index", "list"])
    assert listed.output.startswith("tiny") and "3 passages" in listed.output
    info = json.loads(runner.invoke(cli, ["index", "info", "tiny", "--json"]).output)
    assert info["faiss"]["type"] == "flat" and info["embedder"]["dimension"] == 64
    found = runner.invoke(cli, ["search", "Who directed Actrius?", "--index", "tiny", "-k", "2"])
    assert found.exit_code == 0 and found.output.startswith("1. Actrius  [Actrius#0]  score ")
    hits = json.loads(runner.invoke(cli, ["search", "capital Montgomery", "--index", "tiny", "--mode", "sparse",
                                          "--json"]).output)
    assert hits[0]["id"] == "Alabama#0" and hits[0]["rank"] == 1 and "Montgomery" in hits[0]["text"]


def test_user_errors_are_one_message_without_traceback(env, capsys):
    _, source = env
    for argv, expected in (
        (["search", "x", "--index", "missing"], "no index named 'missing'"),
        (["search", "x", "--kg"], "no index named 'enwiki-sample'"),  # --kg on the default index
        (["index", "build", str(source), "--name", "bad name"], "invalid index name"),
        (["index", "info", "missing"], "no index named 'missing'"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        err = capsys.readouterr().err
        assert exit_info.value.code == 1 and expected in err and "Traceback" not in err, (argv, err)


def test_bench_retrieval_reports_recall_and_latency(env):
    tmp_path, _ = env
    data = tmp_path / "hotpot.json"
    data.write_text(json.dumps(HOTPOT))
    config = load_config()
    report = run_retrieval_bench(data, config, dataset="hotpotqa")
    assert report["n"] == 2 and report["passages"] == 4
    for mode in ("dense", "sparse", "hybrid"):
        values = report["modes"][mode]
        assert values["recall"]["10"] == 1.0 and values["all"]["10"] == 1.0  # 4 passages: all within 10
        assert 0.0 <= values["recall"]["2"] <= 1.0 and values["latency_ms"]["p95"] >= values["latency_ms"]["p50"] > 0
    assert report["modes"]["sparse"]["recall"]["2"] == 1.0
    table = format_table(report)
    assert "R@2" in table and "all@10" in table and "hybrid" in table
    out = tmp_path / "report.json"
    result = CliRunner().invoke(cli, ["bench", "retrieval", "--dataset", "hotpotqa", "--file", str(data),
                                      "--n", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["n"] == 1 and "p50 ms" in result.output
    assert len([p for p in Path(config.paths.indexes).iterdir() if p.suffix != ".lock"]) == 1  # the index was reused


def test_bench_retrieval_on_another_faiss_type_converts_the_auto_index(env):
    tmp_path, _ = env
    data = tmp_path / "hotpot.json"
    data.write_text(json.dumps(HOTPOT))
    config = load_config()
    flat = run_retrieval_bench(data, config, dataset="hotpotqa")
    hnsw = run_retrieval_bench(data, config, dataset="hotpotqa", faiss_type="hnsw")
    assert hnsw["index"] == flat["index"] + "-hnsw" and hnsw["faiss"]["type"] == "hnsw"
    assert hnsw["modes"]["dense"]["recall"] == flat["modes"]["dense"]["recall"]  # 4 vectors: HNSW is exact
    manifest = json.loads((Path(config.paths.indexes) / hnsw["index"] / "manifest.json").read_text())
    assert manifest["converted_from"]["index"] == flat["index"] and "embedding" in manifest
    out = tmp_path / "pq.json"
    result = CliRunner().invoke(cli, ["bench", "retrieval", "--dataset", "hotpotqa", "--file", str(data),
                                      "--faiss", "ivfpq", "--nprobe", "4", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["faiss"]["type"] == "flat" and report["faiss"]["requested"] == "ivfpq"  # 4 passages: too few
    assert "FAISS flat" in result.output
    found = CliRunner().invoke(cli, ["search", "Actrius", "--index", hnsw["index"], "--nprobe", "3", "-k", "1"])
    assert found.exit_code == 0 and found.output.startswith("1. Actrius"), found.output


def test_index_convert_command(env):
    _, source = env
    runner = CliRunner()
    assert runner.invoke(cli, ["index", "build", str(source), "--name", "tiny", "--quiet"]).exit_code == 0
    converted = runner.invoke(cli, ["index", "convert", "tiny", "--name", "tiny-hnsw", "--faiss", "hnsw"])
    assert converted.exit_code == 0, converted.output
    assert "faiss      hnsw" in converted.output
    found = runner.invoke(cli, ["search", "Who directed Actrius?", "--index", "tiny-hnsw", "-k", "1"])
    assert found.output.startswith("1. Actrius  [Actrius#0]")
    again = runner.invoke(cli, ["index", "convert", "tiny-hnsw", "--name", "tiny-pq", "--faiss", "ivfpq"])
    assert again.exit_code == 0 and "faiss      flat" in again.output  # 3 vectors: too few for IVF-PQ
    refused = runner.invoke(cli, ["index", "convert", "tiny", "--name", "tiny-hnsw", "--faiss", "flat"])
    assert refused.exit_code == 1 and "already exists" in str(refused.exception)
