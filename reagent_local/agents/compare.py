"""Deterministic answers for comparison questions, before asking the model to combine facts.

A 1.5B model often reads "1981" and "1962" and still names the later film as the
first; comparing the numbers in code is exact. Only clear cases are decided here:
two options named in the question ("..., A or B?"), one step about each (or a chain
of steps starting from each: "Who directed A?" then "When was #1 born?"), a number or
date in each chain's last answer, and a comparison word that says which end wins.
Anything else returns None and the assembler asks the model.
"""

from __future__ import annotations

import re
from typing import Sequence

from .evidence import normalize

_OPTIONS = re.compile(r",?\s*([^,?]+?)\s+or\s+([^,?]+?)\s*\??$", re.I)
_YEAR = re.compile(r"\b(1\d{3}|20\d{2})\b")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_SMALLER_WINS = re.compile(r"\b(first|earlier|earliest|older|oldest|before|fewer|fewest|less|least|smaller|smallest|lower|lowest|shorter|shortest)\b", re.I)
_LARGER_WINS = re.compile(r"\b(later|latest|last|more recent|most recent|newer|newest|younger|youngest|after|more|most|larger|largest|bigger|biggest|higher|highest|longer|longest|taller|tallest)\b", re.I)
_BOTH = re.compile(r"\b(both|all|each)\b", re.I)
_MONTHS = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december".split(), 1)}
_ISO_DATE = re.compile(r"\b(1\d{3}|20\d{2})-(\d{1,2})-(\d{1,2})\b")
_DAY = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\b")


_OPTIONS_AFTER_COMMA = re.compile(r",\s*([^,]+?),?\s+or\s+(.+?)\s*\?*$", re.I)  # "..., A, or B?" too


def options(question: str) -> tuple[str, str] | None:
    """The two options of an 'A or B?' question, as written (B may contain commas: 'X, Inc.')."""
    text = question.strip()
    match = _OPTIONS_AFTER_COMMA.search(text) or _OPTIONS.search(text)
    if not match:
        return None
    first = re.split(r"\b(?:first|earlier|older|later|younger|more|larger|bigger|higher|longer|,)\b\s*", match.group(1))[-1]
    return first.strip(" ,"), match.group(2).strip(" ,?")


def date_key(answer: str) -> tuple[int, int, int] | None:
    """(year, month, day) of a date answer, 0 where a part is not given; None without a year.

    Reads "12 March 1950", "March 12, 1950", "1950-03-12", "March 1950" and "1950".
    """
    iso = _ISO_DATE.search(answer)
    if iso:
        return int(iso.group(1)), int(iso.group(2)), int(iso.group(3))
    year = _YEAR.search(answer)
    if not year:
        return None
    words = re.findall(r"[a-z]+", answer.lower())
    month = next((_MONTHS[w] for w in words if w in _MONTHS), 0)
    rest = answer[: year.start()] + " " + answer[year.end():]
    day = next((int(d) for d in _DAY.findall(rest) if 1 <= int(d) <= 31), 0) if month else 0
    return int(year.group(1)), month, day


def _ordered(a: str, b: str, by_year: bool) -> int | None:
    """-1 when a is smaller, 1 when larger, None when equal or not comparable."""
    if by_year:
        ka, kb = date_key(a), date_key(b)
        if ka is None or kb is None:
            return None
        if ka[0] != kb[0]:
            return -1 if ka[0] < kb[0] else 1
        if 0 in ka[1:] or 0 in kb[1:] or ka == kb:
            return None  # the same year and a missing month or day: not clear
        return -1 if ka < kb else 1
    na, nb = _NUMBER.findall(a), _NUMBER.findall(b)
    if len(na) != 1 or len(nb) != 1:
        return None
    va, vb = float(na[0].replace(",", "")), float(nb[0].replace(",", ""))
    return None if va == vb else (-1 if va < vb else 1)


