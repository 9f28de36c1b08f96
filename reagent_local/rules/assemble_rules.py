"""Assemble rules: final answers decided in code from the steps' answers, before asking the model.

A 1.5B model often reads "1981" and "1962" and still names the later film as the
first; comparing in code is exact. Every rule decides only clear cases and returns
None otherwise; the assembler tries the enabled rules in registry order and asks the
model when none decides.
"""

from __future__ import annotations

from typing import Sequence

from ..dates import date_key, numbers_in
from ..core.plan import StepLike, is_chain, local_dependencies
from ..text import YES_NO, normalize
from .registry import rule
from .shapes import (asks_all, compares_dates, comparison_direction, either_or_options, is_yes_no_question,
                     matching_option)


@rule("chain-last-step", "assemble")
def chain_answer(question: str, steps: Sequence[StepLike]) -> str | None:
    """A chain (every step feeds the last) is answered by its last step; an 'A or B?' one only if it names an option."""
    if is_yes_no_question(question) or not is_chain(steps):
        return None
    opts = either_or_options(question)
    if opts is not None and matching_option(steps[-1].answer, opts) is None:
        return None
    return steps[-1].answer


@rule("both-yes", "assemble")
def both_yes(question: str, steps: Sequence[StepLike]) -> str | None:
    """'Are both A and B ...?' answered by yes/no steps: yes only when every step says yes."""
    norm = [normalize(s.answer) for s in steps]
    if not is_yes_no_question(question) or not asks_all(question) or not norm \
            or any(a not in YES_NO for a in norm):
        return None
    return "yes" if all(a == "yes" for a in norm) else "no"


def _ordered(a: str, b: str, by_date: bool) -> int | None:
    """-1 when a is smaller, 1 when larger, None when equal or not comparable."""
    if by_date:
        ka, kb = date_key(a), date_key(b)
        if ka is None or kb is None:
            return None
        if ka[0] != kb[0]:
            return -1 if ka[0] < kb[0] else 1
        if 0 in ka[1:] or 0 in kb[1:] or ka == kb:
            return None  # the same year and a missing month or day: not clear
        return -1 if ka < kb else 1
    na, nb = numbers_in(a), numbers_in(b)
    if len(na) != 1 or len(nb) != 1:
        return None
    va, vb = na[0], nb[0]
    return None if va == vb else (-1 if va < vb else 1)


def _step_naming(option: str, questions: Sequence[str]) -> int | None:
    """The one question sharing the most words with the option (None on a tie or no overlap)."""
    words = set(normalize(option).split())
    scores = [len(words & set(normalize(q).split())) for q in questions]
    best = max(scores, default=0)
    return scores.index(best) if best and scores.count(best) == 1 else None


def _chain_end(root: int, deps: Sequence[Sequence[int]]) -> int | None:
    """The last step of the chain that starts at ``root`` (each link the only step using the previous)."""
    current = root
    while True:
        users = [i for i, d in enumerate(deps) if current in d]
        if not users:
            return current
        if len(users) > 1 or len(deps[users[0]]) > 1:
            return None  # branches or joins: not a clear chain
        current = users[0]


@rule("compare-options", "assemble")
def compare_options(question: str, steps: Sequence[StepLike]) -> str | None:
    """'Which is older, A or B?': the winning option, comparing each option's chain-end date or number in code.

    Each option is matched to the independent step that names it; the value compared
    is the answer at the end of the chain that follows from it ("Who directed A?" then
    "When did #1 die?"). 'first', 'older', 'fewer', 'least' pick the smaller value.
    """
    opts, direction = either_or_options(question), comparison_direction(question)
    if opts is None or direction is None or len(steps) < 2:
        return None
    deps = local_dependencies(steps)
    roots = [i for i, d in enumerate(deps) if not d]
    root_of = [_step_naming(o, [steps[i].question for i in roots]) for o in opts]
    if None in root_of or root_of[0] == root_of[1]:
        return None
    ends = [_chain_end(roots[r], deps) for r in root_of]  # type: ignore[index]
    if None in ends or ends[0] == ends[1]:
        return None
    asked = question + " " + " ".join(steps[i].question for i in ends)  # type: ignore[union-attr]
    order = _ordered(steps[ends[0]].answer, steps[ends[1]].answer, compares_dates(asked))  # type: ignore[index]
    if order is None:
        return None
    pick_first = (order < 0) if direction == "smaller" else (order > 0)
    return opts[0] if pick_first else opts[1]


@rule("option-grammar", "constrain")
def grammar_options(question: str, steps: Sequence[StepLike]) -> tuple[str, str] | None:
    """When the model must answer an 'A or B?' question, its grammar allows only A or B."""
    opts = either_or_options(question)
    return opts if opts is not None and len(set(opts)) == 2 else None
