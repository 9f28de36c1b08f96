"""A document's structure as blocks: headings, paragraphs, lists, tables, code, each with its lines.

Markdown is parsed by markdown-it-py (CommonMark and tables), so a ``#`` inside a code
fence is not a heading; a block keeps its source lines as written. HTML is read with the
standard library's parser: ``<title>`` (else the first heading, see ``heading_title``) is the title, ``<h1>``-``<h6>``
set the heading path, block elements make paragraphs, scripts, styles and navigation are
dropped. Plain text is paragraphs between blank lines. Line numbers are 1-based and
inclusive; ``doc_passages`` packs the blocks into passages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from html.parser import HTMLParser
from typing import Any

_TAG = re.compile(r"<[^>]*>")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)---[ \t]*\n", re.S)
_FRONT_TITLE = re.compile(r"^title:\s*[\"']?(.+?)[\"']?\s*$", re.M)


@dataclass(frozen=True)
class Block:
    """A piece of a document: its text, the headings it sits under, its lines or page."""

    text: str
    heading: tuple[str, ...] = ()
    first: int | None = None  # 1-based first line
    last: int | None = None  # 1-based last line, inclusive
    page: int | None = None  # 1-based page (PDF)
    is_heading: bool = False


@dataclass(frozen=True)
class Parsed:
    """A document's title (None: it names none) and its blocks in order."""

    title: str | None
    blocks: list[Block]


class HeadingPath:
    """The headings above the current position, by level."""

    def __init__(self) -> None:
        self._stack: list[tuple[int, str]] = []

    def enter(self, level: int, text: str) -> tuple[str, ...]:
        """A heading of ``level``: drop those at its level or deeper, push it; return the path."""
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, text))
        return self.path

    @property
    def path(self) -> tuple[str, ...]:
        """The current heading path, outermost first."""
        return tuple(text for _, text in self._stack)


def _clean_inline(text: str) -> str:
    return " ".join(_TAG.sub("", text).split())


