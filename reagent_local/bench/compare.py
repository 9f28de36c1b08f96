"""Per-question comparisons behind the report: backtracking effects, pairs of methods, the sign test.

All functions are pure and read records as dicts, so records written before a field
existed still work: ``backtracked`` falls back to the ``backtracks`` counts. Fixed and broken
are counted against ``answer_without_backtracking`` (the answer the same question gets with
backtracking off, exact); records written before it existed fall back to the answer held
before the first rollback, and where neither is known the question stays unknown, never
guessed. Two answers are "the same" when they normalise to the same string (the official EM
normalisation).
"""

from __future__ import annotations

from math import comb
from statistics import mean
from typing import Any, Callable, Sequence

from .metrics import best_em_f1, normalize_answer

Record = dict[str, Any]
NONE_METHOD = "reagent-none"


def same_answer(a: str, b: str) -> bool:
    """Whether two answers are equal after the official normalisation."""
    return normalize_answer(a) == normalize_answer(b)


def _scored(answer: str | None, answers: Sequence[str]) -> tuple[float | None, float | None]:
    if answer is None:
        return None, None
    em, f1 = best_em_f1(answer, answers)
    return em, round(f1, 6)


def backtracking_fields(prediction: str, answers: Sequence[str], backtracks: dict[str, int],
                        before: str | None, without: str | None = None) -> Record:
    """The backtracking fields of a record, from the final answer, the one held before the first rollback and
    the one the question gets with backtracking off."""
    backtracked = any(int(count) > 0 for count in backtracks.values())
    em_before, f1_before = _scored(before, answers)
    em_without, f1_without = _scored(without, answers)
    changed = None
    if without is not None:
        changed = not same_answer(without, prediction)
    elif before is not None:
        changed = not same_answer(before, prediction)
    elif not backtracked:
        changed = False  # nothing was rolled back, so backtracking cannot have changed the answer
    return {"backtracked": backtracked, "answer_before_backtracking": before,
            "backtracking_changed_answer": changed, "em_before": em_before, "f1_before": f1_before,
            "answer_without_backtracking": without, "em_without_backtracking": em_without,
            "f1_without_backtracking": f1_without}


def em_without(record: Record) -> float | None:
    """EM of the answer without backtracking: exact when recorded, else the answer before the first rollback."""
    exact = record.get("em_without_backtracking")
    return exact if exact is not None else record.get("em_before")


def record_backtracked(record: Record) -> bool:
    """Whether any local or global backtrack fired (read from ``backtracks`` in old records)."""
    if record.get("backtracked") is not None:
        return bool(record["backtracked"])
    return any(int(count) > 0 for count in (record.get("backtracks") or {}).values())


def has_backtracking(method: str, records: Sequence[Record]) -> bool:
    """A ReAgent setting with rollbacks on, or any method whose records show a backtrack."""
    if method.startswith("reagent-") and method != NONE_METHOD:
        return True
    return any(r["method"] == method and record_backtracked(r) for r in records)


def backtracking_effect(records: Sequence[Record]) -> Record:
    """One method's backtracking: questions where it fired, answers it changed, fixed and broken by EM (against
    the answer without backtracking), and what finding those answers cost beyond the run."""
    fired = [r for r in records if record_backtracked(r)]
    known = [r for r in fired if em_without(r) is not None]
    fixed = [r["id"] for r in known if em_without(r) == 0 and r["em"] == 1]
    broken = [r["id"] for r in known if em_without(r) == 1 and r["em"] == 0]
    costs = [r["without_backtracking_cost"] for r in records if r.get("without_backtracking_cost")]
    return {
        "questions": len(records),
        "fired": len(fired),
        "changed": sum(1 for r in fired if r.get("backtracking_changed_answer") is True),
        "unknown": len(fired) - len(known),  # fired, but the answer without it was not recorded
        "exact": sum(1 for r in fired if r.get("em_without_backtracking") is not None),
        "fixed": fixed,
        "broken": broken,
        "shadow_calls": sum(c.get("calls") or 0 for c in costs),
        "shadow_seconds": round(sum(c.get("seconds") or 0.0 for c in costs), 3),
    }


