"""`index update`: new, changed and deleted files; exactly those passages change; equal to a fresh build;
a SIGKILL during the update leaves the old index answering. The hash embedder: no model."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from docs_support import hash_config, make_folder

from reagent_local.errors import IndexBuildError, IndexNotFoundError
from reagent_local.retrieval import Index, build_index, update_index
from reagent_local.retrieval import folder_build
from reagent_local.retrieval.embed import HashEmbedder
from reagent_local.retrieval.layout import interrupted_builds
from reagent_local.retrieval.passages import index_text
from reagent_local.retrieval.status import index_status
from reagent_local.retrieval.store import PassageStore


class Counting(HashEmbedder):
    """The hash embedder, keeping every text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__(64)
        self.texts: list[str] = []

    def encode(self, texts):
        self.texts.extend(texts)
        return super().encode(texts)


def _snapshot(index_path: Path) -> dict:
    """id -> (title, text, origin) of every passage."""
    store = PassageStore(index_path / "passages.duckdb")
    try:
        return {p.id: (p.title, p.text, p.origin) for p in store.passages(0, store.count())}
    finally:
        store.close()


def _vectors(index_path: Path) -> np.ndarray:
    import faiss

    dense = faiss.read_index(str(index_path / "dense.faiss"))
    return dense.reconstruct_n(0, dense.ntotal)


def _edit(docs: Path) -> None:
    """Add a file, change one paragraph of another, delete a third."""
    (docs / "new.md").write_text("# Roof\n\nThe roof of the north workshop leaks when it rains.\n", encoding="utf-8")
    guide = (docs / "guide.md").read_text(encoding="utf-8")
    (docs / "guide.md").write_text(guide.replace("press the red button", "press the green button"), encoding="utf-8")
    (docs / "notes.txt").unlink()


def test_update_changes_exactly_the_passages_of_new_changed_and_deleted_files(tmp_path):
    docs = make_folder(tmp_path)
    config = hash_config(tmp_path)
    before = _snapshot(build_index(docs, "docs", config, progress=False, embedder=HashEmbedder(64)))
    _edit(docs)
    embedder = Counting()
    path = update_index("docs", config, progress=False, embedder=embedder)
    after = _snapshot(path)
    changed = {pid for pid in set(before) | set(after) if before.get(pid) != after.get(pid)}
    assert changed == {"new.md#0", "guide.md#2", "notes.txt#0"}  # added, changed, deleted
    assert "notes.txt#0" not in after and "green button" in after["guide.md#2"][1]
    # only the text the old index did not hold was embedded
    assert sorted(embedder.texts) == sorted(index_text(*after[pid][:2]) for pid in ("new.md#0", "guide.md#2"))
    manifest = json.loads((path / "manifest.json").read_text())
    update = manifest["update"]
    assert update["files"] == {"added": 1, "changed": 1, "deleted": 1, "unchanged": 2}
    assert (update["added"], update["changed"], update["deleted"]) == (["new.md"], ["guide.md"], ["notes.txt"])
    assert update["passages"] == {"total": 8, "vectors_reused": 6, "embedded": 2}
    with Index.open("docs", config) as index:  # dense, BM25 and the passage table agree
        assert index.search("roof leaks rain", k=1, mode="sparse")[0].passage.id == "new.md#0"
        assert index.search("roof leaks rain", k=1, mode="dense")[0].passage.id == "new.md#0"
        assert "notes.txt#0" not in [h.passage.id for h in index.search("meeting budget approved", k=8)]

    fresh = build_index(docs, "fresh", config, progress=False, embedder=HashEmbedder(64))
    assert _snapshot(fresh) == after  # same passages, texts and origins, in the same rows
    assert np.array_equal(_vectors(fresh), _vectors(path))
    with Index.open("docs", config) as a, Index.open("fresh", config) as b:
        for query in ("kettle install workshop", "blue heron", "help page contact"):
            assert [(h.passage.id, round(h.score, 5)) for h in a.search(query, k=5)] == \
                   [(h.passage.id, round(h.score, 5)) for h in b.search(query, k=5)]


def test_an_update_of_an_unchanged_folder_reads_and_embeds_nothing(tmp_path, monkeypatch):
    docs = make_folder(tmp_path)
    config = hash_config(tmp_path)
    before = _snapshot(build_index(docs, "docs", config, progress=False))
    read: list[str] = []
    real = folder_build.read_document
    monkeypatch.setattr(folder_build, "read_document", lambda rel, *a, **k: read.append(rel) or real(rel, *a, **k))
    embedder = Counting()
    path = update_index("docs", config, progress=False, embedder=embedder)
    assert _snapshot(path) == before
    assert embedder.texts == []
    # the skipped files are tried again (a PDF may have been repaired), the indexed ones are not read
    assert sorted(read) == ["papers/broken.pdf", "papers/locked.pdf", "papers/scan.pdf", "sub/blob"]


