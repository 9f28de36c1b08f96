"""Cutting a corpus into shards that workers read, chunk and embed on their own.

Three kinds, chosen by the source:

- ``streams``: a multistream .bz2 dump (Wikimedia's ``*-pages-articles-multistream.xml.bz2``,
  100 pages a bz2 stream). A shard is a run of whole streams: a byte range that the
  worker reads and decompresses itself, so the file must be at the same path on every
  machine (a shared folder, or a copy). Finding the streams reads the file once
  without decompressing it.
- ``pages``: any other dump (.xml, single-stream .bz2 or .gz). This process decompresses
  it once and cuts it after every N-th ``</page>``; each shard's XML travels to a worker.
- ``documents``: JSONL, JSON, TSV and benchmark files: N documents a shard, read here.

Shards are numbered in source order and merged in that order, so the passages come out
exactly as a single-process build reads them.
"""

from __future__ import annotations

import bz2
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..errors import CorpusFormatError
from ..retrieval.readers import Document, articles, read_documents
from ..retrieval.wikidump import RawPage, open_maybe_compressed, parse_pages

PAGES_PER_STREAM = 100  # what Wikimedia puts in one stream of a multistream dump
_SIGNATURE = re.compile(rb"BZh[1-9]1AY&SY")  # a bz2 stream header followed by its first block's magic
_SCAN_CHUNK = 64 << 20
_READ_CHUNK = 1 << 20
_PAGE_END = b"</page>"


@dataclass(frozen=True)
class Shard:
    """One piece of the source: pages or documents [start, stop), or bytes [start, stop) for streams."""

    number: int
    kind: str  # "streams" | "pages" | "documents"
    start: int
    stop: int

    def describe(self, total: int | None = None) -> str:
        """'shard 7 of 40 (pages 3500-3999)' and the like, for progress and errors."""
        of = f" of {total}" if total else ""
        what = {"streams": "bytes", "pages": "pages", "documents": "documents"}[self.kind]
        return f"shard {self.number}{of} ({what} {self.start}-{self.stop - 1})"


def stream_offsets(path: Path) -> list[int]:
    """Byte offsets where the bz2 streams of a file begin ([0] for an ordinary .bz2)."""
    offsets: list[int] = []
    overlap = 9  # a signature cut by a chunk boundary is found in the next round (and, 10 bytes long, never twice)
    with open(path, "rb") as handle:
        base, tail = 0, b""
        while True:
            chunk = handle.read(_SCAN_CHUNK)
            if not chunk:
                return offsets
            data = tail + chunk
            start = base - len(tail)
            offsets.extend(start + m.start() for m in _SIGNATURE.finditer(data))
            tail = data[-overlap:]
            base += len(chunk)


def read_streams(path: str | Path, start: int, stop: int) -> bytes:
    """The decompressed bytes of the whole bz2 streams in bytes [start, stop) of a file."""
    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read(stop - start)
    try:
        return bz2.decompress(data)
    except (OSError, ValueError, EOFError) as exc:
        raise CorpusFormatError(f"{path}, bytes {start}-{stop - 1}, could not be decompressed ({exc})",
                                hint="the file is truncated or corrupt: download it again") from None


def _page_aligned(text: bytes) -> bool:
    body = text.strip()
    return body.startswith(b"<page>") and body.endswith(_PAGE_END)


def multistream_offsets(path: Path) -> list[int] | None:
    """The stream offsets of a Wikimedia-style multistream dump, or None for any other file.

    Wikimedia's layout: a first stream with the header (``<mediawiki>``, ``<siteinfo>``),
    streams of whole pages, a last stream closing ``</mediawiki>``. A file whose streams
    cut through pages (pbzip2's, for one) is read page by page instead.
    """
    with open(path, "rb") as probe:
        if probe.read(3) != b"BZh":
            return None
    offsets = stream_offsets(path)
    if len(offsets) < 3:
        return None
    size = Path(path).stat().st_size
    ends = offsets[1:] + [size]
    for i in {1, len(offsets) - 2}:  # the first and the last stream of pages
        try:
            if not _page_aligned(read_streams(path, offsets[i], ends[i])):
                return None
        except CorpusFormatError:
            return None
    return offsets


