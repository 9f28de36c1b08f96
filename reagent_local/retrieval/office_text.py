"""Word (.docx), PowerPoint (.pptx) and OpenDocument text (.odt) files as blocks.

docx is read by python-docx in body order (paragraphs and tables): a paragraph styled
"Heading N" (or carrying an outline level) sets the heading path, "Title" the title. pptx is
read by python-pptx slide by slide: a block's ``page`` is its slide number and its heading
the slide's title; text boxes, tables, grouped shapes and the speaker notes are read. odt is
a zip of XML read with the standard library: ``text:h`` sets the heading path by its outline
level. A title is the file's own (document properties, a Title paragraph), else its first
heading (``doc_blocks.heading_title``). A damaged package raises ``Unreadable``.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any, Iterable, Iterator
from xml.etree import ElementTree

from .doc_blocks import Block, HeadingPath, Parsed, heading_title
from .pdf_text import Unreadable, unligature

MAX_MEMBER_BYTES = 256 * 1024 * 1024  # a zip member inflating past this is a zip bomb, not a document
_HEADING_STYLE = re.compile(r"heading\s*(\d)", re.I)


def _clean(text: str) -> str:
    return " ".join(unligature(text).split())


def open_zip(data: bytes, what: str) -> zipfile.ZipFile:
    """The zip package in ``data``; Unreadable when it is none (a damaged or renamed file)."""
    try:
        package = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise Unreadable("damaged-file", f"not {what} package ({exc})") from None
    inflated = sum(info.file_size for info in package.infolist())
    if inflated > MAX_MEMBER_BYTES:
        package.close()
        raise Unreadable("too-large", f"it inflates to {inflated:,} bytes")
    return package


def read_member(package: zipfile.ZipFile, name: str) -> bytes:
    """One member's bytes, refused past MAX_MEMBER_BYTES (Unreadable); KeyError when it is missing."""
    info = package.getinfo(name)
    if info.file_size > MAX_MEMBER_BYTES:
        raise Unreadable("too-large", f"{name} inflates to {info.file_size:,} bytes")
    with package.open(info) as stream:
        data = stream.read(MAX_MEMBER_BYTES + 1)
    if len(data) > MAX_MEMBER_BYTES:
        raise Unreadable("too-large", f"{name} inflates past {MAX_MEMBER_BYTES:,} bytes")
    return data


def _rows_text(rows: Iterable[Iterable[str]]) -> str:
    """A table as lines of cells joined by `` | ``, empty rows left out."""
    lines = [" | ".join(cell for cell in row) for row in rows]
    return "\n".join(line for line in lines if line.replace("|", "").strip())


def _blocks(items: Iterable[tuple[int | None, str]], page: int | None = None,
            path: HeadingPath | None = None) -> tuple[list[Block], list[tuple[int, str]]]:
    """Blocks of (heading level or None, text) items in order, and the headings seen."""
    path = path or HeadingPath()
    blocks: list[Block] = []
    headings: list[tuple[int, str]] = []
    for level, text in items:
        if not text.strip():
            continue
        if level is not None:
            headings.append((level, text))
            blocks.append(Block(text, path.enter(level, text), page=page, is_heading=True))
        else:
            blocks.append(Block(text, path.path, page=page))
    return blocks, headings


# docx ----------------------------------------------------------------------------------------------

def _docx_level(paragraph: Any) -> int | None:
    """A paragraph's heading level: its style's "Heading N", else an outline level set on it or its style."""
    style = paragraph.style
    name = (style.name or "") if style is not None else ""
    found = _HEADING_STYLE.fullmatch(name.strip())
    if found:
        return int(found.group(1))
    for element in (paragraph._p, getattr(style, "element", None)):  # w:outlineLvl, 0-based; 9 is body text
        if element is None:
            continue
        levels = element.xpath("./w:pPr/w:outlineLvl/@w:val")
        if levels and levels[0].isdigit() and int(levels[0]) < 9:
            return int(levels[0]) + 1
    return None


def _docx_items(document: Any) -> Iterator[tuple[int | None, str]]:
    from docx.table import Table

    for item in document.iter_inner_content():
        if isinstance(item, Table):
            rows = []
            for row in item.rows:
                cells, seen = [], set()
                for cell in row.cells:  # a merged cell is listed once per grid column it spans
                    if id(cell._tc) not in seen:
                        seen.add(id(cell._tc))
                        cells.append(_clean(cell.text))
                rows.append(cells)
            yield None, _rows_text(rows)
            continue
        text = unligature(item.text).strip()
        style = (item.style.name or "") if item.style is not None else ""
        if style.strip().lower() == "title":
            yield 0, _clean(text)
        else:
            level = _docx_level(item)
            yield (level, _clean(text)) if level is not None else (None, text)


def docx_blocks(data: bytes) -> Parsed:
    """The title and blocks of a .docx file (see the module's docstring)."""
    try:
        import docx
    except ImportError:
        raise Unreadable("failed", "python-docx is not installed: pip install python-docx") from None
    open_zip(data, "a Word").close()
    try:
        document = docx.Document(io.BytesIO(data))
        blocks, headings = _blocks(_docx_items(document))
        title = _clean(document.core_properties.title or "")
    except (KeyError, ValueError, zipfile.BadZipFile, ElementTree.ParseError) as exc:
        raise Unreadable("damaged-file", f"{type(exc).__name__}: {exc}"[:160]) from None
    return Parsed(title or heading_title(headings), blocks)


