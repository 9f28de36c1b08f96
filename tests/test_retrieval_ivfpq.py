"""IVF-PQ dense indexes: parameters by corpus size, manifest, memory-mapped search, nprobe, fallback."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from reagent_local.config import load_config
from reagent_local.errors import IndexBuildError, ReagentError
from reagent_local.retrieval import Index, build_index
from reagent_local.retrieval import dense
from reagent_local.retrieval.dense import ShardVectors, choose_type, ivfpq_params

WORDS = [f"w{i}" for i in range(400)]


def _config(tmp_path: Path, **extra):
    return load_config({"paths.home": str(tmp_path / "home"), "retrieval.embedder": "hash-64", **extra}, env={})


def _corpus(tmp_path: Path, n: int) -> Path:
    rng = random.Random(5)
    path = tmp_path / f"docs{n}.jsonl"
    with open(path, "w", encoding="utf-8") as out:
        for i in range(n):
            words = " ".join(rng.choice(WORDS) for _ in range(12))
            out.write(json.dumps({"title": f"Doc{i}", "text": f"{words} unique{i}."}) + "\n")
    return path


def test_parameters_follow_the_corpus_size() -> None:
    small = ivfpq_params(1603, 384)  # the MuSiQue open corpus
    assert small == {**small, "nlist": 32, "m": 96, "nbits": 8, "opq": False, "nprobe": 16, "train_points": 1603}
    assert 39 * small["nlist"] <= 1603 < 39 * 2 * small["nlist"] or small["nlist"] == 32
    big = ivfpq_params(2_000_000, 384)
    assert big["nlist"] == 4096 and not big["opq"] and big["nprobe"] == 64 and big["code_bytes"] == 96
    assert 39 * 4096 <= big["train_points"] <= dense.MAX_TRAIN_POINTS
    wiki = ivfpq_params(29_000_000, 384)
    assert wiki["nlist"] == 16384 and wiki["train_points"] <= dense.MAX_TRAIN_POINTS
    assert ivfpq_params(1000, 64)["m"] == 32  # sub-quantisers divide the dimension, two dimensions at least
    assert ivfpq_params(1000, 384)["nbits"] == 7  # a 256-centroid codebook needs more than 1,000 points


def test_opq_is_used_from_opq_min(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dense, "OPQ_MIN", 10_000)
    assert ivfpq_params(10_000, 384)["opq"] and not ivfpq_params(9_999, 384)["opq"]


def test_auto_chooses_by_size() -> None:
    assert choose_type("auto", 50_000) == "flat"
    assert choose_type("auto", dense.HNSW_THRESHOLD) == "hnsw"
    assert choose_type("auto", dense.IVFPQ_THRESHOLD) == "ivfpq"
    assert choose_type("ivfpq", 10) == "ivfpq"
    with pytest.raises(IndexBuildError, match="unknown FAISS index type"):
        choose_type("pq", 10)


def test_sample_draws_distinct_rows_across_shards(tmp_path: Path) -> None:
    paths = []
    for number, start in enumerate((0, 5, 12)):
        size = (5, 7, 3)[number]
        paths.append(tmp_path / f"shard-{number}.npy")
        np.save(paths[-1], np.arange(start, start + size, dtype=np.float32).reshape(-1, 1).repeat(2, axis=1))
    vectors = ShardVectors(paths)
    assert vectors.count == 15 and vectors.dimension == 2
    drawn = vectors.sample(9)[:, 0]
    assert len(set(drawn)) == 9 and list(drawn) == sorted(drawn) and set(drawn) <= set(range(15))
    assert len(vectors.sample(50)) == 15


@pytest.fixture(scope="module")
def ivfpq_index(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("ivfpq")
    config = _config(tmp_path)
    path = build_index(_corpus(tmp_path, 1500), "pq", config, faiss_type="ivfpq", progress=False)
    return config, path


def test_an_ivfpq_build_records_its_parameters_and_answers(ivfpq_index) -> None:
    config, path = ivfpq_index
    faiss_info = json.loads((path / "manifest.json").read_text())["faiss"]
    assert faiss_info["type"] == "ivfpq" and faiss_info["count"] == 1500
    params = faiss_info["params"]
    assert params["nlist"] == 32 and params["m"] == 32 and params["nbits"] == 8 and not params["opq"]
    assert params["factory"] == "IVF32,PQ32x8" and params["train_points"] == 1500
    with Index.open("pq", config) as index:
        rng = random.Random(5)  # the corpus again: query with a document's own words
        texts = [" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(1500)]
        found = 0
        for i in range(0, 1500, 50):
            hits = index.search(f"{texts[i]} unique{i}", k=5, mode="dense", nprobe=32)
            found += any(h.passage.title == f"Doc{i}" for h in hits)
        assert found >= 27  # of 30: product quantisation is approximate
        assert index.search("unique7 " + texts[7], k=1, mode="hybrid")[0].passage.title == "Doc7"


def test_nprobe_is_tunable_per_search_and_by_config(ivfpq_index) -> None:
    import faiss

    config, _ = ivfpq_index
    with Index.open("pq", config) as index:
        one = [h.passage.id for h in index.search("w1 w2 w3 w4", k=20, mode="dense", nprobe=1)]
        every = [h.passage.id for h in index.search("w1 w2 w3 w4", k=20, mode="dense", nprobe=32)]
        assert one != every  # one cell of 32 holds other neighbours than all of them
        invlists = faiss.extract_index_ivf(index._faiss).invlists
        assert isinstance(faiss.downcast_InvertedLists(invlists), faiss.OnDiskInvertedLists)  # memory-mapped
        with pytest.raises(ReagentError, match="nprobe must be at least 1"):
            index.search("w1", nprobe=-1)
    tuned = _config(Path(str(config.paths.home)).parent, **{"retrieval.nprobe": 1})
    with Index.open("pq", tuned) as index:
        assert [h.passage.id for h in index.search("w1 w2 w3 w4", k=20, mode="dense")] == one


def test_a_small_corpus_asked_for_ivfpq_gets_flat_and_says_why(tmp_path: Path) -> None:
    config = _config(tmp_path)
    path = build_index(_corpus(tmp_path, 40), "tiny", config, faiss_type="ivfpq", progress=False)
    faiss_info = json.loads((path / "manifest.json").read_text())["faiss"]
    assert faiss_info["type"] == "flat" and faiss_info["requested"] == "ivfpq"
    assert "too few to train IVF-PQ" in faiss_info["note"]
    with Index.open("tiny", config) as index:
        exact = [h.passage.id for h in index.search("Doc3 unique3", k=3, mode="dense")]
        assert "Doc3#0" in exact
        assert [h.passage.id for h in index.search("Doc3 unique3", k=3, mode="dense", nprobe=1)] == exact  # flat


def test_a_truncated_ivfpq_file_is_one_clear_error(ivfpq_index, tmp_path: Path) -> None:
    import shutil

    from reagent_local.errors import IndexCorruptError

    config, path = ivfpq_index
    copy = tmp_path / "home" / "indexes" / "broken"
    shutil.copytree(path, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest.pop("files")  # as an index from before sizes were recorded: the load itself must fail cleanly
    (copy / "manifest.json").write_text(json.dumps(manifest))
    data = (copy / "dense.faiss").read_bytes()
    (copy / "dense.faiss").write_bytes(data[: len(data) // 2])
    with pytest.raises(IndexCorruptError, match="dense.faiss is truncated or damaged"):
        with Index.open(copy, config) as index:
            index.search("w1", k=2)


def test_convert_rebuilds_only_the_dense_index(tmp_path: Path) -> None:
    from reagent_local.retrieval.convert import convert_index

    config = _config(tmp_path)
    build_index(_corpus(tmp_path, 300), "base", config, progress=False)
    path = convert_index("base", "base-hnsw", config, "hnsw")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["faiss"]["type"] == "hnsw" and manifest["converted_from"]["faiss"]["type"] == "flat"
    assert manifest["passages"] == 300 and manifest["name"] == "base-hnsw"
    assert (path / "bm25" / "scores.npy").stat().st_nlink == 2  # shared with the base, not copied
    assert not any(p.name.startswith(".base-hnsw.building") for p in config.paths.indexes.iterdir())
    with Index.open("base", config) as flat, Index.open("base-hnsw", config) as hnsw:
        for query in ("Doc7 unique7", "w1 w2 w3", "unique250 w5"):
            assert ([h.passage.id for h in flat.search(query, k=5, mode="dense")]
                    == [h.passage.id for h in hnsw.search(query, k=5, mode="dense")])
    with pytest.raises(IndexBuildError, match="already exists"):
        convert_index("base", "base-hnsw", config, "flat")
    convert_index("base", "base-hnsw", config, "flat", force=True)
    assert json.loads((path / "manifest.json").read_text())["faiss"]["type"] == "flat"


def test_an_ivfpq_index_cannot_be_converted(ivfpq_index) -> None:
    from reagent_local.retrieval.convert import convert_index

    config, _ = ivfpq_index
    with pytest.raises(IndexBuildError, match="holds ivfpq codes, not its vectors"):
        convert_index("pq", "pq-flat", config, "flat")
