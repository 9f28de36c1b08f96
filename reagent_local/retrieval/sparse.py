"""BM25 over the passages (Lucene variant, English stopwords, Snowball stemming).

Built in bounded memory by ``bm25_build.build_chunked`` into the index's ``bm25/``
folder: a CSC matrix of weights by term (``scores.npy``, ``rows.npy``, ``offsets.npy``)
and the sorted stem vocabulary (``terms.npy``, ``term_offsets.npy``, ``term_ids.npy``),
every array memory-mapped when searched, so a search touches only its terms' pages.
Weights and scores are those of bm25s (tested bit for bit with tokenizer version 1);
ties are broken by row. ``params.json`` records the tokenizer version (``tokens.py``) the
index was built with, and queries are split by that version: an index without one was
built by version 1 and keeps it. Indexes built before this format (bm25s's own files,
``params.index.json``) are still searched through bm25s (version 1).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Iterable

import numpy as np

from . import bm25_build as fmt
from .tokens import LATEST, LEGACY, splitter, stemmable

SUBDIR = "bm25"
PARAMS = {"method": "lucene", "k1": 1.5, "b": 0.75, "stopwords": "en", "stemmer": "english"}
LEGACY_PARAMS = "params.index.json"  # bm25s's own format, written by builds before the chunked one


def build_bm25(texts: Iterable[str], folder: Path, *, tokenizer: int = LATEST, **sizes: int) -> dict:
    """Index texts (streamed, in row order) into ``folder`` in bounded memory; return the manifest entry."""
    splitter(tokenizer)  # an unknown version is refused before any work
    params = {**PARAMS, "tokenizer": int(tokenizer)}
    info = fmt.build_chunked(texts, Path(folder), params, **sizes)
    return {**params, "format": info["format"], "version": info["version"], "count": info["documents"],
            "vocabulary": info["vocabulary"], "postings": info["postings"]}


def open_sparse(folder: Path) -> "SparseIndex | LegacySparseIndex":
    """The BM25 index in ``folder``, in whichever format it was built."""
    folder = Path(folder)
    if (folder / LEGACY_PARAMS).is_file() and not (folder / fmt.PARAMS_FILE).is_file():
        return LegacySparseIndex(folder)
    return SparseIndex(folder)


def _load(folder: Path, name: str) -> np.ndarray:
    return np.load(folder / name, mmap_mode="r", allow_pickle=False)


class _Vocabulary:
    """Stem -> column id by binary search over the memory-mapped sorted stems."""

    def __init__(self, folder: Path) -> None:
        self._bytes = _load(folder, fmt.TERMS)
        self._offsets = _load(folder, fmt.TERM_OFFSETS)
        self._ids = _load(folder, fmt.TERM_IDS)
        self.size = len(self._ids)
        if len(self._offsets) != self.size + 1 or (self.size and int(self._offsets[-1]) != len(self._bytes)):
            raise ValueError(f"the vocabulary arrays disagree ({self.size} ids, {len(self._offsets)} offsets)")

    def _term(self, i: int) -> bytes:
        return self._bytes[int(self._offsets[i]): int(self._offsets[i + 1])].tobytes()

    def lookup(self, stem: str) -> int | None:
        """The column of ``stem``, or None when no passage has it."""
        key, low, high = stem.encode("utf-8"), 0, self.size
        while low < high:
            middle = (low + high) // 2
            if self._term(middle) < key:
                low = middle + 1
            else:
                high = middle
        if low < self.size and self._term(low) == key:
            return int(self._ids[low])
        return None


class SparseIndex:
    """A chunk-built BM25 index, memory-mapped; ``search`` may be called from several threads."""

    def __init__(self, folder: Path) -> None:
        import Stemmer

        self.folder = Path(folder)
        self.params = json.loads((self.folder / fmt.PARAMS_FILE).read_text(encoding="utf-8"))
        if self.params.get("format") != fmt.FORMAT or self.params.get("version") != fmt.VERSION:
            raise ValueError(f"unknown BM25 format {self.params.get('format')!r} version {self.params.get('version')!r}")
        self.size = int(self.params["documents"])
        self._scores = _load(self.folder, fmt.SCORES)
        self._rows = _load(self.folder, fmt.ROWS)
        self._offsets = _load(self.folder, fmt.OFFSETS)
        self._vocabulary = _Vocabulary(self.folder)
        postings = int(self.params["postings"])
        if len(self._scores) != postings or len(self._rows) != postings or len(self._offsets) != self._vocabulary.size + 1:
            raise ValueError(f"the BM25 arrays disagree with {fmt.PARAMS_FILE} ({postings} postings)")
        self._stopwords = frozenset(self.params["stopword_list"])
        self.tokenizer = int(self.params.get("tokenizer", LEGACY))  # built before versions: version 1
        self._split = splitter(self.tokenizer)
        self._stemmer = Stemmer.Stemmer(self.params["stemmer"])
        self._lock = threading.Lock()  # the Snowball stemmer keeps state between calls

    def terms(self, query: str) -> list[int]:
        """Column ids of the query's words, in order, repeats kept (as bm25s scores them)."""
        words = [w for w in self._split(query) if w not in self._stopwords]
        plain = [w for w in words if stemmable(w)]
        with self._lock:
            stemmed = iter(self._stemmer.stemWords(plain))
        stems = [next(stemmed) if stemmable(w) else w for w in words]  # 8.2.0, --force: looked up exact
        found = (self._vocabulary.lookup(stem) for stem in stems)
        return [t for t in found if t]  # None: unknown; 0: the empty token

    def search(self, query: str, k: int) -> tuple[list[int], list[float]]:
        """Rows and BM25 scores of the best k passages that share a term with the query."""
        terms = self.terms(query)
        k = min(k, self.size)
        if not terms or k <= 0:
            return [], []  # only stopwords or unknown words: BM25 has nothing to rank
        spans = [(int(self._offsets[t]), int(self._offsets[t + 1])) for t in terms]
        rows = np.concatenate([self._rows[a:b] for a, b in spans])
        candidates, where = np.unique(rows, return_inverse=True)
        totals = np.zeros(len(candidates), dtype=np.float32)
        at = 0
        for a, b in spans:  # term by term in float32, as bm25s adds them: the same sums
            totals[where[at: at + b - a]] += self._scores[a:b]
            at += b - a
        order = np.lexsort((candidates, -totals))[:k]  # best first; ties by row
        keep = totals[order] > 0
        return candidates[order][keep].tolist(), totals[order][keep].astype(float).tolist()


