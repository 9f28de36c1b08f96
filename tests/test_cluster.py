"""Ray on this machine (ray.init(num_cpus=2)) against single-process results: index build and benchmark.

One Ray instance for the module (starting one costs seconds). Builds use the
model-free hash embedder and small pieces of the real dump sample; the benchmark uses
a scripted model; one test (slow) runs SmolLM2-135M in the Ray workers.
"""

from __future__ import annotations

import bz2
import json
import logging
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import bench_support
import duckdb
import numpy as np
import pytest
from bench_support import river_answers

from reagent_local.bench.records import RECORDS_FILE, read_records
from reagent_local.bench.runner import run_benchmark
from reagent_local.config import load_config
from reagent_local.errors import ClusterError, IndexBuildError
from reagent_local.retrieval import build_index
from reagent_local.retrieval.embed import HashEmbedder
from reagent_local.testing import InMemoryIndex, Rule, ScriptedLLM

# Ray starts a local cluster (tens of seconds): part of the full suite (`scripts/test.sh --full`), not the quick one
pytestmark = pytest.mark.slow
ray = pytest.importorskip("ray", reason='Ray is not installed: pip install -e ".[cluster]"')
cloudpickle = pytest.importorskip("ray.cloudpickle")

from reagent_local.cluster import build_index_ray, run_benchmark_ray  # noqa: E402
from reagent_local.cluster.connect import WORKER_ENV  # noqa: E402
from reagent_local.cluster.index_build import shards_dir  # noqa: E402

for module in (sys.modules[__name__], bench_support):  # the fakes travel to the workers by value
    cloudpickle.register_pickle_by_value(module)
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def local_ray():
    sigterm = signal.getsignal(signal.SIGTERM)
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False,
             runtime_env={"env_vars": dict(WORKER_ENV)})
    yield ray
    ray.shutdown()
    signal.signal(signal.SIGTERM, sigterm)  # ray.init replaced it; the later tests get pytest's back


def _config(tmp_path: Path, **extra):
    return load_config({"paths.home": str(tmp_path / "home"), "retrieval.embedder": "hash-64", **extra}, env={})


def _passages(index: Path) -> list[tuple]:
    with duckdb.connect(str(index / "passages.duckdb"), read_only=True) as con:
        return con.execute("SELECT row, id, title, text FROM passages ORDER BY row").fetchall()


def _vectors(index: Path) -> np.ndarray:
    import faiss

    dense = faiss.read_index(str(index / "dense.faiss"))
    return dense.reconstruct_n(0, dense.ntotal)


def _graph(index: Path) -> tuple[list, list]:
    with duckdb.connect(str(index / "kg.duckdb"), read_only=True) as con:
        return (con.execute("SELECT * FROM triples ORDER BY ord").fetchall(),
                con.execute("SELECT * FROM entities ORDER BY ALL").fetchall())


def _same_index(single: Path, ray_built: Path) -> None:
    assert _passages(single) == _passages(ray_built)  # ids, titles, texts and rows
    assert np.array_equal(_vectors(single), _vectors(ray_built))
    if (single / "kg.duckdb").exists():
        triples, entities = _graph(ray_built)
        assert (triples, entities) == _graph(single) and triples and entities


def multistream(dump: Path, out: Path, pages: int, per_stream: int) -> Path:
    """The first ``pages`` pages of a dump as a Wikimedia-style multistream .bz2 (header, pages, footer streams)."""
    xml = bz2.decompress(dump.read_bytes())
    start = xml.index(b"<page>")
    ends = [m.end() for m in re.finditer(rb"</page>", xml)][:pages]
    streams, previous = [xml[:start]], start
    for i in range(per_stream - 1, len(ends), per_stream):
        streams.append(xml[previous:ends[i]])
        previous = ends[i]
    if previous < ends[-1]:
        streams.append(xml[previous:ends[-1]])
    streams.append(b"\n</mediawiki>\n")
    out.write_bytes(b"".join(bz2.compress(s) for s in streams))
    return out


