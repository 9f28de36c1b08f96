"""Passages: the unit that is embedded, indexed and handed to the agents.

A passage of a folder of documents carries an ``Origin``: its file (relative to the
folder), the headings it sits under and its page (PDF) or lines; the retriever hands it
on, the log keeps it with the evidence, and ``ask``, the trace and ``serve`` print it.

A passage id is ``f"{title}#{n}"`` where n is the passage's position in its
document (0 for the first); a passage of a folder of documents is ``f"{path}#{n}"``
(its file's path from the folder), so files sharing a title keep stable, distinct ids.
The knowledge graph cites infobox facts as ``f"{title}#0"``, so the first passage of a
page must keep n = 0. A passage found by searching several indexes at once (``multi.py``) has
its index's name in front: ``f"{index}|{id}"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from ..core.evidence import Origin  # a passage's place travels with the evidence: defined below retrieval

TARGET_WORDS = 100

SEPARATOR = "|"  # between an index's name and a passage id: never in a Wikipedia title, hardly in a path
_INDEX_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")  # layout.validate_name's names
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


@dataclass(frozen=True)
class Passage:
    """A titled piece of text with a stable id; passages of a folder also say where they come from."""

    id: str
    title: str
    text: str
    origin: Origin | None = None


def passage_id(title: str, n: int) -> str:
    """The id of the n-th passage of the document titled ``title``."""
    return f"{title}#{n}"


def index_text(title: str, text: str) -> str:
    """What is embedded and BM25-tokenised for a passage: its title, then its text."""
    return f"{title}\n{text}" if title else text


def _units(text: str) -> list[tuple[str, str]]:
    """Sentences with the separator that follows them ("\n" after a line's last one)."""
    units: list[tuple[str, str]] = []
    for line in text.split("\n"):
        parts = [part.strip() for part in _SENTENCE_END.split(line.strip()) if part.strip()]
        units.extend((part, "\n" if i == len(parts) - 1 else " ") for i, part in enumerate(parts))
    return units


def _is_heading(units: list[tuple[str, str]], i: int) -> bool:
    """A short line of its own without final punctuation: a section heading."""
    text, sep = units[i]
    whole_line = sep == "\n" and (i == 0 or units[i - 1][1] == "\n")
    return whole_line and len(text.split()) <= 8 and text[-1] not in ".!?:;,\"')]"


def _join(units: list[tuple[str, str]]) -> str:
    return "".join(text + sep for text, sep in units).strip()


def split_passages(text: str, target_words: int = TARGET_WORDS) -> list[str]:
    """Split text into passages of about ``target_words`` words, at sentence ends.

    Sentences are packed greedily; a passage is closed when the next sentence would
    take it past the target and it already holds half the target. A sentence longer
    than 1.5 x target is cut into target-sized pieces; a short tail is merged into
    the passage before it when that stays under 1.5 x target. Line breaks (between
    paragraphs, after headings) are kept.
    """
    if target_words < 1:
        raise ValueError("target_words must be at least 1")
    limit = int(target_words * 1.5)
    pieces: list[tuple[str, str, int]] = []  # (text, separator after it, word count)
    units = _units(text)
    headings = {units[i] for i in range(len(units)) if _is_heading(units, i)}
    for unit, sep in units:
        words = unit.split()
        if len(words) > limit:
            chunks = [words[i:i + target_words] for i in range(0, len(words), target_words)]
            pieces.extend((" ".join(c), sep if j == len(chunks) - 1 else " ", len(c)) for j, c in enumerate(chunks))
        else:
            pieces.append((unit, sep, len(words)))
    passages: list[tuple[list[tuple[str, str]], int]] = []
    current: list[tuple[str, str]] = []
    count = 0
    for unit, sep, n in pieces:
        if current and count + n > target_words and count >= target_words // 2:
            carried: list[tuple[str, str]] = []
            while len(current) > 1 and current[-1] in headings:  # a heading opens the next passage
                carried.insert(0, current.pop())
            carried_words = sum(len(t.split()) for t, _ in carried)
            passages.append((current, count - carried_words))
            current, count = carried, carried_words
        current.append((unit, sep))
        count += n
    if current:
        if passages and count < target_words // 4 and passages[-1][1] + count <= limit:
            passages[-1] = (passages[-1][0] + current, passages[-1][1] + count)
        else:
            passages.append((current, count))
    return [_join(units) for units, _ in passages]


def source_index(passage_id: str) -> str | None:
    """The index a passage of several searched indexes came from (``"notes|a.md#0"`` -> ``"notes"``), else None."""
    head, sep, _ = passage_id.partition(SEPARATOR)
    return head if sep and _INDEX_NAME.match(head) else None


def local_id(passage_id: str) -> str:
    """The passage's id within its own index (the index name in front taken off)."""
    return passage_id.partition(SEPARATOR)[2] if source_index(passage_id) else passage_id
