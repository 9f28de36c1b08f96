"""The text of a PDF, page by page, with pypdf (pure Python).

Its title comes from the document information (``/Title``), and its outline (bookmarks),
when it has one, gives each page the heading path of the last entry that starts on or
before it. An encrypted PDF that opens with the empty password is read; one that needs a
password, a damaged one, or one without any text (a scan: it needs OCR first) raises
``Unreadable`` with the reason, so the build skips it and names it.
"""

from __future__ import annotations

import io
import logging
from typing import Any

from .doc_blocks import Block, Parsed, text_blocks


class Unreadable(Exception):
    """A file the build skips: ``reason`` is a key of folder_scan.REASONS, ``detail`` says more."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


def _outline_headings(reader: Any) -> list[tuple[int, tuple[str, ...]]]:
    """(0-based page, heading path) for every outline entry, in page order."""
    found: list[tuple[int, tuple[str, ...]]] = []

    def walk(items: list, above: tuple[str, ...]) -> None:
        last: tuple[str, ...] | None = None
        for item in items:
            if isinstance(item, list):
                if last is not None:
                    walk(item, last)
                continue
            title = " ".join(str(getattr(item, "title", "") or "").split())
            if not title:
                continue
            last = above + (title,)
            try:
                page = reader.get_destination_page_number(item)
            except Exception:  # noqa: BLE001 - a broken bookmark only loses its heading
                continue
            if page is not None and page >= 0:
                found.append((page, last))

    try:
        walk(list(reader.outline), ())
    except Exception:  # noqa: BLE001 - an unreadable outline: pages without headings
        return []
    return sorted(found, key=lambda pair: pair[0])


def _heading_for(page: int, outline: list[tuple[int, tuple[str, ...]]]) -> tuple[str, ...]:
    heading: tuple[str, ...] = ()
    for start, path in outline:
        if start > page:
            break
        heading = path
    return heading


def pdf_blocks(data: bytes) -> Parsed:
    """Title and blocks (paragraphs of each page, tagged with the page) of a PDF's bytes."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError, PyPdfError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings about odd files are not the user's business
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")
            except (PyPdfError, NotImplementedError, ValueError) as exc:
                raise Unreadable("encrypted", _short(exc)) from None
            if not opened:
                raise Unreadable("encrypted", "it needs a password")
        pages = list(reader.pages)
        outline = _outline_headings(reader)
        blocks: list[Block] = []
        for number, page in enumerate(pages):
            text = page.extract_text() or ""
            heading = _heading_for(number, outline)
            for block in text_blocks(text.replace("\x00", "")).blocks:
                blocks.append(Block(block.text, heading, page=number + 1))
        title = _title(reader)
    except Unreadable:
        raise
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError,
            RecursionError, AssertionError, OSError, EOFError) as exc:  # what pypdf raises on a broken file
        raise Unreadable("damaged", _short(exc)) from None
    if not pages:
        raise Unreadable("damaged", "no pages")
    if not any(block.text.strip() for block in blocks):
        raise Unreadable("no-text-pdf", f"{len(pages)} page{'s' if len(pages) != 1 else ''} without text")
    return Parsed(title, blocks)


def _title(reader: Any) -> str | None:
    try:
        title = reader.metadata.title if reader.metadata else None
    except Exception:  # noqa: BLE001 - damaged metadata: no title
        return None
    title = " ".join(str(title or "").split())
    return title or None


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:160]
