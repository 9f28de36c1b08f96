"""The text of a PDF, page by page, with pypdf (pure Python).

Its title comes from the document information (``/Title``), and its outline (bookmarks),
when it has one, gives each page the heading path of the last entry that starts on or
before it. An encrypted PDF that opens with the empty password is read (RC4 and AES: AES
needs ``cryptography``); one that needs a password, a damaged one, a file named ``.pdf`` that
holds something else (an HTML page: a failed download), or one without a text layer (a scan:
under ``MIN_CHARS_PER_PAGE`` visible characters a page on average) raises ``Unreadable`` with
the reason, so the build skips it and names it. Ligature characters (U+FB00-FB06: "ﬁ") are
written as their letters.
"""

from __future__ import annotations

import io
import logging
import re
import unicodedata
from typing import Any

from .doc_blocks import Block, Parsed, text_blocks


# A scanned page often yields a page number, a stamp or a running head (a few words) and no more; a page of
# text yields 1,500-3,000 characters, a sparse slide 100 and more. Under this many visible (non-space)
# characters a page on average, the PDF has no text layer worth indexing and is named as needing OCR.
MIN_CHARS_PER_PAGE = 32
_LIGATURES = re.compile("[\ufb00-\ufb06]")
# A TeX font without a ToUnicode map (OT1 or T1 encoding) has its ligatures at control codes, which pypdf
# passes on as they are ("Simpli\x0ced"): one of those touching a letter is read as the ligature.
_TEX_SLOTS = {"\x0b": "ff", "\x0c": "fi", "\x0d": "fl", "\x0e": "ffi", "\x0f": "ffl",
              "\x1b": "ff", "\x1c": "fi", "\x1d": "fl", "\x1e": "ffi", "\x1f": "ffl"}
_TEX_LIGATURE = re.compile(r"(?<=[^\W\d_])[\x0b-\x0f\x1b-\x1f]|[\x0b-\x0f\x1b-\x1f](?=[^\W\d_])")


def unligature(text: str) -> str:
    """Ligature characters (ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ) as their letters; nothing else changes (NFKC on those alone)."""
    return _LIGATURES.sub(lambda m: unicodedata.normalize("NFKC", m.group(0)), text)


def pdf_text(text: str) -> str:
    """A page's extracted text with its ligatures as letters, TeX's control-code ligatures included."""
    return unligature(_TEX_LIGATURE.sub(lambda m: _TEX_SLOTS[m.group(0)], text))


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
    from pypdf.errors import DependencyError, PdfReadError, PyPdfError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings about odd files are not the user's business
    if b"%PDF-" not in data[:1024]:
        raise Unreadable("not-pdf", _what_instead(data))
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
            text = pdf_text(page.extract_text() or "")
            heading = _heading_for(number, outline)
            for block in text_blocks(text.replace("\x00", "")).blocks:
                blocks.append(Block(block.text, heading, page=number + 1))
        title = _title(reader)
    except Unreadable:
        raise
    except DependencyError as exc:  # AES without the cryptography package: a broken install, said as such
        raise Unreadable("encrypted", f"{_short(exc)}: pip install cryptography") from None
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError,
            RecursionError, AssertionError, OSError, EOFError) as exc:  # what pypdf raises on a broken file
        raise Unreadable("damaged", _short(exc)) from None
    if not pages:
        raise Unreadable("damaged", "no pages")
    visible = sum(len("".join(block.text.split())) for block in blocks)
    if visible < MIN_CHARS_PER_PAGE * len(pages):
        plural = "s" if len(pages) != 1 else ""
        raise Unreadable("no-text-pdf", f"{visible} characters of text on {len(pages)} page{plural}")
    return Parsed(title, blocks)


def _what_instead(data: bytes) -> str:
    """What a file named .pdf holds instead: an HTML page, text, nothing, or something else."""
    head = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if not head:
        return "it is empty"
    if head.startswith((b"<!doctype html", b"<html")) or b"<html" in head or b"<body" in head:
        return "it holds an HTML page: a failed download?"
    return "it does not start with %PDF-"


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