def roads_verdicts(records: Sequence[Record]) -> Record:
    """How the supervisor settled the two roads where they disagreed: did the answer it kept score better
    (F1 against the gold answers) than the one it dropped? Scored on the roads' answers, before any redo."""
    settled = [r for r in records if r.get("roads")]
    better, worse, equal, judged = [], [], [], 0
    for record in settled:
        roads = record["roads"]
        kept, dropped = (roads["chain"], roads["whole"]) if roads["winner"] == "chain" else (roads["whole"], roads["chain"])
        gain = best_em_f1(kept, record["answers"])[1] - best_em_f1(dropped, record["answers"])[1]
        (better if gain > 0 else worse if gain < 0 else equal).append(record["id"])
        judged += bool(roads.get("judged"))
    return {"settled": len(settled), "judged": judged, "better": better, "worse": worse, "equal": len(equal),
            "chain_kept": sum(1 for r in settled if r["roads"]["winner"] == "chain")}


def pairs(records: Sequence[Record], method: str, other: str) -> list[tuple[Record, Record]]:
    """(method's record, other's record) for every question both answered, in ``method``'s order."""
    theirs = {r["id"]: r for r in records if r["method"] == other}
    return [(r, theirs[r["id"]]) for r in records if r["method"] == method and r["id"] in theirs]


def against_none(records: Sequence[Record], method: str) -> Record:
    """``method`` paired with reagent-none on the same questions: changed, fixed, broken, delta F1."""
    matched = pairs(records, method, NONE_METHOD)
    return {
        "questions": len(matched),
        "changed": sum(1 for mine, none in matched if not same_answer(mine["prediction"], none["prediction"])),
        "fixed": [mine["id"] for mine, none in matched if none["em"] == 0 and mine["em"] == 1],
        "broken": [mine["id"] for mine, none in matched if none["em"] == 1 and mine["em"] == 0],
        "delta_f1": round(mean(m["f1"] - n["f1"] for m, n in matched), 6) if matched else None,
    }


def by_signal(records: Sequence[Record], method: str) -> dict[str, Record]:
    """Per conflict signal that fired in ``method``'s runs, those questions against reagent-none's: how many,
    answers changed, won and lost by F1, and the summed F1 change. A question counts under every signal it
    raised, so the rows overlap and do not add up to the total."""
    out: dict[str, Record] = {}
    for mine, none in pairs(records, method, NONE_METHOD):
        for signal in dict.fromkeys(mine.get("signals") or []):
            row = out.setdefault(signal, {"questions": 0, "changed": 0, "won": [], "lost": [], "f1_sum": 0.0})
            gain = mine["f1"] - none["f1"]
            row["questions"] += 1
            row["changed"] += not same_answer(mine["prediction"], none["prediction"])
            if gain:
                row["won" if gain > 0 else "lost"].append(mine["id"])
            row["f1_sum"] = round(row["f1_sum"] + gain, 6)
    return dict(sorted(out.items(), key=lambda item: (-item[1]["questions"], item[0])))


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign-test p-value of wins against losses (ties already dropped); 1.0 when both are 0."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(wins, losses) + 1))
    return min(1.0, 2 * tail / 2 ** n)


def duel(matched: Sequence[tuple[Record, Record]], score: Callable[[Record], float]) -> Record:
    """Wins, losses and ties by ``score`` over paired records, with the ids won and lost and the sign test."""
    won = [mine["id"] for mine, theirs in matched if score(mine) > score(theirs)]
    lost = [mine["id"] for mine, theirs in matched if score(mine) < score(theirs)]
    return {"wins": len(won), "losses": len(lost), "ties": len(matched) - len(won) - len(lost),
            "p_value": round(sign_test(len(won), len(lost)), 6), "won": won, "lost": lost}


def head_to_head(records: Sequence[Record], method: str, other: str) -> Record:
    """``method`` against ``other`` on the questions both answered, by per-question F1 and by EM."""
    matched = pairs(records, method, other)
    return {"questions": len(matched), "f1": duel(matched, lambda r: r["f1"]), "em": duel(matched, lambda r: r["em"])}


def duel_pairs(methods: Sequence[str]) -> list[tuple[str, str]]:
    """(ReAgent method, other method) for every ReAgent method against every other; each pair once."""
    out = []
    for i, method in enumerate(methods):
        if not method.startswith("reagent-"):
            continue
        for j, other in enumerate(methods):
            # two ReAgent settings meet once, in the order the run lists them
            if other != method and not (other.startswith("reagent-") and j < i):
                out.append((method, other))
    return out
