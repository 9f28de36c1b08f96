"""Official answer metrics (HotpotQA's EM and token F1) and supporting-passage scores.

The answer metrics follow the official HotpotQA evaluation script: normalise
(lowercase, drop punctuation, drop the articles a/an/the, collapse whitespace), then
exact match or token F1. F1 is 0 when either side normalises to "yes", "no" or
"noanswer" and the two differ. For 2WikiMultiHopQA and MuSiQue, the score of a
prediction is the best over the gold answer and its aliases.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Iterable, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)
_SPECIAL = ("yes", "no", "noanswer")


def normalize_answer(text: str) -> str:
    """HotpotQA normalisation: lowercase, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when both normalise to the same string, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_precision_recall(prediction: str, gold: str) -> tuple[float, float, float]:
    """Token (F1, precision, recall) after normalisation, with the yes/no/noanswer rule."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    # A yes/no (or noanswer) on either side scores only when both sides are identical.
    if (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
        return 0.0, 0.0, 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    same = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if same == 0:
        return 0.0, 0.0, 0.0
    precision = same / len(pred_tokens)
    recall = same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall), precision, recall


def f1_score(prediction: str, gold: str) -> float:
    """Token F1 of the official script."""
    return f1_precision_recall(prediction, gold)[0]


def best_em_f1(prediction: str, answers: Sequence[str]) -> tuple[float, float]:
    """(EM, F1), each the best over the gold answer and its aliases."""
    if not answers:
        raise ValueError("a question needs at least one gold answer")
    return (
        max(exact_match(prediction, gold) for gold in answers),
        max(f1_score(prediction, gold) for gold in answers),
    )


def _clean(text: str) -> str:
    return " ".join(text.split())


def passage_supports(title: str, text: str, gold_title: str, gold_text: str | None) -> bool:
    """Whether a cited passage is the gold paragraph (by title, and by text when given).

    Text matches when one contains the other after collapsing whitespace, so a
    passage that is a chunk of the gold paragraph (or the paragraph cut short) counts; so does a
    passage as a prompt showed it: cut with a trailing "...", or focused into pieces joined by "…".
    """
    if title != gold_title:
        return False
    if gold_text is None:
        return True
    mine, gold = _clean(text), _clean(gold_text)
    if mine and (mine in gold or gold in mine):
        return True
    pieces = [p.strip().removesuffix("...").strip() for p in mine.split("…")]
    pieces = [p for p in pieces if p]
    return bool(pieces) and all(p in gold for p in pieces)


def support_scores(
    cited: Iterable[tuple[str, str]],
    gold: Iterable[tuple[str, str | None]],
) -> tuple[float | None, float | None]:
    """(precision, recall) of cited (title, text) passages against gold (title, text or None).

    Precision is the share of cited passages that match some gold paragraph (None
    when nothing was cited); recall is the share of gold paragraphs matched by some
    cited passage (None when the question has no gold support).
    """
    cited, gold = list(cited), list(gold)
    precision = None
    if cited:
        hits = sum(any(passage_supports(t, x, gt, gx) for gt, gx in gold) for t, x in cited)
        precision = hits / len(cited)
    recall = None
    if gold:
        found = sum(any(passage_supports(t, x, gt, gx) for t, x in cited) for gt, gx in gold)
        recall = found / len(gold)
    return precision, recall