def _step_for(option: str, questions: Sequence[str]) -> int | None:
    words = set(normalize(option).split())
    scores = [len(words & set(normalize(q).split())) for q in questions]
    best = max(scores, default=0)
    return scores.index(best) if best and scores.count(best) == 1 else None


def _chain_end(root: int, depends_on: Sequence[Sequence[int]]) -> int | None:
    """The last step of the chain that starts at ``root`` (each link the only step using the previous)."""
    current = root
    while True:
        users = [i for i, deps in enumerate(depends_on) if current in deps]
        if not users:
            return current
        if len(users) > 1 or len(depends_on[users[0]]) > 1:
            return None  # branches or joins: not a clear chain
        current = users[0]


def compare(question: str, step_questions: Sequence[str], answers: Sequence[str],
            depends_on: Sequence[Sequence[int]] | None = None) -> str | None:
    """The winning option of an 'A or B?' comparison, or None when it is not a clear case.

    Each option is matched to the independent step that names it; the value compared is
    the answer at the end of the chain of steps that follows from it.
    """
    opts = options(question)
    deps = list(depends_on) if depends_on is not None else [()] * len(step_questions)
    if opts is None or len(step_questions) < 2 or len(deps) != len(step_questions):
        return None
    smaller, larger = bool(_SMALLER_WINS.search(question)), bool(_LARGER_WINS.search(question))
    if smaller == larger:
        return None
    roots = [i for i, d in enumerate(deps) if not d]
    root_of = [_step_for(o, [step_questions[i] for i in roots]) for o in opts]
    if None in root_of or root_of[0] == root_of[1]:
        return None
    ends = [_chain_end(roots[r], deps) for r in root_of]  # type: ignore[index]
    if None in ends or ends[0] == ends[1]:
        return None
    asked = question + " " + " ".join(step_questions[i] for i in ends)  # type: ignore[index]
    by_year = bool(re.search(r"\b(when|year|date|first|earlier|later|older|younger|founded|born|died|released)\b", asked, re.I))
    order = _ordered(answers[ends[0]], answers[ends[1]], by_year)  # type: ignore[index]
    if order is None:
        return None
    pick_first = (order < 0) if smaller else (order > 0)
    return opts[0] if pick_first else opts[1]


def both_yes(question: str, answers: Sequence[str]) -> str | None:
    """'Are both A and B ...?' answered by yes/no steps: yes only when every step says yes."""
    norm = [normalize(a) for a in answers]
    if not _BOTH.search(question) or not norm or any(a not in {"yes", "no"} for a in norm):
        return None
    return "yes" if all(a == "yes" for a in norm) else "no"


_SAME = re.compile(r"\bsame\s+(\w+)", re.I)


def same_answer(question: str, step_questions: Sequence[str], answers: Sequence[str],
                depends_on: Sequence[Sequence[int]] | None = None) -> str | None:
    """'Are A and B in the same country?': yes when the two final answers name the same thing.

    The two answers are those of the steps no other step uses (the ends of the two
    chains), and both of those steps must ask for the compared property (the word after
    "same": a plan that stopped at the directors cannot say whether their countries
    match). One answer's words containing the other's counts as the same ("Oslo" /
    "Oslo, Norway"). None when any of this does not hold.
    """
    match = _SAME.search(question)
    if not match:
        return None
    deps = list(depends_on) if depends_on is not None else [()] * len(answers)
    ends = [i for i in range(len(answers)) if not any(i in d for d in deps)]
    if len(ends) != 2:
        return None
    prop = normalize(match.group(1))
    if not all(prop in normalize(step_questions[i]).split() for i in ends):
        return None
    a, b = (set(normalize(answers[i]).split()) for i in ends)
    if not a or not b or {"unknown"} & (a | b) or a <= {"yes", "no"} or b <= {"yes", "no"}:
        return None
    return "yes" if a <= b or b <= a else "no"


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
