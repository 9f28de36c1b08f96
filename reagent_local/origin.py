"""Where a passage comes from in a folder of documents, and the one line that says it.

A passage of an index built from a folder (``reagent index build FOLDER``) carries an
``Origin``: its file (relative to the folder), the headings it sits under, and its page
(PDF) or its line range (Markdown, text, HTML). Passages of dumps and benchmark files
have none. The retriever hands it on with the passage, the log keeps it with the
evidence, and ``ask``, the trace and ``serve`` print it with every cited passage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

HEADING_SEPARATOR = " > "


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

    def place(self) -> str:
        """The page or the lines: ``page 2``, ``lines 9-22``, ``line 4`` ('' when neither is known)."""
        if self.page is not None:
            return f"page {self.page}"
        if self.lines is not None:
            first, last = self.lines
            return f"line {first}" if first == last else f"lines {first}-{last}"
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