def plan_streams(offsets: list[int], size: int, shard_pages: int) -> list[Shard]:
    """Shards of whole streams, about ``shard_pages`` pages each (100 pages a stream)."""
    per = max(1, round(shard_pages / PAGES_PER_STREAM))
    bounds = offsets[::per] + [size]
    return [Shard(n, "streams", bounds[n], bounds[n + 1]) for n in range(len(bounds) - 1)]


def iter_page_shards(path: Path, shard_pages: int, skip: Callable[[int], bool]) -> Iterator[tuple[Shard, bytes | None]]:
    """Cut a dump read here into shards of ``shard_pages`` pages; the XML of each (None where ``skip(n)``)."""
    number, first_page, count, search = 0, 0, 0, 0
    buffer = bytearray()
    with open_maybe_compressed(path) as stream:
        while True:
            end = buffer.find(_PAGE_END, search)
            if end < 0:
                chunk = stream.read(_READ_CHUNK)
                if not chunk:
                    break
                search = max(0, len(buffer) - len(_PAGE_END))
                buffer += chunk
                continue
            count += 1
            search = end + len(_PAGE_END)
            if count == shard_pages:
                yield Shard(number, "pages", first_page, first_page + count), (
                    None if skip(number) else bytes(buffer[:search]))
                del buffer[:search]
                number, first_page, count, search = number + 1, first_page + count, 0, 0
    if count:
        yield Shard(number, "pages", first_page, first_page + count), None if skip(number) else bytes(buffer)


def iter_document_shards(path: Path, fmt: str, shard_docs: int,
                         skip: Callable[[int], bool]) -> Iterator[tuple[Shard, list[Document] | None]]:
    """Batches of ``shard_docs`` documents read here (None where ``skip(n)``)."""
    number, batch, first = 0, [], 0
    for document in read_documents(path, fmt):
        batch.append(document)
        if len(batch) == shard_docs:
            yield Shard(number, "documents", first, first + len(batch)), None if skip(number) else batch
            number, first, batch = number + 1, first + len(batch), []
    if batch:
        yield Shard(number, "documents", first, first + len(batch)), None if skip(number) else batch


def _wrap_pages(fragment: bytes, label: str) -> bytes:
    """The pages of a piece of a dump inside a bare ``<mediawiki>`` root, so it parses on its own."""
    first, last = fragment.find(b"<page>"), fragment.rfind(_PAGE_END)
    if first < 0 or last < 0:
        return b"<mediawiki></mediawiki>"
    if _PAGE_END in fragment[:first] or b"<page>" in fragment[last:]:
        raise CorpusFormatError(f"{label} does not begin and end at page boundaries",
                                hint="pass a Wikimedia multistream dump, or an ordinary .xml/.bz2 dump")
    return b"<mediawiki>" + fragment[first:last + len(_PAGE_END)] + b"</mediawiki>"


def shard_pages(source: str, shard: Shard, payload: bytes | None) -> list[RawPage]:
    """The pages of a dump's shard, in source order."""
    fragment = read_streams(source, shard.start, shard.stop) if shard.kind == "streams" else payload
    label = f"{source}, {shard.describe()}"
    return list(parse_pages(io.BytesIO(_wrap_pages(fragment or b"", label)), label))


def shard_documents(source: str, shard: Shard, payload: bytes | list[Document] | None,
                    pages: list[RawPage] | None = None) -> tuple[list[Document], int]:
    """The documents of one shard, in source order, and the pages it held (the documents for other formats)."""
    if shard.kind == "documents":
        documents = list(payload or [])  # type: ignore[arg-type]
        return documents, len(documents)
    if pages is None:
        pages = shard_pages(source, shard, payload)  # type: ignore[arg-type]
    return list(articles(pages)), len(pages)