class LegacySparseIndex:
    """A BM25 index in bm25s's own format (indexes built before the chunked build); memory-mapped."""

    def __init__(self, folder: Path) -> None:
        import bm25s
        import Stemmer
        from bm25s.tokenization import Tokenizer

        self.folder = Path(folder)
        self._retriever = bm25s.BM25.load(str(self.folder), mmap=True, show_progress=False)
        self._tokenizer = Tokenizer(stopwords=PARAMS["stopwords"], stemmer=Stemmer.Stemmer(PARAMS["stemmer"]))
        self._tokenizer.load_vocab(str(self.folder))
        self._tokenizer.load_stopwords(str(self.folder))
        self._empty_id = self._tokenizer.word_to_id.get("")
        self.tokenizer = LEGACY
        self.size = int(self._retriever.scores["num_docs"])
        self._lock = threading.Lock()  # the Snowball stemmer keeps state between calls

    def search(self, query: str, k: int) -> tuple[list[int], list[float]]:
        """Rows and BM25 scores of the best k passages that share a term with the query."""
        k = min(k, self.size)
        with self._lock:
            tokens = self._tokenizer.tokenize([query], update_vocab=False, show_progress=False)
        terms = [t for t in tokens[0] if t != self._empty_id]
        if not terms or k <= 0:
            return [], []  # only stopwords or unknown words: BM25 has nothing to rank
        rows, scores = self._retriever.retrieve([terms], k=k, show_progress=False, n_threads=1)
        pairs = [(int(r), float(s)) for r, s in zip(np.asarray(rows)[0], np.asarray(scores)[0]) if s > 0]
        return [r for r, _ in pairs], [s for _, s in pairs]
