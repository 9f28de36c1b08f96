"""Index build and search with the model-free hash embedder: manifest, ids, modes, resume, errors."""

from __future__ import annotations

import bz2
import json
import threading
from pathlib import Path

import pytest

from reagent_local.config import RetrievalConfig, load_config
from reagent_local.errors import IndexBuildError, IndexMismatchError, IndexNotFoundError, QuestionError, ReagentError
from reagent_local.retrieval import Index, benchmark_index_name, build_index, list_indexes
from reagent_local.retrieval import build as build_module
from reagent_local.retrieval.embed import HashEmbedder
from reagent_local.retrieval.layout import interrupted_builds

DOCS = [
    ("Actrius", "Actrius is a 1997 Catalan drama film directed by Ventura Pons. The film has no male actors."),
    ("Alabama", "Alabama is a state in the southeastern region of the United States. Its capital is Montgomery."),
    ("Albedo", "Albedo is the measure of the diffuse reflection of solar radiation out of the total solar radiation."),
    ("Aristotle", "Aristotle was a Greek philosopher and polymath during the Classical period in Ancient Greece."),
    ("Achilles", "In Greek mythology, Achilles was a hero of the Trojan War and the central character of the Iliad."),
]


def _config(tmp_path: Path, embedder: str = "hash-64"):
    return load_config({"paths.home": str(tmp_path / "home"), "retrieval.embedder": embedder}, env={})


def _jsonl(tmp_path: Path, docs=DOCS, name: str = "docs.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in docs), encoding="utf-8")
    return path


@pytest.fixture
def built(tmp_path):
    config = _config(tmp_path)
    long_doc = ("Long", " ".join(f"Sentence {i} about the long article goes here." for i in range(40)))
    path = build_index(_jsonl(tmp_path, DOCS + [long_doc]), "small", config, progress=False)
    return config, path


def test_build_writes_a_complete_manifest(built):
    config, path = built
    assert path == config.paths.indexes / "small"
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["reader"] == "jsonl" and manifest["documents"] == 6
    assert manifest["passages"] == 5 + 4  # the 320-word article gives 4 passages
    assert manifest["embedder"] == {"name": "hash-64", "dimension": 64, "backend": "hash"}
    assert manifest["faiss"]["type"] == "flat" and manifest["faiss"]["count"] == manifest["passages"]
    assert len(manifest["source"]["sha256"]) == 64 and manifest["build_seconds"] > 0
    assert manifest["embedding"]["passages"] == manifest["passages"]
    assert {"faiss-cpu", "bm25s", "duckdb", "reagent-local"} <= set(manifest["versions"])
    assert sorted(p.name for p in path.iterdir()) == ["bm25", "dense.faiss", "manifest.json", "passages.duckdb"]
    assert [p.name for p in config.paths.indexes.glob(".*")] == [".small.lock"]  # no temporary folder left
    [listed] = list_indexes(config)
    assert listed["name"] == "small" and listed["size_bytes"] > 0


def test_search_modes_get_and_ids(built):
    config, _ = built
    with Index.open("small", config) as index:
        for mode in ("dense", "sparse", "hybrid"):
            hits = index.search("Who directed the film Actrius?", k=3, mode=mode)
            assert hits[0].passage.id == "Actrius#0", mode
            assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
            assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
        assert index.get("Long#3").text.startswith("Sentence 36 ")  # 12 eight-word sentences a passage
        assert index.get("Long#4") is None
        assert index.search("the of and", k=3, mode="sparse") == []  # stopwords only
        with pytest.raises(ReagentError, match="unknown search mode"):
            index.search("x", mode="fuzzy")
        with pytest.raises(QuestionError):
            index.search("   ")


def test_hybrid_is_the_rrf_of_dense_and_sparse(built):
    config, _ = built
    with Index.open("small", config) as index:
        dense = [h.passage.id for h in index.search("Greek hero of the Iliad", k=9, mode="dense")]
        sparse = [h.passage.id for h in index.search("Greek hero of the Iliad", k=9, mode="sparse")]
        hybrid = index.search("Greek hero of the Iliad", k=3, mode="hybrid")
    expected = {}
    for ranking in (dense, sparse):
        for rank, pid in enumerate(ranking, 1):
            expected[pid] = expected.get(pid, 0) + 1 / (60 + rank)
    best = sorted(expected.items(), key=lambda kv: -kv[1])[:3]
    assert [h.passage.id for h in hybrid][0] == best[0][0] == "Achilles#0"
    assert [round(h.score, 9) for h in hybrid] == [round(s, 9) for _, s in best]


def test_search_is_safe_from_several_threads(built):
    config, _ = built
    index = Index.open("small", config)
    results, errors = [], []

    def worker(query: str) -> None:
        try:
            for _ in range(20):
                results.append((query, index.search(query, k=1)[0].passage.title))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(q,)) for q in ("Ventura Pons film", "Montgomery capital state") * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    index.close()
    assert not errors
    assert {title for q, title in results if q.startswith("Ventura")} == {"Actrius"}
    assert {title for q, title in results if q.startswith("Montgomery")} == {"Alabama"}