def test_ray_build_of_a_dump_equals_the_single_process_build(local_ray, tmp_path, wiki_dump):
    """Pages mode (a single-stream .bz2 cut here into 15-page shards), with --limit."""
    config = _config(tmp_path)
    single = build_index(wiki_dump, "single", config, progress=False, limit=30)
    built = build_index_ray(wiki_dump, "ray", config, progress=False, limit=30, shard_size=15)
    _same_index(single, built)  # the knowledge graph too, extracted by the workers
    manifest = json.loads((built / "manifest.json").read_text())
    assert manifest["kg"]["articles"] == 30 and manifest["kg"]["triples"] == json.loads(
        (single / "manifest.json").read_text())["kg"]["triples"]
    cluster = manifest["cluster"]
    assert cluster["shard_kind"] == "pages" and cluster["workers"] == 2 and cluster["retried"] == []
    assert manifest["documents"] == 30 and cluster["totals"]["documents"] >= 30  # the last shard passes the limit
    assert cluster["shards"] == -(-cluster["totals"]["pages"] // 15)  # no shard after the one that reached it
    assert not shards_dir(config, "ray").exists()  # kept only until the index is in place
    # other formats: batches of documents read here
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"title": f"T{i % 3}", "text": f"Text {i}. " * (i * 30 + 1)}) + "\n"
                            for i in range(7)), encoding="utf-8")
    built = build_index_ray(docs, "docs", config, progress=False, shard_size=2)
    assert json.loads((built / "manifest.json").read_text())["cluster"]["shard_kind"] == "documents"
    _same_index(build_index(docs, "docs-single", config, progress=False), built)


def test_multistream_dump_is_sharded_by_streams_and_resumes_shard_by_shard(local_ray, tmp_path, wiki_dump):
    dump = multistream(wiki_dump, tmp_path / "multi.xml.bz2", pages=50, per_stream=10)
    config = _config(tmp_path)
    seen: list[int] = []

    def interrupt_after_two(meta: dict) -> None:
        seen.append(meta["shard"])
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(IndexBuildError, match="interrupted"):
        build_index_ray(dump, "multi", config, progress=False, shard_size=100, on_shard=interrupt_after_two)
    kept = sorted(p.name for p in shards_dir(config, "multi").glob("shard-*"))
    assert len(kept) == 2
    rerun: list[int] = []
    built = build_index_ray(dump, "multi", config, progress=False, shard_size=100,
                            on_shard=lambda meta: rerun.append(meta["shard"]))
    cluster = json.loads((built / "manifest.json").read_text())["cluster"]
    assert cluster["shard_kind"] == "streams" and cluster["shards"] == 7  # header, 5 streams of pages, footer
    assert sorted(rerun + seen[:2]) == list(range(7))  # the two kept shards were not run again
    _same_index(build_index(dump, "single", config, progress=False), built)  # knowledge graph included


class FlakyEmbedder(HashEmbedder):
    """Fails its first call anywhere (a marker file shared by the workers), then embeds as HashEmbedder."""

    def __init__(self, marker: Path) -> None:
        super().__init__(64)
        self.marker = marker

    def encode(self, texts):
        if not self.marker.exists():
            self.marker.write_text("failed once")
            raise RuntimeError("worker lost its GPU (simulated)")
        return super().encode(texts)


