"""One file of a folder as passages that follow its structure, each with its origin.

A passage never crosses a heading or a page: the blocks of one section (one heading path
on one page) are packed in order to about ``TARGET_WORDS`` words, as ``split_passages``
packs sentences (closed past the target once it holds half of it; a short tail joins the
passage before it). A block longer than 1.5 x the target is cut at its lines, and a line
that long at its sentences. A section that is only its heading gives no passage (its
heading is in its subsections' heading paths). The title is the document's own (first
heading, HTML title, PDF metadata), else the file name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from .passages import Origin
from .doc_blocks import Block, Parsed, html_blocks, markdown_blocks, text_blocks
from .passages import TARGET_WORDS, split_passages
from .folder_scan import DOCUMENT_SUFFIXES
from .office_text import docx_blocks, odt_blocks, pptx_blocks
from .pdf_text import Unreadable, pdf_blocks
from .epub_text import epub_blocks
from .notebook_text import ipynb_blocks
from .mail_text import eml_blocks
from .sheet_text import csv_blocks, xlsx_blocks

# formats read from their bytes (zip packages, mail) and formats read from their text
PACKAGED = {"docx": docx_blocks, "pptx": pptx_blocks, "odt": odt_blocks, "xlsx": xlsx_blocks, "epub": epub_blocks,
            "eml": eml_blocks}
TEXTUAL = {"csv": csv_blocks, "ipynb": ipynb_blocks}

# Bump when reading or packing changes: an update then reads every file again (vectors of
# passages whose text did not change are still reused).
READER_VERSION = 2  # 2: office, e-book, sheet, notebook and mail formats; titles; ligatures
_SNIFF = 8192


@dataclass(frozen=True)
class DocPassage:
    """A passage's text and where it comes from."""

    text: str
    origin: Origin


@dataclass(frozen=True)
class FileDocument:
    """A file read: its title and passages."""

    title: str
    passages: list[DocPassage]


def _words(text: str) -> int:
    return len(text.split())


def looks_binary(data: bytes) -> bool:
    """NUL bytes, or many control characters, in the first 8 KB."""
    head = data[:_SNIFF]
    if b"\x00" in head:
        return True
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13, 27, 8))
    return bool(head) and controls / len(head) > 0.1


def decode_text(data: bytes) -> str:
    """UTF-8 (a BOM dropped), else Windows-1252 with undecodable bytes replaced; newlines normalised."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("cp1252", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def parse(data: bytes, kind: str) -> Parsed:
    """A file's bytes as blocks, read as ``kind``; raises Unreadable for what the build skips."""
    if not data.strip():
        raise Unreadable("empty", f"{len(data)} bytes")
    if kind == "pdf":
        return pdf_blocks(data)
    if kind in PACKAGED:
        return PACKAGED[kind](data)
    if looks_binary(data):
        raise Unreadable("binary")
    text = decode_text(data)
    if kind == "markdown":
        return markdown_blocks(text)
    if kind == "html":
        return html_blocks(text)
    if kind in TEXTUAL:
        return TEXTUAL[kind](text)
    return text_blocks(text)


def read_document(rel: str, data: bytes, kind: str, target_words: int = TARGET_WORDS) -> FileDocument:
    """The passages of one file (``rel``: its path from the folder); raises Unreadable when it has none."""
    try:
        parsed = parse(data, kind)
    except Unreadable as exc:
        suffix = PurePosixPath(rel).suffix.lower()
        if exc.reason == "binary" and (kind != "text" or suffix in DOCUMENT_SUFFIXES):
            raise Unreadable("not-text", f"{suffix} file with binary bytes") from None  # named: a surprise
        raise
    passages = pack(parsed.blocks, rel, target_words)
    if not passages:
        raise Unreadable("empty")
    return FileDocument(parsed.title or PurePosixPath(rel).stem or rel, passages)


def _pieces(block: Block, limit: int, target: int) -> list[Block]:
    """A block cut to at most ``limit`` words a piece: at its lines, then a long line at its sentences."""
    if _words(block.text) <= limit:
        return [block]
    out: list[Block] = []
    lines = block.text.split("\n")
    current: list[str] = []
    count, start = 0, 0
    for offset, line in enumerate(lines):
        n = _words(line)
        if n > limit:
            if current:
                out.append(_sub(block, "\n".join(current), start, offset - 1))
                current, count = [], 0
            out.extend(_sub(block, piece, offset, offset) for piece in split_passages(line, target))
            continue
        if current and count + n > target:
            out.append(_sub(block, "\n".join(current), start, offset - 1))
            current, count = [], 0
        if not current:
            start = offset
        current.append(line)
        count += n
    if current:
        out.append(_sub(block, "\n".join(current), start, len(lines) - 1))
    return [piece for piece in out if piece.text.strip()]


def _sub(block: Block, text: str, first: int, last: int) -> Block:
    """Lines first..last (0-based offsets into the block) of a block as a block of their own."""
    if block.first is None or block.first == block.last:  # one line, or one cell of a notebook: its place stays
        return Block(text, block.heading, block.first, block.last, block.page)
    return Block(text, block.heading, block.first + first, block.first + last, block.page)


def _sections(blocks: list[Block]) -> list[list[Block]]:
    """Runs of blocks under one heading path on one page; a heading opens a new run."""
    runs: list[list[Block]] = []
    for block in blocks:
        if not runs or block.is_heading or (block.heading, block.page) != (runs[-1][-1].heading, runs[-1][-1].page):
            runs.append([])
        runs[-1].append(block)
    return [run for run in runs if not all(b.is_heading for b in run)]


def _passage(run: list[Block], rel: str) -> DocPassage:
    first = [b.first for b in run if b.first is not None]
    last = [b.last for b in run if b.last is not None]
    lines = (min(first), max(last)) if first and last else None
    text = "\n\n".join(b.text.strip("\n") for b in run)
    return DocPassage(text, Origin(rel, run[0].heading, run[0].page, lines))


def pack(blocks: list[Block], rel: str, target_words: int = TARGET_WORDS) -> list[DocPassage]:
    """Pack a document's blocks into passages that follow its sections (see the module's docstring)."""
    limit = int(target_words * 1.5)
    out: list[DocPassage] = []
    for section in _sections(blocks):
        pieces = [piece for block in section for piece in _pieces(block, limit, target_words)]
        groups: list[tuple[list[Block], int]] = []
        current: list[Block] = []
        count = 0
        for piece in pieces:
            n = _words(piece.text)
            if current and count + n > target_words and count >= target_words // 2 and not current[-1].is_heading:
                groups.append((current, count))
                current, count = [], 0
            current.append(piece)
            count += n
        if current:
            if groups and count < target_words // 4 and groups[-1][1] + count <= limit:
                groups[-1] = (groups[-1][0] + current, groups[-1][1] + count)
            else:
                groups.append((current, count))
        out.extend(_passage(group, rel) for group, _ in groups)
    return out
