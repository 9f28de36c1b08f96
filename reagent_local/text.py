"""Text normalisation shared by the agents, the conflict core and the knowledge graph.

Two forms, for two jobs:

- :func:`normalize` compares answers and values: accents, case, ASCII punctuation and
  the articles a/an/the go, so "The São-Paulo!" and "sao paulo" are equal.
- :func:`fold` makes the knowledge graph's lookup keys: it keeps articles ("The
  Hague" is a title) and splits at every non-alphanumeric character. Built graphs
  store these keys, so changing it means rebuilding every index.

(The benchmark metric's ``normalize_answer`` is HotpotQA's definition and stays apart.)
"""

from __future__ import annotations

import re
import string
import unicodedata

YES_NO = frozenset({"yes", "no"})

NUMBER_WORDS: dict[str, str] = {
    word: str(value)
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
} | {word: str(10 * tens) for tens, word in enumerate("thirty forty fifty sixty seventy eighty ninety".split(), 3)}

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION_TO_SPACE = str.maketrans(string.punctuation, " " * len(string.punctuation))
_TOKEN = re.compile(r"[^\W_]+")


def strip_accents(text: str) -> str:
    """NFKD-decompose and drop combining marks: ``Zürich`` -> ``Zurich``, ``ﬁ`` -> ``fi``."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def normalize(text: str) -> str:
    """Lowercase, strip accents, ASCII punctuation and the articles a/an/the, collapse spaces."""
    plain = strip_accents(text).lower().translate(_PUNCTUATION_TO_SPACE)
    return " ".join(_ARTICLES.sub(" ", plain).split())


def fold(text: str) -> str:
    """Graph lookup key: casefolded, no accents, alphanumeric tokens only, articles kept.

    ``Núria  Espert!`` -> ``nuria espert``; ``The Hague`` -> ``the hague``.
    """
    return " ".join(_TOKEN.findall(strip_accents(text).casefold()))


def is_yes_no_value(text: str) -> bool:
    """The text is a bare yes or no ("Yes.", "no")."""
    return normalize(text) in YES_NO


def digits_for_number_words(normalized: str) -> str:
    """Small number words as digits ("five films" -> "5 films"), so "5" and "five" match.

    Expects :func:`normalize` output (lowercase, split on spaces).
    """
    return " ".join(NUMBER_WORDS.get(word, word) for word in normalized.split())