def test_a_failing_shard_is_retried_then_named(local_ray, tmp_path, wiki_dump):
    config = _config(tmp_path)
    dump = multistream(wiki_dump, tmp_path / "multi.xml.bz2", pages=30, per_stream=10)
    built = build_index_ray(dump, "flaky", config, kg=False, progress=False, shard_size=100,
                            embedder=FlakyEmbedder(tmp_path / "marker"))
    [retried] = json.loads((built / "manifest.json").read_text())["cluster"]["retried"]
    assert "RuntimeError: worker lost its GPU (simulated)" in retried
    # a stream whose bytes are damaged fails every try: the build stops naming the shard, the others are kept
    data = bytearray(dump.read_bytes())
    offsets = [m.start() for m in re.finditer(rb"BZh91AY&SY", data)]
    data[(offsets[2] + offsets[3]) // 2] ^= 0xFF
    broken = tmp_path / "broken.xml.bz2"
    broken.write_bytes(bytes(data))
    with pytest.raises(ClusterError) as caught:
        build_index_ray(broken, "broken", config, kg=False, progress=False, shard_size=100)
    message = str(caught.value)
    assert f"shard 2 of 5 (bytes {offsets[2]}-{offsets[3] - 1}) of {broken}" in message
    assert "failed 3 times" in message and "could not be decompressed" in message
    assert "finished shards are kept" in message and "run the same command again" in message
    assert len(list(shards_dir(config, "broken").glob("shard-*"))) == 4


# --- benchmark ---------------------------------------------------------------------------------------

def _dataset(path: Path, n: int = 6) -> Path:
    records = [{"_id": f"q{i}", "type": "bridge", "level": "hard", "answer": f"City{i}",
                "question": f"What is the capital of the country where the river Riv{i} flows?",
                "supporting_facts": [[f"Riv{i}", 0], [f"Land{i}", 0]],
                "context": [[f"Riv{i}", [f"Riv{i} is a river.", f" Riv{i} flows through Land{i}."]],
                            [f"Land{i}", [f"Land{i} is a country.", f" Its capital is City{i}."]]]}
               for i in range(n)]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def _bench_parts(data: Path):
    from reagent_local.datasets import load_questions, open_corpus

    index = InMemoryIndex()
    for n, p in enumerate(open_corpus(load_questions(data, "hotpotqa"))):
        index.add(p.title, p.text, n)
    return ScriptedLLM(rules=[Rule(river_answers)]), index


def _comparable(records: list[dict]) -> list[str]:
    return sorted(json.dumps({k: v for k, v in r.items() if k not in ("seconds", "run_id", "machine")}, sort_keys=True)
                  for r in records)


def _scores(folder: Path) -> dict:
    methods = json.loads((folder / "summary.json").read_text())["methods"]
    return {m: {k: v for k, v in row.items() if "second" not in k} for m, row in methods.items()}


def test_bench_on_ray_writes_the_same_records_and_resumes(local_ray, tmp_path):
    data = _dataset(tmp_path / "tiny.json")
    # threads are part of a run's configuration: the one-process runs use the Ray workers' one thread
    config = load_config({"retrieval.top_k": 2, "llm.n_threads": 1}, env={})
    methods = ["closed-book", "rag", "ircot", "reagent-none"]
    llm, index = _bench_parts(data)
    single = run_benchmark("hotpotqa", data, config=config, n=5, seed=3, methods=methods, out=tmp_path / "single",
                           llm=llm, retriever=index)
    # a run started in one process (one method), resumed on Ray with all three
    out = tmp_path / "ray"
    llm, index = _bench_parts(data)
    run_benchmark("hotpotqa", data, config=config, n=5, seed=3, methods=methods[:1], out=out, llm=llm, retriever=index)
    llm, index = _bench_parts(data)
    outcome = run_benchmark_ray("hotpotqa", data, config=config, n=5, seed=3, methods=methods, out=out, resume=True,
                                llm=llm, retriever=index)
    assert outcome.resumed_records == 5 and outcome.new_records == 15
    records = read_records(out / RECORDS_FILE)
    assert _comparable(records) == _comparable(read_records(single.folder / RECORDS_FILE))
    assert _scores(out) == _scores(single.folder) and _scores(out)["reagent-none"]["em"] == 1.0
    from reagent_local.core.log import EventLog

    with EventLog(out / "events.duckdb", read_only=True) as log:  # both workers logged into the run folder
        for record in records:
            if record["method"] == "reagent-none":
                assert log.get_run(record["run_id"])["answer"] == record["prediction"]
    again = run_benchmark_ray("hotpotqa", data, config=config, n=5, seed=3, methods=methods, out=out, resume=True,
                              llm=llm, retriever=index)
    assert again.new_records == 0 and len(read_records(out / RECORDS_FILE)) == 20


def test_an_ablation_on_ray_answers_as_one_process_does(local_ray, tmp_path):
    from reagent_local.bench.ablate import run_ablations
    from reagent_local.cluster.bench import ray_answer_all

    data = bench_support.write_ablation_dataset(tmp_path / "scenario.json")
    bench_support.run_ablation_baseline(data, tmp_path / "base")

    def ablate(out: Path, **options) -> dict:
        (result,) = run_ablations([tmp_path / "base"], ["rule:anchor-each-step"], out=out, resamples=500,
                                  llm=bench_support.ablation_model(),
                                  retriever=lambda folder: bench_support.ablation_index(data), **options)
        return result

    single = ablate(tmp_path / "single")
    on_ray = ablate(tmp_path / "ray", answer_all=ray_answer_all(local_ray, threads=1, workers=2))
    assert on_ray["datasets"][0]["reran"] == single["datasets"][0]["reran"] == 4

    def sides(result: dict) -> list:
        rows = (Path(result["folder"]) / "paired.jsonl").read_text(encoding="utf-8").splitlines()
        return [(row["id"], row["ablated"]["prediction"], row["ablated"]["llm_calls"]) for row in map(json.loads, rows)]

    assert sides(on_ray) == sides(single)
    assert on_ray["pooled"]["stats"]["fixed"] == single["pooled"]["stats"]["fixed"] == ["f0", "f1", "f2", "f3"]


# --- errors, through the CLI ---------------------------------------------------------------------------

def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reagent_local", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})}, cwd=REPO)


def test_cli_builds_on_ray(local_ray, tmp_path, monkeypatch, capsys):
    from reagent_local.cli import main

    monkeypatch.setenv("REAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("REAGENT_RETRIEVAL_EMBEDDER", "hash-64")
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"title": f"T{i}", "text": f"Text number {i}."}) + "\n" for i in range(5)))
    main(["index", "build", str(docs), "--name", "docs", "--shard-size", "2", "--quiet", "--ray"])  # the module's Ray
    out = capsys.readouterr().out
    assert "ray        3 shards (documents, 2 a shard) on 2 workers" in out and "passages 5" in out


