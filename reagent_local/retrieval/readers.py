"""Corpus readers: each streams ``Document``s out of one source file.

Formats: a MediaWiki XML dump (``wikixml``), JSONL of ``{"title", "text"}``, a JSON
array of such objects (``json``), DPR-style TSV (``id, text, title``), and the
paragraphs of a benchmark file (``hotpotqa``, ``2wiki``, ``musique``: the open corpus).
Dump, JSONL and TSV readers stream in constant memory; a JSON array and a benchmark
file are one JSON document each and are read whole.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import CorpusFormatError, DatasetFormatError
from .passages import split_passages
from .wikidump import RawPage, iter_pages, open_maybe_compressed
from .wikitext import strip_wikitext

FORMATS = ("wikixml", "jsonl", "json", "tsv", "hotpotqa", "2wiki", "musique")
BENCHMARK_FORMATS = ("hotpotqa", "2wiki", "musique")
JSON_SHAPE = ('a JSON corpus is an array of objects like {"title": "...", "text": "..."} '
              "(for a benchmark file pass --format hotpotqa, 2wiki or musique)")


@dataclass(frozen=True)
class Document:
    """A titled text; ``split`` False keeps it as one passage (benchmark paragraphs, DPR rows)."""

    title: str
    text: str
    split: bool = True


def _head(path: Path, size: int = 4096) -> bytes:
    """The first bytes of a file, decompressed when it is .bz2/.gz."""
    try:
        with open_maybe_compressed(path) as stream:
            return stream.read(size)
    except (EOFError, OSError) as exc:
        raise CorpusFormatError(
            f"{path} could not be decompressed ({exc})", hint="the file is truncated or corrupt: fetch it again"
        ) from None


def detect_format(path: Path) -> str:
    """Guess a source's format from its first bytes; raise CorpusFormatError when unsure."""
    path = Path(path)
    head = _head(path).lstrip(b"\xef\xbb\xbf").lstrip()
    if not head:
        raise CorpusFormatError(f"{path} is empty", hint="pass a MediaWiki dump, a JSONL or TSV corpus, or a benchmark file")
    lowered = head[:2048].lower()
    if lowered.startswith(b"<mediawiki") or (lowered.startswith(b"<?xml") and b"<mediawiki" in lowered):
        return "wikixml"
    if lowered.startswith((b"<!doctype html", b"<html")) or b"<html" in lowered[:512]:
        raise CorpusFormatError(
            f"{path} is an HTML page, not a corpus (a download that returned a web page?)",
            hint="download the dump file itself (*pages-articles*.xml.bz2)",
        )
    if head.startswith(b"<"):
        raise CorpusFormatError(f"{path} is XML but not a MediaWiki export", hint="pass a *pages-articles*.xml[.bz2] dump")
    if head.startswith(b"["):
        return _detect_array(path)
    if head.startswith(b"{"):
        first = head.split(b"\n", 1)[0]
        if b'"paragraphs"' in first and b'"question"' in first:
            return "musique"
        return "jsonl"
    first_line = head.split(b"\n", 1)[0].decode("utf-8", "replace")
    if "\t" in first_line:
        return "tsv"
    raise CorpusFormatError(
        f"cannot tell the format of {path}",
        hint=f"pass --format with one of {', '.join(FORMATS)}",
    )


def _load_array(path: Path) -> list:
    """The whole JSON array in ``path``; bad JSON or another top-level value is a CorpusFormatError."""
    try:
        with open_maybe_compressed(path) as raw:
            data = json.loads(raw.read().decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise CorpusFormatError(f"{path} is not UTF-8 text", hint="pass a UTF-8 JSON file") from None
    except json.JSONDecodeError as exc:
        raise CorpusFormatError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
            hint=JSON_SHAPE,
        ) from None
    except (EOFError, OSError) as exc:
        raise CorpusFormatError(f"{path} could not be read ({exc})", hint="the file is truncated or corrupt") from None
    if not isinstance(data, list):
        raise CorpusFormatError(f"{path} holds a JSON {type(data).__name__}, not an array", hint=JSON_SHAPE)
    return data


def _detect_array(path: Path) -> str:
    """A JSON array is a benchmark file when its first record has a benchmark's context, else ``json``."""
    from ..datasets import detect_records

    data = _load_array(path)
    if data and isinstance(data[0], dict) and not {"title", "text"} <= data[0].keys():
        found = detect_records(data)
        if found is not None:
            return found
    return "json"


