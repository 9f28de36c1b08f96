"""Reciprocal-rank fusion of ranked lists (Cormack et al., 2009)."""

from __future__ import annotations

from typing import Hashable, Sequence, TypeVar

K = TypeVar("K", bound=Hashable)


def rrf(rankings: Sequence[Sequence[K]], k: int = 60) -> list[tuple[K, float]]:
    """Fuse ranked lists of keys: score(d) = sum over lists of 1 / (k + rank), rank from 1.

    Returns (key, score) pairs, best first; ties keep the order in which keys were
    first seen (list by list), so the result is deterministic.
    """
    if k < 0:
        raise ValueError("rrf k must be non-negative")
    scores: dict[K, float] = {}
    for ranking in rankings:
        seen: set[K] = set()
        for rank, key in enumerate(ranking, 1):
            if key in seen:  # a repeated key keeps its best rank in that list
                continue
            seen.add(key)
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    order = {key: i for i, key in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))
