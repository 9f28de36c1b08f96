"""BM25 over the passages with ``bm25s`` (English stopwords, Snowball stemming).

Saved with bm25s's own format (numpy arrays written without pickle, JSON vocab)
in the index's ``bm25/`` folder, and memory-mapped when loaded.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterable

import numpy as np

SUBDIR = "bm25"
PARAMS = {"method": "lucene", "k1": 1.5, "b": 0.75, "stopwords": "en", "stemmer": "english"}


def _tokenizer():
    import Stemmer
    from bm25s.tokenization import Tokenizer

    return Tokenizer(stopwords=PARAMS["stopwords"], stemmer=Stemmer.Stemmer(PARAMS["stemmer"]))


def build_bm25(texts: Iterable[str], folder: Path, chunk: int = 10_000) -> dict:
    """Tokenise texts (streamed, in row order), index them, save to ``folder``; return parameters."""
    import bm25s
    from bm25s.tokenization import Tokenized

    tokenizer = _tokenizer()
    ids: list[list[int]] = []
    buffer: list[str] = []
    for text in texts:
        buffer.append(text)
        if len(buffer) >= chunk:
            ids.extend(tokenizer.streaming_tokenize(buffer, update_vocab=True))
            buffer = []
    if buffer:
        ids.extend(tokenizer.streaming_tokenize(buffer, update_vocab=True))
    retriever = bm25s.BM25(method=PARAMS["method"], k1=PARAMS["k1"], b=PARAMS["b"])
    retriever.index(Tokenized(ids=ids, vocab=tokenizer.get_vocab_dict()), show_progress=False)
    folder.mkdir(parents=True, exist_ok=True)
    retriever.save(str(folder), show_progress=False)
    tokenizer.save_vocab(str(folder))
    tokenizer.save_stopwords(str(folder))
    return {**PARAMS, "count": len(ids), "vocabulary": len(tokenizer.word_to_id)}


class SparseIndex:
    """A loaded BM25 index; ``search`` may be called from several threads."""

    def __init__(self, folder: Path) -> None:
        import bm25s

        self.folder = Path(folder)
        self._retriever = bm25s.BM25.load(str(self.folder), mmap=True, show_progress=False)
        self._tokenizer = _tokenizer()
        self._tokenizer.load_vocab(str(self.folder))
        self._tokenizer.load_stopwords(str(self.folder))
        self._empty_id = self._tokenizer.word_to_id.get("")
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