def read_json(path: Path) -> Iterator[Document]:
    """A JSON array of ``{"title": ..., "text": ...}`` objects, both strings."""
    for number, obj in enumerate(_load_array(path), 1):
        missing = [key for key in ("title", "text") if not isinstance(obj, dict) or not isinstance(obj.get(key), str)]
        if missing:
            what = f"has no string field {' or '.join(repr(k) for k in missing)}" if isinstance(obj, dict) else (
                f"is a {type(obj).__name__}, not an object")
            raise CorpusFormatError(f"{path}, item {number} of the array, {what}", hint=JSON_SHAPE)
        yield Document(obj["title"], obj["text"])


def read_wikixml(path: Path) -> Iterator[Document]:
    """Main-namespace articles of a MediaWiki dump as plain text; redirects skipped.

    Every article is yielded, even one whose text strips to nothing, so that
    "the first N articles" means the same here as in the knowledge-graph builder.
    """
    return articles(iter_pages(path))


def articles(pages: Iterable[RawPage]) -> Iterator[Document]:
    """The articles among dump pages, as plain-text documents (what ``read_wikixml`` yields)."""
    for page in pages:
        if page.is_article:
            yield Document(page.title, strip_wikitext(page.wikitext))


def document_passages(document: Document) -> list[str]:
    """The passages an index holds for one document, in order (empty pieces dropped)."""
    pieces = split_passages(document.text) if document.split else [document.text.strip()]
    return [text for text in pieces if text]


def read_jsonl(path: Path) -> Iterator[Document]:
    """One ``{"title": ..., "text": ...}`` object a line."""
    with open_maybe_compressed(path) as raw, io.TextIOWrapper(raw, encoding="utf-8") as stream:
        try:
            for lineno, line in enumerate(stream, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise CorpusFormatError(
                        f"{path}, line {lineno}, is not JSON ({exc.msg})",
                        hint='each line must be one object like {"title": "...", "text": "..."}',
                    ) from None
                if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
                    raise CorpusFormatError(
                        f"{path}, line {lineno}, has no string field \"text\"",
                        hint='each line must be one object like {"title": "...", "text": "..."}',
                    )
                yield Document(str(obj.get("title") or ""), obj["text"])
        except UnicodeDecodeError:
            raise CorpusFormatError(f"{path} is not UTF-8 text", hint="pass a UTF-8 JSONL file") from None


def read_tsv(path: Path) -> Iterator[Document]:
    """DPR-style ``id<TAB>text<TAB>title`` rows (a header row is skipped); each row one passage."""
    csv.field_size_limit(sys.maxsize)
    with open_maybe_compressed(path) as raw, io.TextIOWrapper(raw, encoding="utf-8", newline="") as stream:
        reader = csv.reader(stream, delimiter="\t")
        try:
            for lineno, row in enumerate(reader, 1):
                if lineno == 1 and [c.strip().lower() for c in row[:3]] == ["id", "text", "title"]:
                    continue
                if not row:
                    continue
                if len(row) < 3:
                    raise CorpusFormatError(
                        f"{path}, line {lineno}, has {len(row)} column(s), expected 3 (id, text, title)",
                        hint="pass a DPR-style TSV, or --format jsonl for JSON lines",
                    )
                yield Document(row[2], row[1], split=False)
        except (UnicodeDecodeError, csv.Error) as exc:
            raise CorpusFormatError(f"{path} is not a readable TSV file ({exc})", hint="pass a UTF-8 DPR-style TSV") from None


def read_benchmark(path: Path, dataset: str) -> Iterator[Document]:
    """The open corpus of a benchmark file: its questions' paragraphs, deduplicated, unsplit."""
    from ..datasets import load_questions, open_corpus

    try:
        questions = load_questions(path, dataset)
    except DatasetFormatError as exc:
        raise CorpusFormatError(exc.message, hint=exc.hint) from None
    for paragraph in open_corpus(questions):
        yield Document(paragraph.title, paragraph.text, split=False)


def read_documents(path: Path, fmt: str) -> Iterator[Document]:
    """Stream the documents of ``path`` read as ``fmt`` (one of FORMATS)."""
    if fmt == "wikixml":
        return read_wikixml(path)
    if fmt == "jsonl":
        return read_jsonl(path)
    if fmt == "json":
        return read_json(path)
    if fmt == "tsv":
        return read_tsv(path)
    if fmt in BENCHMARK_FORMATS:
        return read_benchmark(path, fmt)
    raise CorpusFormatError(f"unknown format {fmt!r}", hint=f"choose one of auto, {', '.join(FORMATS)}")
