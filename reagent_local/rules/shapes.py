"""Reading the shape of a question: yes/no, either-or options, comparison direction, "both".

Pure parsing helpers shared by the rules; none of them decides anything by itself.
"""

from __future__ import annotations

import re

from ..text import normalize

_YES_NO_START = re.compile(r"^(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b", re.I)
_OPTIONS = re.compile(r",?\s*([^,?]+?)\s+or\s+([^,?]+?)\s*\??$", re.I)
_OPTIONS_AFTER_COMMA = re.compile(r",\s*([^,]+?),?\s+or\s+(.+?)\s*\?*$", re.I)  # "..., A, or B?" too
_OPTION_LEAD = re.compile(r"\b(?:first|earlier|older|later|younger|more|larger|bigger|higher|longer|,)\b\s*")
_SMALLER_WINS = re.compile(r"\b(first|earlier|earliest|older|oldest|before|fewer|fewest|less|least|smaller|smallest"
                           r"|lower|lowest|shorter|shortest)\b", re.I)
_LARGER_WINS = re.compile(r"\b(later|latest|last|more recent|most recent|newer|newest|younger|youngest|after|more|most"
                          r"|larger|largest|bigger|biggest|higher|highest|longer|longest|taller|tallest)\b", re.I)
_BY_DATE = re.compile(r"\b(when|year|date|first|earlier|later|older|younger|founded|born|died|released)\b", re.I)
_BOTH = re.compile(r"\b(both|all|each)\b", re.I)


def is_yes_no_question(question: str) -> bool:
    """Questions answered by yes or no start with an auxiliary verb."""
    return bool(_YES_NO_START.match(question.strip()))


def options(question: str) -> tuple[str, str] | None:
    """The two options of an 'A or B?' question, as written (B may contain commas: 'X, Inc.')."""
    text = question.strip()
    match = _OPTIONS_AFTER_COMMA.search(text) or _OPTIONS.search(text)
    if not match:
        return None
    first = _OPTION_LEAD.split(match.group(1))[-1]
    return first.strip(" ,"), match.group(2).strip(" ,?")


def either_or_options(question: str) -> tuple[str, str] | None:
    """The options of a question that asks to choose one ('A or B?'); None for yes/no questions."""
    return None if is_yes_no_question(question) else options(question)


def comparison_direction(question: str) -> str | None:
    """'smaller' when the smaller value wins (first, older, fewer), 'larger' when it loses; None if unclear."""
    smaller, larger = bool(_SMALLER_WINS.search(question)), bool(_LARGER_WINS.search(question))
    if smaller == larger:
        return None
    return "smaller" if smaller else "larger"


def compares_dates(text: str) -> bool:
    """The compared values are dates (the question or its steps speak of time)."""
    return bool(_BY_DATE.search(text))


def asks_all(question: str) -> bool:
    """'both', 'all' or 'each' in the question."""
    return bool(_BOTH.search(question))


_WORD = re.compile(r"[^\W_]+")
_ARTICLE_WORDS = frozenset({"a", "an", "the"})


def _words(text: str) -> list[str]:
    """The text's words as written (accents kept), articles dropped."""
    return [w for w in _WORD.findall(text) if w.lower() not in _ARTICLE_WORDS]


def names_from_question(question: str, answer: str) -> bool:
    """The answer is a name the question itself gives, whole: its words stand together in the question, and
    the word after them (or before them, past the first word) does not continue a longer capitalised name.

    "Lollipop Chainsaw" in "Lollipop Chainsaw featured Juliet Starling ..." is; "Batman" in "... plays what
    character in Batman Under the Red Hood?" is not (it is part of a longer name).
    """
    wanted = [w.casefold() for w in _words(answer)]
    words = _words(question)
    folded = [w.casefold() for w in words]
    n = len(wanted)
    if not wanted:
        return False
    for start in range(len(words) - n + 1):
        if folded[start:start + n] != wanted:
            continue
        after = words[start + n] if start + n < len(words) else ""
        before = words[start - 1] if start > 1 else ""  # the first word is capitalised anyway
        if not (after[:1].isupper() or before[:1].isupper()):
            return True
    return False


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


def mentions(option: str, text: str) -> bool:
    """Most of the option's words are in the text (a model may drop "(film)" or an initial)."""
    wanted, words = normalize(option).split(), set(normalize(text).split())
    return bool(wanted) and sum(w in words for w in wanted) * 2 >= len(wanted)
