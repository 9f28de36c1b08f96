"""Two sets of answers to the same questions, compared question by question.

Records are paired on (dataset, question id). Differences are A - B: the mean F1 and EM
differences with a paired bootstrap 95% interval (``stats.bootstrap_interval``), questions
won / lost / tied by F1 with the exact two-sided sign test, and answers fixed (wrong in B,
right in A) and broken (right in B, wrong in A) by EM; the same for every dataset and every
question type. Questions answered on one side only are listed and left out, never dropped
silently. Pure functions over record dicts.
"""

from __future__ import annotations

from statistics import mean
from typing import Any, Iterable, Sequence

from ..errors import BenchRunError
from .compare import sign_test
from .stats import RESAMPLES, SEED, bootstrap_interval

Record = dict[str, Any]
Pair = tuple[Record, Record]


def question_key(record: Record) -> tuple[str, str]:
    """What pairs two records: the dataset and the question id."""
    return str(record.get("dataset") or ""), str(record["id"])


def by_question(records: Iterable[Record], side: str) -> dict[tuple[str, str], Record]:
    """One side's records by question; a question answered twice on one side is an error."""
    out: dict[tuple[str, str], Record] = {}
    for record in records:
        key = question_key(record)
        if key in out:
            raise BenchRunError(f"side {side} answers question {key[1]!r} ({key[0] or 'no dataset'}) twice",
                                hint="give each side one record per question: one method, folders that do not overlap")
        out[key] = record
    return out


def pair_records(a: Iterable[Record], b: Iterable[Record]) -> tuple[list[Pair], list[str], list[str]]:
    """(pairs in A's order, ids only in A, ids only in B)."""
    mine, theirs = by_question(a, "A"), by_question(b, "B")
    pairs = [(record, theirs[key]) for key, record in mine.items() if key in theirs]
    return pairs, [key[1] for key in mine if key not in theirs], [key[1] for key in theirs if key not in mine]


def paired_stats(pairs: Sequence[Pair], *, resamples: int = RESAMPLES, seed: int = SEED) -> Record:
    """Means, A - B differences with bootstrap intervals, won/lost/tied by F1 with the sign test, fixed/broken by EM."""
    f1 = [float(a["f1"]) - float(b["f1"]) for a, b in pairs]
    em = [float(a["em"]) - float(b["em"]) for a, b in pairs]
    won = [a["id"] for (a, _), d in zip(pairs, f1) if d > 0]
    lost = [a["id"] for (a, _), d in zip(pairs, f1) if d < 0]
    fixed = [a["id"] for a, b in pairs if b["em"] < 1 <= a["em"]]
    broken = [a["id"] for a, b in pairs if a["em"] < 1 <= b["em"]]

    def interval(values: list[float]) -> list[float] | None:
        bounds = bootstrap_interval(values, resamples=resamples, seed=seed)
        return [round(bounds[0], 6), round(bounds[1], 6)] if bounds else None

    def avg(values: Iterable[float]) -> float | None:
        values = list(values)
        return round(mean(values), 6) if values else None

    return {
        "questions": len(pairs),
        "f1_a": avg(a["f1"] for a, _ in pairs), "f1_b": avg(b["f1"] for _, b in pairs),
        "f1_diff": avg(f1), "f1_interval": interval(f1),
        "em_a": avg(a["em"] for a, _ in pairs), "em_b": avg(b["em"] for _, b in pairs),
        "em_diff": avg(em), "em_interval": interval(em),
        "won": won, "lost": lost, "tied": len(pairs) - len(won) - len(lost),
        "p_value": round(sign_test(len(won), len(lost)), 6),
        "fixed": fixed, "broken": broken,
    }


def _groups(pairs: Sequence[Pair], name: Any) -> dict[str, list[Pair]]:
    out: dict[str, list[Pair]] = {}
    for pair in pairs:
        out.setdefault(name(pair[0]), []).append(pair)
    return dict(sorted(out.items()))


def compare_records(a: Sequence[Record], b: Sequence[Record], *, resamples: int = RESAMPLES,
                    seed: int = SEED) -> Record:
    """A against B on the questions both answered: overall, by dataset and by question type."""
    pairs, only_a, only_b = pair_records(a, b)
    stats = lambda group: paired_stats(group, resamples=resamples, seed=seed)  # noqa: E731
    return {
        "questions": len(pairs), "only_a": only_a, "only_b": only_b,
        "bootstrap": {"resamples": resamples, "seed": seed, "level": 0.95},
        "all": stats(pairs),
        "by_dataset": {name: stats(group) for name, group in
                       _groups(pairs, lambda r: str(r.get("dataset") or "-")).items()},
        "by_type": {name: stats(group) for name, group in
                    _groups(pairs, lambda r: f"{r.get('dataset') or '-'}: {r.get('type') or '-'}").items()},
    }
