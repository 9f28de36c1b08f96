"""A BM25 build in bounded memory: tokenise in chunks, spill sorted runs, merge by term.

Pass 1 tokenises ``CHUNK`` texts at a time as bm25s does (lower case, ``\\w\\w+`` words,
English stopwords, Snowball stems, stem ids in first-seen order; tokenizer version 2 adds
the compounds, flags and identifier parts of ``tokens.py``, unstemmed when not plain words),
counts each (passage, term) pair and spills runs of at most ``RUN_POSTINGS`` postings,
sorted by term then row, to disk: term, row, term frequency and passage length,
16 bytes a posting. In memory stay the chunk, one run, the vocabulary (stem -> id,
plus a bounded word -> id cache) and one document frequency per term.
Pass 2 walks the terms in id order in blocks of at most ``MERGE_POSTINGS`` postings,
reads each run's slice of the block, computes the Lucene BM25 weight bit for bit as
bm25s does, and appends the block to the CSC arrays on disk; a term with more
postings than a block is streamed run by run. Nothing holds every passage's tokens.

The result (``bm25/``) is read by ``sparse.SparseIndex`` with every array memory-mapped.
"""

from __future__ import annotations

import json
import math
import shutil
from itertools import chain
from pathlib import Path
from typing import Iterable

import numpy as np

from .tokens import LEGACY, splitter, stemmable

CHUNK = 10_000  # passages tokenised at once
RUN_POSTINGS = 4_000_000  # postings per spilled run (64 MB on disk, ~150 MB while sorting)
MERGE_POSTINGS = 4_000_000  # postings per merge block (~150 MB while merging)
WORD_CACHE = 1_000_000  # surface words remembered (word -> stem id); cleared when full
FORMAT = "reagent-bm25"
VERSION = 1
# file names inside bm25/
PARAMS_FILE = "params.json"
SCORES, ROWS, OFFSETS = "scores.npy", "rows.npy", "offsets.npy"  # CSC by term: weights, passage rows, term starts
TERMS, TERM_OFFSETS, TERM_IDS = "terms.npy", "term_offsets.npy", "term_ids.npy"  # stems sorted by UTF-8 bytes
_RUN_FIELDS = ("term", "row", "tf", "length")


