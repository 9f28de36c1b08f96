"""The chunked BM25 build: same matrix and scores as bm25s, bounded pieces, memory-mapped search, old format read."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from reagent_local.config import load_config
from reagent_local.retrieval import Index, build_index
from reagent_local.retrieval.build import file_sizes
from reagent_local.retrieval.sparse import LegacySparseIndex, SparseIndex, build_bm25, open_sparse

WORDS = ("actrius catalan drama film directed ventura pons alabama state capital montgomery running runs ran "
         "runner albedo reflection solar radiation aristotle greek philosopher achilles trojan war iliad café "
         "naïve résumé 1997 2001 x y the of and a an is").split()


def _corpus(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40))) for _ in range(n)]
    texts += ["", "the of and", "a b c", "Ü ö"]  # no word, stopwords only, one-letter words, unicode
    return texts


def _legacy(texts: list[str], folder: Path) -> None:
    """The build this project used before the chunked one: bm25s holding every passage's token ids."""
    import bm25s
    import Stemmer
    from bm25s.tokenization import Tokenized, Tokenizer

    tokenizer = Tokenizer(stopwords="en", stemmer=Stemmer.Stemmer("english"))
    ids = list(tokenizer.streaming_tokenize(texts, update_vocab=True))
    retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    retriever.index(Tokenized(ids=ids, vocab=tokenizer.get_vocab_dict()), show_progress=False)
    retriever.save(str(folder), show_progress=False)
    tokenizer.save_vocab(str(folder))
    tokenizer.save_stopwords(str(folder))


def _same_ranking(old: tuple[list, list], new: tuple[list, list]) -> bool:
    """Equal scores in order, and equal rows except in the order of tied scores."""
    (old_rows, old_scores), (new_rows, new_scores) = old, new
    if old_scores != new_scores:
        return False
    boundary = old_scores[-1] if old_scores else None  # ties cut at k may keep different rows
    return ({p for p in zip(old_rows, old_scores) if p[1] != boundary}
            == {p for p in zip(new_rows, new_scores) if p[1] != boundary})


# tiny chunks, runs and blocks, so that every path runs: many runs, many blocks, long lists streamed
@pytest.mark.parametrize("sizes", [{}, {"chunk": 7, "run_postings": 50, "merge_postings": 30}])
def test_chunked_build_equals_bm25s_bit_for_bit(tmp_path: Path, sizes: dict) -> None:
    texts = _corpus(400)
    _legacy(texts, tmp_path / "old")
    info = build_bm25(iter(texts), tmp_path / "new", tokenizer=1, **sizes)  # version 1 is bm25s's tokenizer
    assert info["count"] == len(texts) and info["format"] == "reagent-bm25"
    pairs = (("data.csc.index.npy", "scores.npy"), ("indices.csc.index.npy", "rows.npy"),
             ("indptr.csc.index.npy", "offsets.npy"))
    for old_name, new_name in pairs:
        old, new = np.load(tmp_path / "old" / old_name), np.load(tmp_path / "new" / new_name)
        assert old.dtype == new.dtype and np.array_equal(old, new), new_name
    assert not (tmp_path / "new" / "runs").exists()
    legacy, chunked = LegacySparseIndex(tmp_path / "old"), SparseIndex(tmp_path / "new")
    assert legacy.size == chunked.size == len(texts)
    rng = random.Random(3)
    queries = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(200)]
    queries += ["RUNNING Ran", "films directed by Ventura", "unknownword", "the and of", "café naïve"]
    for query in queries:
        for k in (1, 5, 50):
            assert _same_ranking(legacy.search(query, k), chunked.search(query, k)), (query, k)


def test_search_is_memory_mapped_and_ties_go_by_row(tmp_path: Path) -> None:
    build_bm25(iter(["alpha beta", "gamma", "alpha beta", "beta alpha"]), tmp_path / "bm25")
    index = SparseIndex(tmp_path / "bm25")
    assert isinstance(index._scores, np.memmap) and isinstance(index._rows, np.memmap)
    rows, scores = index.search("alpha beta", 10)
    assert rows == [0, 2, 3] and len(set(scores)) == 1
    assert index.search("the of", 3) == ([], [])
    assert index.search("zeta", 3) == ([], [])


def test_equal_to_bm25s_on_a_benchmark_corpus(shared_data: Path, tmp_path: Path) -> None:
    from reagent_local.datasets import load_questions, open_corpus
    from reagent_local.retrieval.passages import index_text

    questions = load_questions(shared_data / "hotpotqa" / "hotpot_dev_distractor_sample200.json", "hotpotqa")
    texts = [index_text(p.title, p.text) for p in open_corpus(questions)]
    _legacy(texts, tmp_path / "old")
    build_bm25(iter(texts), tmp_path / "new", tokenizer=1, chunk=500, run_postings=20_000, merge_postings=10_000)
    assert np.array_equal(np.load(tmp_path / "old" / "data.csc.index.npy"), np.load(tmp_path / "new" / "scores.npy"))
    legacy, chunked = LegacySparseIndex(tmp_path / "old"), SparseIndex(tmp_path / "new")
    for question in questions:
        assert _same_ranking(legacy.search(question.question, 50), chunked.search(question.question, 50))


def test_an_index_with_the_old_bm25_format_still_opens(tmp_path: Path) -> None:
    config = load_config({"paths.home": str(tmp_path / "home"), "retrieval.embedder": "hash-64"}, env={})
    source = tmp_path / "docs.jsonl"
    docs = [("Actrius", "Actrius is a 1997 Catalan drama film directed by Ventura Pons."),
            ("Alabama", "Alabama is a state in the United States. Its capital is Montgomery.")]
    source.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in docs), encoding="utf-8")
    folder = build_index(source, "x", config, progress=False)
    with Index.open("x", config) as index:
        new = [(h.passage.id, h.score) for h in index.search("Who directed Actrius?", k=2, mode="sparse")]
    # rewrite bm25/ as a build from before the chunked format wrote it
    for file in (folder / "bm25").iterdir():
        file.unlink()
    _legacy([f"{t}\n{x}" for t, x in docs], folder / "bm25")
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"] = file_sizes(folder)
    del manifest["bm25"]["tokenizer"]  # manifests from before tokenizer versions have none
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert isinstance(open_sparse(folder / "bm25"), LegacySparseIndex)
    with Index.open("x", config) as index:
        old = [(h.passage.id, h.score) for h in index.search("Who directed Actrius?", k=2, mode="sparse")]
    assert old == new and old[0][0] == "Actrius#0"