def test_benchmark_paragraphs_sharing_a_title_get_distinct_ids(tmp_path):
    rows = [{"id": "2hop__1", "question": "q", "answer": "a", "answer_aliases": [], "answerable": True,
             "question_decomposition": [],
             "paragraphs": [{"idx": 0, "title": "Stanley", "paragraph_text": "Stanley is a county seat.", "is_supporting": True},
                            {"idx": 1, "title": "Stanley", "paragraph_text": "Stanley is a first name.", "is_supporting": False},
                            {"idx": 2, "title": "Other", "paragraph_text": " ".join(["word"] * 300), "is_supporting": False}]}]
    source = tmp_path / "m.jsonl"
    source.write_text(json.dumps(rows[0]))
    config = _config(tmp_path)
    build_index(source, "bench", config, progress=False)
    with Index.open("bench", config) as index:
        assert index.manifest["passages"] == 3  # benchmark paragraphs are never split
        assert index.get("Stanley#0").text == "Stanley is a county seat."
        assert index.get("Stanley#1").text == "Stanley is a first name."
    assert benchmark_index_name(source) == benchmark_index_name(source)
    assert benchmark_index_name(source).startswith("bench-m-")
    # the default embedder and backend keep the plain name; another backend or embedder gets its own index
    plain = benchmark_index_name(source)
    assert benchmark_index_name(source, RetrievalConfig(embedder="all-MiniLM-L6-v2", embedder_backend="onnx-int8")) == plain
    assert benchmark_index_name(source, RetrievalConfig(embedder_backend="torch")) == plain + "-torch"
    assert benchmark_index_name(source, RetrievalConfig(embedder="hash-64")) == plain + "-hash-64"


def test_existing_index_needs_force_and_force_replaces_it(built, tmp_path):
    config, path = built
    source = _jsonl(tmp_path, DOCS[:2], name="two.jsonl")
    with pytest.raises(IndexBuildError, match="already exists"):
        build_index(source, "small", config, progress=False)
    build_index(source, "small", config, force=True, progress=False)
    assert json.loads((path / "manifest.json").read_text())["passages"] == 2


@pytest.mark.parametrize("name", ["", "../up", "a/b", "-lead", "sp ace", "x" * 101])
def test_invalid_names_are_refused(tmp_path, name):
    with pytest.raises(IndexBuildError, match="invalid index name"):
        build_index(_jsonl(tmp_path), name, _config(tmp_path), progress=False)