def test_build_update_builds_when_there_is_no_index_and_refuses_other_indexes(tmp_path):
    docs = make_folder(tmp_path)
    config = hash_config(tmp_path)
    path = build_index(docs, "docs", config, progress=False, update=True)
    assert "update" not in json.loads((path / "manifest.json").read_text())  # a first build
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"title": "A", "text": "Some text here."}) + "\n")
    build_index(corpus, "corpus", config, progress=False)
    with pytest.raises(IndexBuildError, match="not from a folder of documents, so it cannot be updated"):
        update_index("corpus", config, progress=False)
    with pytest.raises(IndexBuildError, match="not from a folder of documents"):
        build_index(docs, "corpus", config, progress=False, update=True)
    with pytest.raises(IndexNotFoundError, match="no index named 'nope'"):
        update_index("nope", config, progress=False)
    moved = tmp_path / "moved"
    docs.rename(moved)
    with pytest.raises(IndexBuildError, match="does not exist any more"):
        update_index("docs", config, progress=False)
    assert update_index("docs", config, source=moved, progress=False) == path


def test_globs_are_kept_for_the_next_update(tmp_path):
    docs = make_folder(tmp_path)
    config = hash_config(tmp_path)
    build_index(docs, "md", config, progress=False, include=["*.md"])
    (docs / "more.md").write_text("# More\n\nAnother page about kettles.\n")
    (docs / "more.txt").write_text("Not read: a text file.\n")
    path = update_index("md", config, progress=False)
    assert sorted({pid.split("#")[0] for pid in _snapshot(path)}) == ["guide.md", "more.md"]


KILL_SCRIPT = r'''
import sys, time
from pathlib import Path
from reagent_local.config import load_config
from reagent_local.retrieval import update_index
from reagent_local.retrieval.embed import HashEmbedder


class Hanging(HashEmbedder):
    def encode(self, texts):
        Path(sys.argv[2]).touch()  # the update is embedding: the test kills us now
        time.sleep(600)


config = load_config({"paths.home": sys.argv[1], "retrieval.embedder": "hash-64"}, env={})
update_index("docs", config, progress=False, embedder=Hanging(64))
'''


def test_a_sigkill_during_an_update_leaves_the_old_index_answering(tmp_path):
    docs = make_folder(tmp_path)
    config = hash_config(tmp_path)
    before = _snapshot(build_index(docs, "docs", config, progress=False))
    _edit(docs)
    script, mark = tmp_path / "update.py", tmp_path / "embedding"
    script.write_text(KILL_SCRIPT, encoding="utf-8")
    child = subprocess.Popen([sys.executable, str(script), str(config.paths.home), str(mark)])
    try:
        deadline = time.monotonic() + 60
        while not mark.exists():
            assert child.poll() is None, "the update ended before it embedded"
            assert time.monotonic() < deadline, "the update never reached the embedding"
            time.sleep(0.05)
        running = index_status(config, "docs")  # the update holds the lock: building, the old index answering
        assert (running.state, running.answers, running.fix) == ("building", True, None)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert _snapshot(config.paths.indexes / "docs") == before
    with Index.open("docs", config) as index:  # the old index still answers, deleted file and all
        assert index.search("meeting budget approved", k=1, mode="sparse")[0].passage.id == "notes.txt#0"
    assert interrupted_builds(config) == ["docs"]
    status = index_status(config, "docs")  # named with the command that resumes it, not a refused `index build`
    assert (status.state, status.answers, status.fix) == ("interrupted", True, "reagent index update docs")
    path = update_index("docs", config, progress=False)  # the next update finishes the job
    assert "new.md#0" in _snapshot(path) and "notes.txt#0" not in _snapshot(path)
    assert interrupted_builds(config) == []
    assert index_status(config, "docs").state == "ready"


@pytest.mark.parametrize("faiss_type", ["hnsw", "ivfpq"])
def test_an_update_reuses_the_vectors_of_hnsw_and_ivfpq_indexes(tmp_path, faiss_type):
    docs = tmp_path / "many"
    docs.mkdir()
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    paragraphs = [" ".join(f"{words[(i + j) % len(words)]}{i}" for j in range(60)) + "." for i in range(1100)]
    (docs / "big.md").write_text("# Big\n\n" + "\n\n".join(paragraphs) + "\n", encoding="utf-8")
    (docs / "small.md").write_text("# Small\n\nA short page about kettles.\n", encoding="utf-8")
    config = hash_config(tmp_path)
    path = build_index(docs, "many", config, progress=False, faiss_type=faiss_type)
    built = json.loads((path / "manifest.json").read_text())
    assert built["faiss"]["type"] == faiss_type and (path / "vectors").is_dir() == (faiss_type == "ivfpq")
    (docs / "small.md").write_text("# Small\n\nA short page about teapots.\n", encoding="utf-8")
    embedder = Counting()
    path = update_index("many", config, progress=False, embedder=embedder)
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["faiss"]["type"] == faiss_type  # the type asked for at the build is kept
    assert manifest["update"]["passages"]["embedded"] == 1 and len(embedder.texts) == 1
    fresh = build_index(docs, "fresh", config, progress=False, faiss_type=faiss_type)
    assert _snapshot(fresh) == _snapshot(path)
    if faiss_type == "hnsw":
        assert np.array_equal(_vectors(fresh), _vectors(path))
    else:
        kept = lambda p: np.concatenate([np.load(f) for f in sorted((p / "vectors").glob("*.npy"))])  # noqa: E731
        assert np.array_equal(kept(fresh), kept(path))
