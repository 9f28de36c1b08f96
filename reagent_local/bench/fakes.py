"""An in-memory keyword retriever for tests and quick trials without a built index.

It has ``Index.search``'s signature and scores passages by how many distinct query
words they contain (title included), ties broken by corpus order. It is a stand-in,
not a baseline: real runs search the FAISS + BM25 index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from ..retrieval.passages import Passage

_WORD = re.compile(r"\w+")
_STOP = frozenset("a an and are as at be by did do does for from in is it of on or the to was were what which who whom with".split())


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


@dataclass(frozen=True)
class KeywordHit:
    """A search result: the passage, its score and its 1-based rank."""

    passage: Passage
    score: float
    rank: int


class KeywordRetriever:
    """Word-overlap search over a list of (title, text) paragraphs, one passage each."""

    def __init__(self, paragraphs: Iterable[tuple[str, str]]) -> None:
        self.passages = [Passage(f"{title}#{i}", title, text) for i, (title, text) in enumerate(paragraphs)]
        self._words = [_words(f"{p.title} {p.text}") for p in self.passages]
        self.queries: list[str] = []

    def search(self, query: str, k: int = 5, mode: str = "hybrid") -> list[KeywordHit]:
        """The k passages sharing the most words with the query."""
        self.queries.append(query)
        wanted = _words(query)
        scored = sorted(
            ((len(wanted & words), i) for i, words in enumerate(self._words)),
            key=lambda pair: (-pair[0], pair[1]),
        )
        return [KeywordHit(self.passages[i], float(score), rank) for rank, (score, i) in enumerate(scored[:k], 1)]
