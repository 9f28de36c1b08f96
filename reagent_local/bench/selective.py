"""How well a trust score sorts right answers from wrong ones: AUROC and selective accuracy.

- **AUROC**: the chance that a right answer (EM 1) scores above a wrong one, ties counting half
  (the Mann-Whitney statistic); None when all answers are right or all wrong.
- **Selective accuracy**: the EM of the answers marked trusted, and their **coverage** (the share
  of questions marked trusted).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def auroc(scores: Sequence[float], labels: Sequence[float]) -> float | None:
    """Area under the ROC curve of ``scores`` for ``labels`` (1 right, 0 wrong); ties count half."""
    if len(scores) != len(labels):
        raise ValueError("auroc needs one label per score")
    pairs = sorted(zip(scores, labels), key=lambda p: p[0])
    positives = sum(1 for _, y in pairs if y)
    negatives = len(pairs) - positives
    if not positives or not negatives:
        return None
    rank_sum, i = 0.0, 0
    while i < len(pairs):  # average ranks over runs of tied scores
        j = i
        while j < len(pairs) and pairs[j][0] == pairs[i][0]:
            j += 1
        mid = (i + 1 + j) / 2  # the mean of ranks i+1 .. j
        rank_sum += mid * sum(1 for _, y in pairs[i:j] if y)
        i = j
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def selective(scores: Sequence[float], labels: Sequence[float], threshold: float) -> dict[str, Any]:
    """The answers scored at least ``threshold``: how many, their coverage and their EM (None when none)."""
    kept = [y for s, y in zip(scores, labels) if s >= threshold]
    n = len(labels)
    return {"n": n, "trusted": len(kept), "coverage": round(len(kept) / n, 4) if n else None,
            "em": round(sum(kept) / len(kept), 4) if kept else None}


def trust_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Selective accuracy and AUROC of the ``trust`` the records carry (None when none carries a score):
    questions scored, trusted, coverage, EM of the trusted, EM of the rest, AUROC, answers marked likely wrong
    and their EM, answers not found in the index."""
    scored = [r for r in records if not r.get("error") and (r.get("trust") or {}).get("probability") is not None]
    if not scored:
        return None
    probs = [float(r["trust"]["probability"]) for r in scored]
    ems = [float(r["em"]) for r in scored]
    trusted = [r for r in scored if r["trust"].get("trusted")]
    rest = [r for r in scored if not r["trust"].get("trusted")]
    doubt = [r for r in scored if r["trust"].get("doubt")]
    area = auroc(probs, ems)

    def em(group: Sequence[Mapping[str, Any]]) -> float | None:
        return round(sum(float(r["em"]) for r in group) / len(group), 4) if group else None

    return {"n": len(scored), "trusted": len(trusted), "coverage": round(len(trusted) / len(scored), 4),
            "em_trusted": em(trusted), "em_rest": em(rest), "auroc": None if area is None else round(area, 4),
            "likely_wrong": len(doubt), "em_likely_wrong": em(doubt),
            "not_found": sum(1 for r in scored if not r["trust"].get("grounded", True))}
