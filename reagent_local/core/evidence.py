"""Evidence shown to agents (passages, where they come from, graph facts), and the grounding check run on answers.

A shared type of the layers above: the retriever makes it, the verifier, assembler and rules read it.

Passages are data: they are flattened to one line each (so a passage cannot forge a
new prompt line such as ``Question: ...``) and numbered, and a passage that reads like
an instruction to the model is flagged so an answer citing it is rejected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from ..dates import YEAR
from ..text import NUMBER_WORDS, digits_for_number_words, is_yes_no_value, normalize

_INSTRUCTION = re.compile(
    r"\b(ignore|disregard|forget)\b.{0,40}\b(instructions?|prompt|rules|above)\b"
    r"|\b(you must|you should|always) (answer|respond|reply|say)\b"
    r"|\b(answer|respond|reply) (with|only with)\b.{0,20}\b(regardless|no matter)\b"
    r"|\bsystem prompt\b",
    re.IGNORECASE,
)
HEADING_SEPARATOR = " > "
# What ``page`` and ``lines`` count in files other than PDF and text: a slide, a spreadsheet's rows, a notebook's cells
PAGE_UNITS = {".pptx": "slide"}
LINE_UNITS = {".csv": "row", ".tsv": "row", ".xlsx": "row", ".ipynb": "cell"}
UNKNOWN = {"unknown", "none", "n/a", "no answer", "not found", "not mentioned", "not given", ""}


@dataclass(frozen=True)
class Origin:
    """A passage's place: file path (POSIX, relative to the indexed folder), heading path, page or lines."""

    path: str
    heading: tuple[str, ...] = ()
    page: int | None = None  # 1-based PDF page
    lines: tuple[int, int] | None = None  # 1-based, inclusive

    def __post_init__(self) -> None:
        object.__setattr__(self, "heading", tuple(str(h) for h in self.heading))
        if self.lines is not None:
            object.__setattr__(self, "lines", (int(self.lines[0]), int(self.lines[1])))

    def units(self) -> tuple[str, str]:
        """What page and lines count in this file: ``("page", "line")``, a deck's slides, a sheet's rows."""
        suffix = self.path[self.path.rfind("."):].lower() if "." in self.path.rsplit("/", 1)[-1] else ""
        return PAGE_UNITS.get(suffix, "page"), LINE_UNITS.get(suffix, "line")

    def place(self) -> str:
        """The page or the lines: ``page 2``, ``lines 9-22``, ``line 4``, ``slide 3``, ``rows 2-9`` ('' when neither)."""
        page, line = self.units()
        if self.page is not None:
            return f"{page} {self.page}"
        if self.lines is not None:
            first, last = self.lines
            return f"{line} {first}" if first == last else f"{line}s {first}-{last}"
        return ""

    def label(self) -> str:
        """One line a user can open: ``docs/retrieval.md § Retrieval > Use it, lines 9-22``."""
        text = self.path
        if self.heading:
            text += " § " + HEADING_SEPARATOR.join(self.heading)
        place = self.place()
        return f"{text}, {place}" if place else text

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: path, heading (a list), page, lines ([first, last] or null) and the label."""
        return {"path": self.path, "heading": list(self.heading), "page": self.page,
                "lines": list(self.lines) if self.lines else None, "label": self.label()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "Origin | None":
        """An Origin read back from ``to_dict`` (or a logged payload); None for None or no path."""
        if not data or not data.get("path"):
            return None
        lines = data.get("lines")
        return cls(path=str(data["path"]), heading=tuple(data.get("heading") or ()),
                   page=int(data["page"]) if data.get("page") is not None else None,
                   lines=(int(lines[0]), int(lines[1])) if lines else None)


@dataclass(frozen=True)
class EvidencePassage:
    """One passage as an agent sees it: id, title, text cut to the prompt budget, score, and where it comes from."""

    id: str
    title: str
    text: str
    score: float
    suspicious: bool = False
    origin: Origin | None = None  # file, heading, page or lines (passages of a folder of documents)


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


@dataclass(frozen=True)
class BuiltOn:
    """An earlier answer a step builds on ("Where was #1 born?"): where it was read, and its own article."""

    answer: str
    read_from: frozenset[str] = frozenset()  # ids of the passages the answer was read from
    article: str = ""  # the title of the answer's own article, when the index has one


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


def is_unknown(answer: str) -> bool:
    """The model said it could not answer."""
    return normalize(answer) in UNKNOWN or normalize(answer).startswith("unknown")


def grounded_in(answer: str, texts: Sequence[str]) -> bool:
    """The answer span appears in one of the texts (all its words, in any order).

    A numeric answer also matches its spelt-out form and the reverse: passages write
    "five" where a model answers "5".
    """
    norm = normalize(answer)
    if not norm:
        return False
    numeric = any(c.isdigit() for c in norm) or any(w in NUMBER_WORDS for w in norm.split())
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


def values_agree(a: str, b: str) -> bool:
    """Two answers that name the same thing: differing only by qualification ('Montgomery' /
    'Montgomery, Alabama') or by date precision and format ('February 12, 1809' / '1809-02-12')."""
    ya, yb = set(YEAR.findall(a)), set(YEAR.findall(b))
    if ya and yb:
        return bool(ya & yb)
    ta, tb = set(normalize(a).split()), set(normalize(b).split())
    return bool(ta) and bool(tb) and (ta <= tb or tb <= ta)


class Titled(Protocol):
    """A passage as ``supported`` reads it: an agent's EvidencePassage or a baseline's retrieved Passage."""

    @property
    def title(self) -> str: ...

    @property
    def text(self) -> str: ...


def supported(answer: str, passages: Sequence[Titled]) -> bool:
    """A yes or no, or an answer found in the passages (their titles included)."""
    return is_yes_no_value(answer) or grounded_in(answer, [f"{p.title}: {p.text}" for p in passages])
