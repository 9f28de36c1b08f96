"""Stream pages out of a MediaWiki XML export (``.xml`` or ``.xml.bz2``).

Constant memory: elements are cleared as soon as a page is yielded. Used by the
passage reader and by the knowledge-graph extractor.
"""

from __future__ import annotations

import bz2
import gzip
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

from ..errors import CorpusFormatError


@dataclass(frozen=True)
class RawPage:
    """One page of a dump, wikitext untouched."""

    page_id: str
    title: str
    namespace: int
    redirect: str | None  # target title when the page is a redirect
    wikitext: str

    @property
    def is_article(self) -> bool:
        """Main namespace and not a redirect."""
        return self.namespace == 0 and self.redirect is None


def open_maybe_compressed(path: Path) -> IO[bytes]:
    """Open a file for binary reading, decompressing .bz2 and .gz transparently."""
    path = Path(path)
    if not path.is_file():
        raise CorpusFormatError(f"{path} does not exist or is not a file", hint="check the path")
    with open(path, "rb") as probe:
        magic = probe.read(3)
    if magic == b"BZh":
        return bz2.open(path, "rb")
    if magic[:2] == b"\x1f\x8b":
        return gzip.open(path, "rb")
    return open(path, "rb")


def _local(tag: str) -> str:
    """Tag name without its XML namespace."""
    return tag.rsplit("}", 1)[-1]


def iter_pages(path: Path) -> Iterator[RawPage]:
    """Yield every page of a MediaWiki XML export, in file order.

    Raises CorpusFormatError when the file is not a MediaWiki export, is truncated,
    or is not XML at all.
    """
    path = Path(path)
    try:
        stream = open_maybe_compressed(path)
    except OSError as exc:
        raise CorpusFormatError(f"{path} could not be read ({exc})", hint="check the file and its permissions") from None
    with stream:
        yield from parse_pages(stream, str(path))


def parse_pages(stream: IO[bytes], label: str) -> Iterator[RawPage]:
    """Yield the pages of MediaWiki XML read from ``stream`` (``label`` names it in errors).

    Also reads a piece of a dump (some pages wrapped in ``<mediawiki>``), as a worker
    of a sharded build does.
    """
    saw_root = False
    try:
        context = ET.iterparse(stream, events=("start", "end"))
        root = None
        for event, elem in context:
            name = _local(elem.tag)
            if event == "start":
                if root is None:
                    root = elem
                    if name != "mediawiki":
                        raise CorpusFormatError(
                            f"{label} is XML but not a MediaWiki export (root element <{name}>)",
                            hint="pass a *pages-articles*.xml[.bz2] dump, or choose --format jsonl|tsv",
                        )
                    saw_root = True
                continue
            if name != "page":
                continue
            yield _page_from_element(elem)
            elem.clear()
            if root is not None:
                root.clear()  # drop references to finished pages
    except ET.ParseError as exc:
        raise CorpusFormatError(
            f"{label} is not a valid MediaWiki XML dump ({exc})",
            hint="pass a *pages-articles*.xml or .xml.bz2 export; a truncated download must be fetched again",
        ) from None
    except (EOFError, OSError) as exc:
        raise CorpusFormatError(
            f"{label} could not be decompressed or read to the end ({exc})",
            hint="the file is truncated or corrupt: download it again",
        ) from None
    if not saw_root:
        raise CorpusFormatError(f"{label} is empty", hint="pass a MediaWiki XML dump")


def _page_from_element(elem: ET.Element) -> RawPage:
    title, ns, page_id, redirect, text = "", 0, "", None, ""
    for child in elem:
        name = _local(child.tag)
        if name == "title":
            title = child.text or ""
        elif name == "ns":
            ns = int((child.text or "0").strip() or 0)
        elif name == "id":
            page_id = (child.text or "").strip()
        elif name == "redirect":
            redirect = child.get("title") or ""
        elif name == "revision":
            for rev_child in child:
                if _local(rev_child.tag) == "text":
                    text = rev_child.text or ""
    return RawPage(page_id=page_id, title=title, namespace=ns, redirect=redirect, wikitext=text)
