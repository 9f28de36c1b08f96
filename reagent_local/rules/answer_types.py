"""Check rules: does an answer's type fit its question? (a date for 'when', yes/no for 'is ...?')

Each rule returns why the answer does not fit, or None. The verifier rejects such an
answer (a local backtrack), the controller never keeps one at the depth limit, and the
whole-question fallback refuses one.
"""

from __future__ import annotations

import re

from ..dates import is_date_or_number
from ..text import is_yes_no_value
from .registry import RuleSet, rule
from .stages import CHECK, FINAL
from .shapes import (asks_number, asks_place_or_name, either_or_options, is_yes_no_question, matching_option,
                     names_from_question)

_NUMBER_WORD = re.compile(r"\b(one|two|three|four|five|six|seven|eight|nine|ten|hundred|thousand|million|billion"
                          r"|century)\b", re.I)


@rule("yes-no-answer", "check")
def yes_no_mismatch(question: str, answer: str) -> str | None:
    """A yes/no question takes 'yes' or 'no', and only a yes/no question does."""
    is_yes_no = is_yes_no_value(answer)
    if is_yes_no_question(question) and not is_yes_no:
        return f"the question asks yes or no but the answer is {answer!r}"
    if is_yes_no and not is_yes_no_question(question):
        return "the question is not a yes/no question"
    return None


@rule("number-answer", "check")
def number_missing(question: str, answer: str) -> str | None:
    """A 'when' / 'how many' / 'what is the date of' question takes an answer holding a date or a number."""
    if asks_number(question) and not any(ch.isdigit() for ch in answer) and not _NUMBER_WORD.search(answer):
        return f"the question asks for a date or number but the answer {answer!r} has none"
    return None


@rule("place-or-name-answer", "check")
def only_date_or_number(question: str, answer: str) -> str | None:
    """A 'where' / 'who' question is not answered by a date or number alone."""
    if asks_place_or_name(question) and is_date_or_number(answer):
        return f"the question asks for a place or a name but the answer {answer!r} is a date or number"
    return None


@rule("not-in-question", "check")
def echoes_the_question(question: str, answer: str) -> str | None:
    """An answer is not a name the question itself gives (but for the options of 'A or B?' and yes/no)."""
    # a question names what it asks about, not what it asks for: on the tune questions every answer that
    # repeated one of the question's names was wrong, on every method
    if is_yes_no_value(answer) or either_or_options(question) is not None:
        return None
    if names_from_question(question, answer):
        return f"the answer {answer!r} is a name the question itself gives"
    return None


@rule("option-answer", "final")
def not_an_option(question: str, answer: str) -> str | None:
    """An 'A or B?' question is answered with one of its options."""
    opts = either_or_options(question)
    if opts is not None and matching_option(answer, opts) is None:
        return f"the question asks to choose {opts[0]!r} or {opts[1]!r} but the answer is {answer!r}"
    return None


def answer_type_problem(question: str, answer: str, rules: RuleSet, *, step: int | None = None,
                        final: bool = False, fire: bool = True) -> str | None:
    """Why the answer's type does not fit the question (the first enabled check rule that objects), or None.

    ``final``: the answer is to the whole question, so the ``final`` rules apply too. ``fire=False`` only
    looks (the trust score reads the fit without the rule counting as having changed anything).
    """
    found = rules.first((CHECK, FINAL) if final else (CHECK,), question, answer, step=step, record=fire)
    return found.value if found else None