@cache
def _markdown() -> Any:
    """The Markdown parser: CommonMark with tables (imported on first use)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


_BLOCK_OPENERS = {"paragraph_open", "bullet_list_open", "ordered_list_open", "blockquote_open", "table_open"}


def markdown_blocks(source: str) -> Parsed:
    """Headings and top-level blocks of a Markdown text (front matter's ``title:`` is a title too)."""
    title = None
    front = _FRONT_MATTER.match(source)
    if front:
        found = _FRONT_TITLE.search(front.group(1))
        title = found.group(1).strip() if found else None
        source = "\n" * front.group(0).count("\n") + source[front.end():]  # keep the line numbers
    lines = source.split("\n")
    tokens = _markdown().parse(source)
    path = HeadingPath()
    blocks: list[Block] = []
    headings: list[tuple[int, str]] = []
    for i, token in enumerate(tokens):
        if token.level != 0 or token.map is None:
            continue
        start, end = token.map
        if token.type == "heading_open":
            text = _clean_inline(tokens[i + 1].content) if i + 1 < len(tokens) else ""
            if not text:
                continue
            heading = path.enter(int(token.tag[1]), text)
            headings.append((int(token.tag[1]), text))
            blocks.append(Block(text, heading, start + 1, end, is_heading=True))
        elif token.type in _BLOCK_OPENERS or token.type in ("fence", "code_block", "html_block"):
            raw = "\n".join(line.rstrip() for line in lines[start:end]).strip("\n")
            if token.type == "html_block":
                raw = _COMMENT.sub("", raw)
                raw = "\n".join(_clean_inline(line) for line in raw.split("\n") if _clean_inline(line))
            if raw.strip():
                first, last = _trimmed(lines, start, end)
                blocks.append(Block(raw, path.path, first, last))
    return Parsed(title or heading_title(headings), blocks)


def heading_title(headings: list[tuple[int, str]]) -> str | None:
    """The first heading, of any level, when no later heading is at its level or above; else None (the file name)."""
    # a changelog of ``## 8.5.0``, ``## 8.4.0``: no heading stands for the whole file, and titling every
    # passage "8.5.0" misled answers
    if not headings:
        return None
    level, text = headings[0]
    return None if any(other <= level for other, _ in headings[1:]) else text


def _trimmed(lines: list[str], start: int, end: int) -> tuple[int, int]:
    """1-based first and last non-blank lines of lines[start:end]."""
    first, last = start, end - 1
    while first < last and not lines[first].strip():
        first += 1
    while last > first and not lines[last].strip():
        last -= 1
    return first + 1, last + 1


def text_blocks(source: str) -> Parsed:
    """Paragraphs of a plain text: runs of non-blank lines."""
    blocks: list[Block] = []
    current: list[str] = []
    first = 0
    for number, line in enumerate(source.split("\n"), 1):
        if line.strip():
            if not current:
                first = number
            current.append(line.rstrip())
        elif current:
            blocks.append(Block("\n".join(current), (), first, number - 1))
            current = []
    if current:
        blocks.append(Block("\n".join(current), (), first, first + len(current) - 1))
    return Parsed(None, blocks)


_HTML_BLOCKS = frozenset("p div li ul ol pre blockquote table tr td th dt dd dl section article main header footer "
                         "aside figure figcaption form fieldset address details summary br hr".split())
_HTML_SKIPPED = frozenset("script style noscript template svg nav head iframe object canvas".split())
_HTML_VOID = frozenset("br hr img input meta link area base col embed source track wbr".split())


class _HtmlReader(HTMLParser):
    """Collects the title and blocks of an HTML page (see ``html_blocks``)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title: str | None = None
        self.headings: list[tuple[int, str]] = []
        self.blocks: list[Block] = []
        self.path = HeadingPath()
        self._skip = 0  # depth inside skipped elements
        self._in_title = False
        self._title_parts: list[str] = []
        self._heading: tuple[int, int] | None = None  # (level, first line) while inside <hN>
        self._parts: list[str] = []
        self._first: int | None = None
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HTML_SKIPPED and tag not in _HTML_VOID:
            if tag == "head":
                return  # the head holds the title; what else it holds has no text
            self._skip += 1
            return
        if tag == "title":
            self._in_title = True
        elif re.fullmatch(r"h[1-6]", tag):
            self._flush()
            self._heading = (int(tag[1]), self.getpos()[0])
        elif tag in _HTML_BLOCKS:
            if tag == "br":
                self._parts.append("\n")
            else:
                self._flush()
            if tag == "pre":
                self._pre += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _HTML_SKIPPED and tag != "head":
            self._skip = max(0, self._skip - 1)
            return
        if tag == "title":
            self._in_title = False
            self.title = " ".join("".join(self._title_parts).split()) or self.title
        elif re.fullmatch(r"h[1-6]", tag) and self._heading is not None:
            level, first = self._heading
            text = " ".join("".join(self._parts).split())
            self._parts, self._first, self._heading = [], None, None
            if text:
                heading = self.path.enter(level, text)
                self.headings.append((level, text))
                self.blocks.append(Block(text, heading, first, self.getpos()[0], is_heading=True))
        elif tag in _HTML_BLOCKS:
            self._flush()
            if tag == "pre":
                self._pre = max(0, self._pre - 1)

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title_parts.append(data)
            return
        if self._skip:
            return
        if data.strip() and self._first is None:
            self._first = self.getpos()[0] + data[:len(data) - len(data.lstrip())].count("\n")
        self._parts.append(data)

    def _flush(self) -> None:
        """End the paragraph being collected (inside a heading, the heading's end does that)."""
        if self._heading is not None:
            return
        raw = "".join(self._parts)
        if self._pre:
            text = "\n".join(line.rstrip() for line in raw.strip("\n").split("\n"))
        else:
            text = "\n".join(" ".join(line.split()) for line in raw.split("\n") if line.strip())
        if text.strip() and self._first is not None:
            last = max(self._first, self.getpos()[0])
            self.blocks.append(Block(text, self.path.path, self._first, last))
        self._parts, self._first = [], None

    def close(self) -> None:
        super().close()
        self._flush()


def html_blocks(source: str) -> Parsed:
    """The title and blocks of an HTML page."""
    reader = _HtmlReader()
    reader.feed(source)
    reader.close()
    return Parsed(reader.title or heading_title(reader.headings), reader.blocks)
