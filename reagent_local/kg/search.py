"""Matching question text to graph entities, and ranking triples by relevance to a question."""

from __future__ import annotations

import re
from typing import Sequence

from ..text import fold
from .relations import QUESTION_CUES, WHEN_RELATIONS, WHERE_RELATIONS, is_canonical
from .triples import Triple

MAX_TITLE_TOKENS = 10
_STOPWORDS = frozenset(
    "a an the of in on at to for by with from and or is are was were be been what which who whom "
    "whose when where why how did does do it its this that these those as his her their he she they "
    "i you we us our me my one not no yes many much".split()
)


def question_ngrams(text: str) -> list[tuple[str, tuple[int, int]]]:
    """Every run of up to MAX_TITLE_TOKENS folded tokens, with its token span; stopword-only runs skipped."""
    tokens = fold(text).split()
    spans = []
    for start in range(len(tokens)):
        for end in range(start + 1, min(len(tokens), start + MAX_TITLE_TOKENS) + 1):
            words = tokens[start:end]
            if all(w in _STOPWORDS for w in words):
                continue
            spans.append((" ".join(words), (start, end)))
    return spans


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _question_words(question: str) -> set[str]:
    words = {w for w in fold(question).split() if w not in _STOPWORDS}
    return words | {_stem(w) for w in words}


def relation_score(question: str, triple: Triple) -> float:
    """How strongly the question asks for this triple's relation (0 when not at all)."""
    folded = fold(question)
    words = _question_words(question)
    score = 0.0
    cued: set[str] = set()
    for word in words:
        cued.update(QUESTION_CUES.get(word, ()))
    if triple.relation in cued:
        score += 3.0
    relation_words = {_stem(w) for w in re.split(r"[_\W]+", triple.relation) if w and w not in _STOPWORDS}
    key_words = {_stem(w) for w in fold(triple.raw_key).split() if w not in _STOPWORDS}
    score += 2.0 * len(relation_words & words) + 0.5 * len((key_words - relation_words) & words)
    if score > 0:
        asks_when = folded.startswith("when") or " when " in f" {folded} " or "what year" in folded
        asks_where = folded.startswith("where") or " where " in f" {folded} "
        if asks_when and (triple.relation in WHEN_RELATIONS or triple.value_date):
            score += 1.5
        if asks_where and triple.relation in WHERE_RELATIONS:
            score += 1.5
        if "how many" in folded and triple.value_number is not None:
            score += 0.5
    if is_canonical(triple.relation):
        score += 0.2
    return score


def rank_triples(
    question: str,
    triples: Sequence[Triple],
    entities: Sequence[str],
    *,
    reverse: Sequence[Triple] = (),
) -> list[Triple]:
    """Triples sorted by relation relevance, then entity match order, then infobox order.

    ``triples`` are about the question's entities; ``reverse`` triples merely have a
    value named in the question and are kept only when their relation is asked for.
    """
    order = {subject: i for i, subject in enumerate(entities)}
    scored = [(-relation_score(question, t), 0, order.get(t.subject, len(order)), i, t) for i, t in enumerate(triples)]
    for i, t in enumerate(reverse):
        score = relation_score(question, t)
        if score >= 1.0:  # the question asks for this relation, not just any fact with that value
            scored.append((-score, 1, len(order), i, t))
    scored.sort(key=lambda s: s[:4])
    return [t for *_, t in scored]