class Tokeniser:
    """bm25s's tokenisation with stemming, giving the same stem ids in the same order (tokenizer version 1);
    a later version (``tokens.py``) adds its own tokens, stemming only the plain words among them."""

    def __init__(self, stopwords: Iterable[str], stemmer: str = "english", version: int = LEGACY) -> None:
        import Stemmer

        self._stem = Stemmer.Stemmer(stemmer).stemWord
        self._split = splitter(version)
        self._stopwords = frozenset(stopwords)
        self.stems: dict[str, int] = {"": 0}  # bm25s gives the empty token id 0 (passages without words)
        self._words: dict[str, int] = {}  # word -> stem id, -1 for a stopword

    def tokenise(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(passage index of each token, stem id of each token, tokens per passage); new stems get new ids."""
        words = [self._split(text) for text in texts]
        flat = list(chain.from_iterable(words))
        cache = self._words
        if len(cache) > WORD_CACHE:
            cache.clear()  # only a cache: the stems keep their ids
        for word in dict.fromkeys(flat):  # first-seen order, so new stems are numbered as bm25s numbers them
            if word in cache:
                continue
            if word in self._stopwords:
                cache[word] = -1
                continue
            stem = self._stem(word) if stemmable(word) else word  # 8.2.0, --force, src/foo.py: exact
            sid = self.stems.get(stem)
            if sid is None:
                sid = self.stems[stem] = len(self.stems)
            cache[word] = sid
        ids = np.fromiter(map(cache.__getitem__, flat), dtype=np.int64, count=len(flat))
        per_text = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        kept = ids >= 0
        doc = np.repeat(np.arange(len(texts), dtype=np.int64), per_text)[kept]
        ids = ids[kept]
        lengths = np.bincount(doc, minlength=len(texts))
        empty = np.flatnonzero(lengths == 0)
        if len(empty):  # bm25s: a passage with no word is the one empty token
            doc = np.concatenate([doc, empty])
            ids = np.concatenate([ids, np.zeros(len(empty), dtype=np.int64)])
            lengths[empty] = 1
        return doc, ids, lengths


class _Runs:
    """Sorted runs of postings on disk, with the document frequencies and total length."""

    def __init__(self, folder: Path, run_postings: int) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.run_postings = run_postings
        self.count = 0
        self.df = np.zeros(1024, dtype=np.int64)
        self.documents = 0
        self.total_length = 0
        self._pending: list[tuple[np.ndarray, ...]] = []
        self._pending_size = 0

    def add(self, doc: np.ndarray, ids: np.ndarray, lengths: np.ndarray) -> None:
        """Count the (passage, term) pairs of one tokenised chunk; spill a run when enough are pending."""
        pairs, tf = np.unique((doc << 32) | ids, return_counts=True)  # sorted by passage, then term
        local = pairs >> 32
        terms = (pairs & 0xFFFFFFFF).astype(np.int32)
        if terms.size and int(terms.max()) >= len(self.df):
            self.df = np.concatenate([self.df, np.zeros(max(len(self.df), int(terms.max()) + 1), dtype=np.int64)])
        self.df[: int(terms.max()) + 1 if terms.size else 0] += np.bincount(terms)
        rows = (local + self.documents).astype(np.int32)
        self._pending.append((terms, rows, tf.astype(np.int32), lengths[local].astype(np.int32)))
        self._pending_size += len(terms)
        self.documents += len(lengths)
        self.total_length += int(lengths.sum())
        if self._pending_size >= self.run_postings:
            self.spill()

    def spill(self) -> None:
        """Write the pending postings as one run sorted by term, then row."""
        if not self._pending:
            return
        columns = [np.concatenate(parts) for parts in zip(*self._pending)]
        self._pending, self._pending_size = [], 0
        order = np.argsort(columns[0], kind="stable")  # rows are already ascending: stable keeps them so
        for field, values in zip(_RUN_FIELDS, columns):
            _save(self.folder / f"run-{self.count:06d}-{field}.npy", values[order])
        self.count += 1

    def slice(self, number: int, low: int, high: int) -> tuple[np.ndarray, ...]:
        """(term, row, tf, length) of run ``number``'s postings with low <= term < high (copies, no map kept)."""
        terms = np.load(self.folder / f"run-{number:06d}-term.npy", mmap_mode="r")
        start, stop = np.searchsorted(terms, [low, high])
        out = [np.array(terms[start:stop])]
        del terms
        for field in _RUN_FIELDS[1:]:
            values = np.load(self.folder / f"run-{number:06d}-{field}.npy", mmap_mode="r")
            out.append(np.array(values[start:stop]))
            del values  # unmapped at once: resident memory stays one block, not every run read so far
        return tuple(out)


def _save(path: Path, values: np.ndarray) -> None:
    with open(path, "wb") as stream:
        np.save(stream, values, allow_pickle=False)


class _NpyWriter:
    """Appends to a 1-d .npy file whose length is known in advance, without mapping it."""

    def __init__(self, path: Path, dtype: str, length: int) -> None:
        self.path, self.dtype, self.length, self.written = path, np.dtype(dtype), length, 0
        self._stream = open(path, "wb")
        header = {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": (length,)}
        np.lib.format.write_array_header_1_0(self._stream, header)

    def write(self, values: np.ndarray) -> None:
        self._stream.write(np.ascontiguousarray(values, dtype=self.dtype).tobytes())
        self.written += len(values)

    def close(self, *, check: bool = True) -> None:
        """Close the file; ``check=False`` when another error is already on its way (a full disk), so it is
        the one reported rather than a short count or a second failed flush."""
        if not check:
            try:
                self._stream.close()
            except OSError:
                pass
            return
        self._stream.close()
        if self.written != self.length:
            raise RuntimeError(f"{self.path}: wrote {self.written} values, expected {self.length}")


def idf_lucene(df: np.ndarray, documents: int) -> np.ndarray:
    """log(1 + (N - df + 0.5) / (df + 0.5)) per term as float32, computed as bm25s computes it (math.log)."""
    out = np.zeros(len(df), dtype=np.float32)
    for term, count in enumerate(df.tolist()):
        if count:
            out[term] = math.log(1 + (documents - count + 0.5) / (count + 0.5))
    return out


def weights(idf: np.ndarray, terms: np.ndarray, tf: np.ndarray, lengths: np.ndarray, avg_length: np.float64,
            k1: float, b: float) -> np.ndarray:
    """Lucene BM25 weight of each posting, float32; the same float64 steps as bm25s, so the same bits."""
    tfc = tf.astype(np.float64) / (k1 * ((1 - b) + b * lengths.astype(np.float64) / avg_length) + tf)
    return (idf[terms].astype(np.float64) * tfc).astype(np.float32)


def build_chunked(texts: Iterable[str], folder: Path, params: dict, *, chunk: int = CHUNK,
                  run_postings: int = RUN_POSTINGS, merge_postings: int = MERGE_POSTINGS) -> dict:
    """Index ``texts`` (row order) into ``folder`` with BM25 ``params``; return counts and parameters."""
    from bm25s.tokenization import _infer_stopwords

    stopwords = list(_infer_stopwords(params["stopwords"]))
    folder.mkdir(parents=True, exist_ok=True)
    work = folder / "runs"
    shutil.rmtree(work, ignore_errors=True)
    tokeniser = Tokeniser(stopwords, params["stemmer"], params.get("tokenizer", LEGACY))
    runs = _Runs(work, run_postings)
    buffer: list[str] = []
    for text in chain(texts, [None]):
        if text is not None:
            buffer.append(text)
        if buffer and (len(buffer) >= chunk or text is None):
            runs.add(*tokeniser.tokenise(buffer))
            buffer = []
    runs.spill()
    vocabulary = len(tokeniser.stems)
    df = runs.df[:vocabulary]
    postings = int(df.sum())
    offsets = np.zeros(vocabulary + 1, dtype=np.int64)
    np.cumsum(df, out=offsets[1:])
    _save(folder / OFFSETS, offsets)
    documents = runs.documents
    if documents:
        avg_length = np.float64(runs.total_length) / documents  # as numpy's mean of the lengths
        _merge(runs, offsets, idf_lucene(df, documents), avg_length, params, folder, postings, merge_postings)
    else:
        for name, dtype in ((SCORES, np.float32), (ROWS, np.int32)):
            _save(folder / name, np.zeros(0, dtype=dtype))
    shutil.rmtree(work)
    _write_vocabulary(tokeniser.stems, folder)
    info = {"format": FORMAT, "version": VERSION, **params, "documents": documents, "vocabulary": vocabulary,
            "postings": postings, "stopword_list": stopwords}
    (folder / PARAMS_FILE).write_text(json.dumps(info, indent=1), encoding="utf-8")
    return info


def _merge(runs: _Runs, offsets: np.ndarray, idf: np.ndarray, avg_length: np.float64, params: dict,
           folder: Path, postings: int, budget: int) -> None:
    """Write the CSC weights and rows, term by term, a block of at most ``budget`` postings at a time."""
    k1, b = params["k1"], params["b"]
    scores, rows = _NpyWriter(folder / SCORES, "float32", postings), _NpyWriter(folder / ROWS, "int32", postings)
    vocabulary, low = len(offsets) - 1, 0
    try:
        while low < vocabulary:
            if offsets[low + 1] - offsets[low] > budget:  # one long posting list: stream it run by run
                for number in range(runs.count):
                    terms, found, tf, lengths = runs.slice(number, low, low + 1)
                    scores.write(weights(idf, terms, tf, lengths, avg_length, k1, b))
                    rows.write(found)
                low += 1
                continue
            high = max(low + 1, int(np.searchsorted(offsets, offsets[low] + budget, side="right")) - 1)
            parts = [runs.slice(number, low, high) for number in range(runs.count)]
            terms, found, tf, lengths = (np.concatenate(column) for column in zip(*parts))
            del parts
            order = np.argsort(terms, kind="stable")  # runs are in row order: stable keeps rows ascending
            scores.write(weights(idf, terms[order], tf[order], lengths[order], avg_length, k1, b))
            rows.write(found[order])
            low = high
    except BaseException:
        scores.close(check=False)
        rows.close(check=False)
        raise
    scores.close()
    rows.close()


def _write_vocabulary(stems: dict[str, int], folder: Path) -> None:
    """Stems sorted by their UTF-8 bytes (one byte array plus offsets) and each one's column id."""
    encoded = sorted((stem.encode("utf-8"), sid) for stem, sid in stems.items())
    lengths = np.fromiter((len(e) for e, _ in encoded), dtype=np.int64, count=len(encoded))
    term_offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=term_offsets[1:])
    _save(folder / TERMS, np.frombuffer(b"".join(e for e, _ in encoded), dtype=np.uint8))
    _save(folder / TERM_OFFSETS, term_offsets)
    _save(folder / TERM_IDS, np.fromiter((sid for _, sid in encoded), dtype=np.int32, count=len(encoded)))

