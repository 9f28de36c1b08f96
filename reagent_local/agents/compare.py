"""Deterministic answers for comparison questions, before asking the model to combine facts.

A 1.5B model often reads "1981" and "1962" and still names the later film as the
first; comparing the numbers in code is exact. Only clear cases are decided here:
two options named in the question ("..., A or B?"), one step about each, a number or
year in each answer, and a comparison word that says which end wins. Anything else
returns None and the assembler asks the model.
"""

from __future__ import annotations

import re
from typing import Sequence

from .evidence import normalize

_OPTIONS = re.compile(r",?\s*([^,?]+?)\s+or\s+([^,?]+?)\s*\??$", re.I)
_YEAR = re.compile(r"\b(1\d{3}|20\d{2})\b")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_SMALLER_WINS = re.compile(r"\b(first|earlier|earliest|older|oldest|before|fewer|less|smaller|lower|shorter)\b", re.I)
_LARGER_WINS = re.compile(r"\b(later|latest|last|more recent|most recent|newer|newest|younger|youngest|after|more|larger|bigger|higher|longer|taller)\b", re.I)
_BOTH = re.compile(r"\b(both|all|each)\b", re.I)


_OPTIONS_AFTER_COMMA = re.compile(r",\s*([^,]+?)\s+or\s+(.+?)\s*\?*$", re.I)


def options(question: str) -> tuple[str, str] | None:
    """The two options of an 'A or B?' question, as written (B may contain commas: 'X, Inc.')."""
    text = question.strip()
    match = _OPTIONS_AFTER_COMMA.search(text) or _OPTIONS.search(text)
    if not match:
        return None
    first = re.split(r"\b(?:first|earlier|older|later|younger|more|larger|bigger|higher|longer|,)\b\s*", match.group(1))[-1]
    return first.strip(" ,"), match.group(2).strip(" ,?")


def _value(answer: str, by_year: bool) -> float | None:
    found = _YEAR.findall(answer) if by_year else _NUMBER.findall(answer)
    if len(found) != 1 and not (by_year and found):
        return None
    try:
        return float(found[0].replace(",", ""))
    except (IndexError, ValueError):
        return None


def _step_for(option: str, questions: Sequence[str]) -> int | None:
    words = set(normalize(option).split())
    scores = [len(words & set(normalize(q).split())) for q in questions]
    best = max(scores, default=0)
    return scores.index(best) if best and scores.count(best) == 1 else None


def compare(question: str, step_questions: Sequence[str], answers: Sequence[str]) -> str | None:
    """The winning option of an 'A or B?' comparison, or None when it is not a clear case."""
    opts = options(question)
    if opts is None or len(step_questions) != 2:
        return None
    smaller, larger = bool(_SMALLER_WINS.search(question)), bool(_LARGER_WINS.search(question))
    if smaller == larger:
        return None
    order = [_step_for(o, step_questions) for o in opts]
    if None in order or order[0] == order[1]:
        return None
    by_year = bool(re.search(r"\b(when|year|first|earlier|later|older|younger|founded|born|released)\b", question + " " + " ".join(step_questions), re.I))
    values = [_value(answers[i], by_year) for i in order]
    if None in values or values[0] == values[1]:
        return None
    pick_first = (values[0] < values[1]) if smaller else (values[0] > values[1])
    return opts[0] if pick_first else opts[1]


def both_yes(question: str, answers: Sequence[str]) -> str | None:
    """'Are both A and B ...?' answered by yes/no steps: yes only when every step says yes."""
    norm = [normalize(a) for a in answers]
    if not _BOTH.search(question) or not norm or any(a not in {"yes", "no"} for a in norm):
        return None
    return "yes" if all(a == "yes" for a in norm) else "no"


def matching_option(answer: str, opts: tuple[str, str]) -> str | None:
    """The option an answer names (normalised containment either way), or None."""
    norm = normalize(answer)
    if not norm:
        return None
    for option in opts:
        other = normalize(option)
        if other and (other == norm or other in norm or norm in other):
            return option
    return None
