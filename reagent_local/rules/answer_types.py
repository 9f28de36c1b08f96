"""Check rules: does an answer fit its question? (it is not a name the question itself gives)

Each rule returns why the answer does not fit, or None. The verifier fails such an answer
(it stands only when no sound one was found, uncertain), the two roads weigh it as a
problem of the road that gave it, and the whole-question fallback refuses one.
"""

from __future__ import annotations

from ..text import is_yes_no_value
from .registry import RuleSet, rule
from .stages import CHECK
from .shapes import either_or_options, names_from_question


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


def answer_type_problem(question: str, answer: str, rules: RuleSet, *, step: int | None = None,
                        fire: bool = True) -> str | None:
    """Why the answer's type does not fit the question (the first enabled check rule that objects), or None.

    ``fire=False`` only looks (the trust score reads the fit without the rule counting as having changed anything).
    """
    found = rules.first(CHECK, question, answer, step=step, record=fire)
    return found.value if found else None
