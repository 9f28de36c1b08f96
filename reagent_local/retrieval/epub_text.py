"""An EPUB e-book as blocks, with the standard library: its chapters in reading order.

The package (``META-INF/container.xml`` -> the OPF file) gives the title (``dc:title``), the
spine (the chapters' XHTML files in reading order) and the table of contents (the EPUB 3
navigation document, else the EPUB 2 NCX). Each chapter is read as HTML (``doc_blocks``);
its heading path starts with the chapter's name in the table of contents (else its own first
heading, else "chapter N"), so a citation reads ``book.epub § Chapter 3: The Lake > Birds``.
Line numbers inside a chapter's XHTML mean nothing to a reader and are dropped.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from typing import Iterator
from urllib.parse import unquote
from xml.etree import ElementTree

from .doc_blocks import Block, Parsed, html_blocks
from .office_text import open_zip, read_member
from .pdf_text import Unreadable, unligature

_CONTAINER = "urn:oasis:names:tc:opendocument:xmlns:container"
_OPF = "http://www.idpf.org/2007/opf"
_DC = "http://purl.org/dc/elements/1.1/"
_NCX = "http://www.daisy.org/z3986/2005/ncx/"
_XHTML = "http://www.w3.org/1999/xhtml"
_EPUB = "http://www.idpf.org/2007/ops"


def _clean(text: str | None) -> str:
    return " ".join(unligature(text or "").split())


def _xml(package: zipfile.ZipFile, name: str) -> ElementTree.Element:
    return ElementTree.fromstring(read_member(package, name))


def _href(base: str, href: str) -> str:
    """A link from the file ``base`` as a path in the zip, without its #fragment."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(base), unquote(href.split("#", 1)[0])))


def _toc(package: zipfile.ZipFile, opf: str, manifest: dict[str, tuple[str, str, str]],
         spine_toc: str | None) -> dict[str, str]:
    """Chapter file -> its name in the table of contents (the first entry pointing into it)."""
    names: dict[str, str] = {}
    nav = next((href for href, _type, props in manifest.values() if "nav" in props.split()), None)
    try:
        if nav is not None:
            root = _xml(package, nav)
            for element in root.iter(f"{{{_XHTML}}}nav"):
                if element.get(f"{{{_EPUB}}}type", "toc") != "toc":
                    continue
                for link in element.iter(f"{{{_XHTML}}}a"):
                    if link.get("href"):
                        names.setdefault(_href(nav, link.get("href")), _clean("".join(link.itertext())))
        elif spine_toc and spine_toc in manifest:
            ncx = manifest[spine_toc][0]
            root = _xml(package, ncx)
            for point in root.iter(f"{{{_NCX}}}navPoint"):
                label = point.find(f"{{{_NCX}}}navLabel/{{{_NCX}}}text")
                content = point.find(f"{{{_NCX}}}content")
                if content is not None and content.get("src") and label is not None:
                    names.setdefault(_href(ncx, content.get("src")), _clean(label.text))
    except (KeyError, ElementTree.ParseError):
        return names  # a broken table of contents: chapters named by their own headings
    return {href: name for href, name in names.items() if name}


def _chapters(package: zipfile.ZipFile) -> tuple[str, list[str], dict[str, str]]:
    """The book's title, its spine's XHTML files in reading order, and their names in the table of contents."""
    container = _xml(package, "META-INF/container.xml")
    rootfile = container.find(f".//{{{_CONTAINER}}}rootfile")
    if rootfile is None or not rootfile.get("full-path"):
        raise Unreadable("damaged-file", "no package file named in META-INF/container.xml")
    opf_name = rootfile.get("full-path")
    opf = _xml(package, opf_name)
    title = _clean(opf.findtext(f".//{{{_DC}}}title"))
    manifest = {item.get("id"): (_href(opf_name, item.get("href", "")), item.get("media-type", ""),
                                 item.get("properties", ""))
                for item in opf.iter(f"{{{_OPF}}}item") if item.get("id")}
    spine = opf.find(f"{{{_OPF}}}spine")
    order = [manifest[ref.get("idref")][0] for ref in (spine if spine is not None else [])
             if ref.get("idref") in manifest and "html" in manifest[ref.get("idref")][1]]
    return title, order, _toc(package, opf_name, manifest, spine.get("toc") if spine is not None else None)


def _chapter_blocks(number: int, name: str | None, source: str) -> Iterator[Block]:
    parsed = html_blocks(source)
    own = next((b.text for b in parsed.blocks if b.is_heading), None)
    chapter = name or own or f"chapter {number}"
    # the chapter's own first heading, when the table of contents names it too ("Chapter 2: The Lake" and
    # "The Lake"), is the chapter: not a level of its own under it
    same = own if own is not None and own.casefold() in chapter.casefold() else None
    for block in parsed.blocks:
        heading = block.heading[1:] if block.heading and block.heading[0] == same else block.heading
        yield Block(unligature(block.text), (chapter, *heading), is_heading=block.is_heading)


def epub_blocks(data: bytes) -> Parsed:
    """The title and blocks of an EPUB file (see the module's docstring)."""
    package = open_zip(data, "an EPUB")
    try:
        title, order, toc = _chapters(package)
        blocks: list[Block] = []
        number = 0
        for href in order:
            try:
                raw = read_member(package, href)
            except KeyError:
                continue  # a spine entry without its file: the rest of the book is read
            number += 1
            text = raw.decode("utf-8", errors="replace")
            text = re.sub(r"<\?xml[^>]*\?>", "", text, count=1)
            blocks.extend(_chapter_blocks(number, toc.get(href), text))
    except (KeyError, ElementTree.ParseError) as exc:
        raise Unreadable("damaged-file", f"{type(exc).__name__}: {exc}"[:160]) from None
    finally:
        package.close()
    return Parsed(title or None, blocks)
