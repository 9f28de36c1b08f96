"""Evidence shown to agents and the cheap deterministic checks run on answers.

Passages are data: they are flattened to one line each (so a passage cannot forge a
new prompt line such as ``Question: ...``) and numbered, and a passage that reads like
an instruction to the model is flagged so an answer citing it is rejected.
"""

from __future__ import annotations

import re
import string
import unicodedata
from dataclasses import dataclass, field
from typing import Sequence

_INSTRUCTION = re.compile(
    r"\b(ignore|disregard|forget)\b.{0,40}\b(instructions?|prompt|rules|above)\b"
    r"|\b(you must|you should|always) (answer|respond|reply|say)\b"
    r"|\b(answer|respond|reply) (with|only with)\b.{0,20}\b(regardless|no matter)\b"
    r"|\bsystem prompt\b",
    re.IGNORECASE,
)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_YES_NO_START = re.compile(r"^(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b", re.I)
_NEEDS_PLACE_OR_NAME = re.compile(
    r"^(where|who|whom|whose"
    r"|(in |from )?(what|which) (city|country|town|state|place|county|province|region|continent|nationality)"
    r"|(what|which) (is|was) the (place|city|country|town|birthplace|nationality))\b", re.I)
_DATE_WORDS = re.compile(
    r"\b(january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\b|\b\d+(st|nd|rd|th|s)?\b|\b(ad|bc|bce|ce|c|circa)\b",
    re.I)
_NEEDS_NUMBER = re.compile(r"^(when|what year|in what year|in which year|which year|what date|on what date|how many|how much|how old|how long|what is the population|what was the population)\b", re.I)
_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
} | {word: str(10 * tens) for tens, word in enumerate("thirty forty fifty sixty seventy eighty ninety".split(), 3)}
UNKNOWN = {"unknown", "none", "n/a", "no answer", "not found", "not mentioned", "not given", ""}


@dataclass(frozen=True)
class EvidencePassage:
    """One passage as an agent sees it: id, title, text cut to the prompt budget, score."""

    id: str
    title: str
    text: str
    score: float
    suspicious: bool = False


@dataclass(frozen=True)
class Fact:
    """A knowledge-graph triple as evidence, with the passage its infobox came from."""

    subject: str
    relation: str
    value: str
    passage_id: str
    text: str  # how the fact is shown in a prompt


@dataclass(frozen=True)
class Evidence:
    """What the Retriever hands the Verifier for one sub-question."""

    query: str
    passages: tuple[EvidencePassage, ...]
    facts: tuple[Fact, ...] = field(default=())

    def by_number(self, numbers: Sequence[int]) -> list[EvidencePassage]:
        """Passages by their 1-based number in the prompt (invalid numbers are dropped)."""
        return [self.passages[n - 1] for n in numbers if 1 <= n <= len(self.passages)]


def looks_like_instruction(text: str) -> bool:
    """True when a passage contains text addressed to a model rather than a reader."""
    return bool(_INSTRUCTION.search(text))


def flatten(text: str, limit: int) -> str:
    """One line, whitespace collapsed, cut at a word boundary to ``limit`` characters."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0]
    return cut + " ..."


def format_evidence(evidence: Evidence) -> str:
    """The numbered passage block (and graph facts) that goes into a prompt."""
    lines = ["Passages:"]
    for number, passage in enumerate(evidence.passages, 1):
        lines.append(f"[{number}] {flatten(passage.title, 120)}: {passage.text}")
    if evidence.facts:
        lines.append("Infobox facts:")
        lines.extend(f"- {flatten(fact.text, 200)}" for fact in evidence.facts)
    return "\n".join(lines)


def normalize(text: str) -> str:
    """Lowercase, strip accents, punctuation and articles, collapse spaces."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    text = "".join(" " if c in string.punctuation else c for c in text)
    return " ".join(_ARTICLES.sub(" ", text).split())


def is_unknown(answer: str) -> bool:
    """The model said it could not answer."""
    return normalize(answer) in UNKNOWN or normalize(answer).startswith("unknown")


def is_yes_no_question(question: str) -> bool:
    """Questions answered by yes or no start with an auxiliary verb."""
    return bool(_YES_NO_START.match(question.strip()))


def digits_for_number_words(normalized: str) -> str:
    """Small number words as digits ("five films" -> "5 films"), so "5" and "five" match."""
    return " ".join(_NUMBER_WORDS.get(word, word) for word in normalized.split())


def grounded_in(answer: str, texts: Sequence[str]) -> bool:
    """The answer span appears in one of the texts (all its words, in any order).

    A numeric answer also matches its spelt-out form and the reverse: passages write
    "five" where a model answers "5".
    """
    norm = normalize(answer)
    if not norm:
        return False
    numeric = any(c.isdigit() for c in norm) or any(w in _NUMBER_WORDS for w in norm.split())
    if numeric:
        norm = digits_for_number_words(norm)
    words = norm.split()
    for text in texts:
        hay = normalize(text)
        if numeric:
            hay = digits_for_number_words(hay)
        if norm in hay:
            return True
        hay_words = set(hay.split())
        if len(words) > 1 and sum(w in hay_words for w in words) >= max(2, round(0.75 * len(words))):
            return True
    return False


def answer_type_problem(question: str, answer: str) -> str | None:
    """Why the answer's type does not fit the question, or None."""
    norm = normalize(answer)
    if is_yes_no_question(question):
        if norm not in {"yes", "no"}:
            return f"the question asks yes or no but the answer is {answer!r}"
        return None
    if norm in {"yes", "no"}:
        return "the question is not a yes/no question"
    if _NEEDS_NUMBER.match(question.strip()) and not any(ch.isdigit() for ch in answer) and not re.search(
        r"\b(one|two|three|four|five|six|seven|eight|nine|ten|hundred|thousand|million|billion|century)\b", answer, re.I
    ):
        return f"the question asks for a date or number but the answer {answer!r} has none"
    if _NEEDS_PLACE_OR_NAME.match(question.strip()) and is_date_or_number(answer):
        return f"the question asks for a place or a name but the answer {answer!r} is a date or number"
    return None


def is_date_or_number(answer: str) -> bool:
    """Only digits, month names and era words ("1 October 1895", "1890s", "c. 300 BC")."""
    if not any(ch.isdigit() for ch in answer):
        return False
    rest = _DATE_WORDS.sub(" ", answer)
    return not re.search(r"[^\W\d_]", rest)