def _truncated_dump() -> bytes:
    pages = "".join(f"<page><title>P{i}</title><ns>0</ns><id>{i}</id><revision><text>{'Words here. ' * 300}</text>"
                    "</revision></page>" for i in range(40))
    packed = bz2.compress(f"<mediawiki>{pages}</mediawiki>".encode())
    return packed[: len(packed) * 2 // 3]


@pytest.mark.parametrize(
    "content, fmt, message",
    [
        (b"<html><head><title>Error</title></head></html>", "auto", "HTML page"),
        (_truncated_dump(), "auto", "truncated"),
        (b"", "auto", "is empty"),
        (b'{"title": "a", "text": "ok"}\n{oops\n', "jsonl", "line 2, is not JSON"),
        (b'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/"><page><title>R</title><ns>0</ns><id>1</id>'
         b'<redirect title="X" /><revision><text>#REDIRECT [[X]]</text></revision></page></mediawiki>', "auto", "no articles"),
    ],
)
def test_bad_input_leaves_nothing_behind(tmp_path, content, fmt, message):
    source = tmp_path / "input.xml"
    source.write_bytes(content)
    config = _config(tmp_path)
    with pytest.raises(ReagentError) as info:
        build_index(source, "bad", config, fmt=fmt, kg=False, progress=False)
    assert message in str(info.value) and "input.xml" in str(info.value)
    left = list(config.paths.indexes.iterdir()) if config.paths.indexes.exists() else []
    assert [p.name for p in left if p.suffix != ".lock"] == []


def test_interrupted_build_resumes_without_redoing_finished_batches(tmp_path, monkeypatch):
    monkeypatch.setattr(build_module, "SHARD_SIZE", 2)
    config = _config(tmp_path)
    source = _jsonl(tmp_path)  # 5 passages: shards of 2, 2, 1

    class Interrupting(HashEmbedder):
        calls = 0

        def encode(self, texts):
            Interrupting.calls += 1
            if Interrupting.calls == 2:
                raise KeyboardInterrupt
            return super().encode(texts)

    with pytest.raises(IndexBuildError, match="interrupted"):
        build_index(source, "resumable", config, embedder=Interrupting(64), progress=False)
    assert not (config.paths.indexes / "resumable").exists()  # nothing that looks complete
    assert interrupted_builds(config) == ["resumable"]
    with pytest.raises(IndexNotFoundError, match="interrupted"):
        Index.open("resumable", config)

    counted: list[int] = []

    class Counting(HashEmbedder):
        def encode(self, texts):
            counted.append(len(texts))
            return super().encode(texts)

    path = build_index(source, "resumable", config, embedder=Counting(64), progress=False)
    assert counted == [2, 1]  # the first shard was reused
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["embedding"]["reused"] == 2 and manifest["passages"] == 5
    assert interrupted_builds(config) == []


def test_dimension_mismatch_is_an_error_with_a_hint(built, tmp_path):
    config, path = built
    other = load_config({"paths.home": str(tmp_path / "home"), "retrieval.embedder": "hash-32"}, env={})
    with pytest.raises(IndexMismatchError) as info:
        Index.open("small", other)
    message = str(info.value)
    assert "hash-64 (64-d)" in message and "32-d" in message and "reagent index build" in message
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["embedder"] = {"name": "all-MiniLM-L6-v2", "dimension": 768}
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexMismatchError, match="768-d"):
        Index.open("small", _config(tmp_path, embedder="all-MiniLM-L6-v2"))


def test_missing_index_names_the_known_ones(built):
    config, _ = built
    with pytest.raises(IndexNotFoundError) as info:
        Index.open("nope", config)
    assert "known indexes: small" in str(info.value)
    with pytest.raises(IndexNotFoundError, match="no index at"):
        Index.open(Path("/nonexistent/folder"), config)


def test_kg_is_only_built_for_dumps_and_unknown_flags_fail_early(tmp_path):
    config = _config(tmp_path)
    path = build_index(_jsonl(tmp_path), "nokg", config, kg=True, progress=False)  # JSONL: no KG step
    assert "kg" not in json.loads((path / "manifest.json").read_text())
    with pytest.raises(IndexBuildError, match="unknown FAISS"):
        build_index(_jsonl(tmp_path), "x", config, faiss_type="ivf", progress=False)
    with pytest.raises(IndexBuildError, match="unknown format"):
        build_index(_jsonl(tmp_path), "x", config, fmt="csv", progress=False)


def test_hnsw_can_be_chosen(tmp_path):
    config = _config(tmp_path)
    path = build_index(_jsonl(tmp_path), "hnsw", config, faiss_type="hnsw", progress=False)
    with Index.open("hnsw", config) as index:
        assert index.manifest["faiss"]["type"] == "hnsw"
        assert index.search("Ventura Pons", k=1, mode="dense")[0].passage.title == "Actrius"
    assert path.name == "hnsw"