# pptx ----------------------------------------------------------------------------------------------

def _shape_texts(shapes: Iterable[Any], skip: Any) -> Iterator[str]:
    """The text of every shape (text frames, tables, groups) in order, the title shape left out."""
    for shape in shapes:
        if skip is not None and shape.shape_id == skip.shape_id:
            continue
        if getattr(shape, "shapes", None) is not None and shape.shape_type is not None and \
                int(shape.shape_type) == 6:  # MSO_SHAPE_TYPE.GROUP
            yield from _shape_texts(shape.shapes, None)
        elif getattr(shape, "has_table", False) and shape.has_table:
            yield _rows_text([[_clean(cell.text) for cell in row.cells] for row in shape.table.rows])
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            text = "\n".join(p.text.strip() for p in shape.text_frame.paragraphs if p.text.strip())
            if text:
                yield unligature(text)


def pptx_blocks(data: bytes) -> Parsed:
    """The title and blocks of a .pptx file: page is the slide number, heading the slide's title."""
    try:
        from pptx import Presentation
    except ImportError:
        raise Unreadable("failed", "python-pptx is not installed: pip install python-pptx") from None
    open_zip(data, "a PowerPoint").close()
    try:
        deck = Presentation(io.BytesIO(data))
        blocks: list[Block] = []
        first_title = None
        for number, slide in enumerate(deck.slides, 1):
            title_shape = slide.shapes.title
            title = _clean(title_shape.text) if title_shape is not None and title_shape.has_text_frame else ""
            first_title = first_title or title or None
            heading = (title,) if title else ()
            if title:
                blocks.append(Block(title, heading, page=number, is_heading=True))
            blocks.extend(Block(text, heading, page=number) for text in _shape_texts(slide.shapes, title_shape))
            if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
                notes = slide.notes_slide.notes_text_frame.text.strip()
                if notes:
                    blocks.append(Block(f"Notes: {unligature(notes)}", heading, page=number))
        title = _clean(deck.core_properties.title or "")
    except (KeyError, ValueError, zipfile.BadZipFile, ElementTree.ParseError) as exc:
        raise Unreadable("damaged-file", f"{type(exc).__name__}: {exc}"[:160]) from None
    return Parsed(title or first_title, blocks)


# odt -----------------------------------------------------------------------------------------------

_ODF = {"text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
        "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
        "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
        "dc": "http://purl.org/dc/elements/1.1/"}


def _q(prefix: str, name: str) -> str:
    return f"{{{_ODF[prefix]}}}{name}"


def _odf_text(element: ElementTree.Element) -> str:
    """The text of an ODF paragraph or heading: ``text:s`` spaces, tabs and line breaks kept, notes dropped."""
    parts: list[str] = [element.text or ""]
    for child in element:
        if child.tag == _q("text", "s"):
            parts.append(" " * int(child.get(_q("text", "c"), "1")))
        elif child.tag == _q("text", "tab"):
            parts.append("\t")
        elif child.tag == _q("text", "line-break"):
            parts.append("\n")
        elif child.tag != _q("text", "note"):
            parts.append(_odf_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _odt_items(element: ElementTree.Element) -> Iterator[tuple[int | None, str]]:
    for child in element:
        if child.tag == _q("text", "h"):
            yield int(child.get(_q("text", "outline-level"), "1") or 1), _clean(_odf_text(child))
        elif child.tag == _q("text", "p"):
            yield None, unligature(_odf_text(child)).strip()
        elif child.tag == _q("table", "table"):
            rows = [[_clean(" ".join(_odf_text(p) for p in cell.iter(_q("text", "p"))))
                     for cell in row.iter(_q("table", "table-cell"))] for row in child.iter(_q("table", "table-row"))]
            yield None, _rows_text(rows)
        elif child.tag in (_q("text", "list"), _q("text", "list-item"), _q("text", "section")):
            yield from _odt_items(child)


def odt_blocks(data: bytes) -> Parsed:
    """The title and blocks of an OpenDocument text file (.odt)."""
    package = open_zip(data, "an OpenDocument")
    try:
        root = ElementTree.fromstring(read_member(package, "content.xml"))
        try:
            meta = ElementTree.fromstring(read_member(package, "meta.xml"))
            title = _clean(meta.findtext(f".//{_q('dc', 'title')}") or "")
        except KeyError:
            title = ""
    except (KeyError, ElementTree.ParseError) as exc:
        raise Unreadable("damaged-file", f"{type(exc).__name__}: {exc}"[:160]) from None
    finally:
        package.close()
    body = root.find(f"{_q('office', 'body')}/{_q('office', 'text')}")
    if body is None:
        raise Unreadable("damaged-file", "no office:text body (a spreadsheet or a drawing?)")
    blocks, headings = _blocks(_odt_items(body))
    return Parsed(title or heading_title(headings), blocks)