def test_cli_errors_are_one_clear_message(tmp_path, wiki_dump):
    home = {"REAGENT_HOME": str(tmp_path / "home")}
    done = _cli("index", "build", str(wiki_dump), "--name", "x", "--no-kg", "--ray=127.0.0.1:1", env=home)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "no Ray cluster answers at 127.0.0.1:1" in done.stderr and "ray start --head" in done.stderr
    done = _cli("bench", "run", "--dataset", "hotpotqa", "--file", str(_dataset(tmp_path / "d.json")),
                "--ray-threads", "2", env=home)
    assert done.returncode == 2 and "--ray-threads only applies with --ray" in done.stderr
    # without the extra installed: `import ray` fails
    shadow = tmp_path / "no-ray"
    (shadow / "ray").mkdir(parents=True)
    (shadow / "ray" / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    done = _cli("index", "build", str(wiki_dump), "--name", "x", "--ray", env={**home, "PYTHONPATH": str(shadow)})
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert 'needs Ray, which is not installed' in done.stderr and 'pip install -e ".[cluster]"' in done.stderr


# --- one real model in the workers ---------------------------------------------------------------------

def test_real_model_in_ray_workers(local_ray, tmp_path):
    from conftest import pulled_model

    model = pulled_model("smollm2-135m")
    data = _dataset(tmp_path / "tiny.json", n=4)
    config = load_config({"paths.home": str(tmp_path / "home"), "llm.model": str(model),
                          "retrieval.embedder": "hash-64", "retrieval.top_k": 2, "llm.max_tokens": 32}, env={})
    outcome = run_benchmark_ray("hotpotqa", data, config=config, n=2, seed=1, methods=["rag"],
                                out=tmp_path / "run")  # one question per worker, at the same time
    records = read_records(outcome.folder / RECORDS_FILE)
    drawn = json.loads((outcome.folder / "config.json").read_text())["question_ids"]
    assert sorted(r["id"] for r in records) == sorted(drawn)
    assert all(r["llm_calls"] == 1 and r["error"] is None and r["prompt_tokens"] > 0 for r in records)
    recorded = json.loads((outcome.folder / "config.json").read_text())["model"]["path"]
    assert Path(recorded).resolve() == Path(model).resolve()  # the same file (the models folder may be a link)
