"""The words BM25 indexes and searches, by tokenizer version (recorded with every BM25 index).

Version 1 is bm25s's splitter: lower case, runs of two or more word characters. It finds
no "8.2.0" (three one-digit words) and keeps "foo_bar" and "getUserName" only whole.

Version 2 adds technical text's own tokens to version 1's words, so both the whole and its
parts are searchable:

- dotted, dashed, slashed and underscored compounds whole: versions ``8.2.0`` (and ``v8.2.0``
  also as ``8.2.0``), dotted names ``os.path.join``, paths ``src/foo.py`` (a leading ``/``,
  ``./`` or ``~/`` dropped, and each compound segment ``foo.py`` too), ``well-known``;
- command-line flags whole: ``--force``, ``-k`` (their words, ``force``, are version 1's);
- the parts of identifiers: ``snake_case`` gives ``snake`` and ``case``, ``getUserName`` gives
  ``get``, ``user``, ``name``, ``HTTPServer`` gives ``http`` and ``server``.

A token made only of word characters is stemmed as version 1's words are; a token with
punctuation in it (``8.2.0``, ``--force``, ``src/foo.py``) is kept exact. Queries are split
by the version their index was built with, so an index built before keeps its behaviour.
"""

from __future__ import annotations

import re
from typing import Callable

LATEST = 2  # what new indexes are built with
LEGACY = 1  # what an index without a recorded version was built with

_WORDS = re.compile(r"(?u)\b\w\w+\b").findall  # bm25s's default splitter (version 1)
# word runs joined by . _ - / (one or more), optionally after slashes, ./, ../ or ~/ (a URL's //host/path too);
# never starting inside another token
_COMPOUND = re.compile(r"(?<![\w.\-~/])(?:~|\.{1,2})?/*\w+(?:[._/\-]+\w+)+")
_FLAG = re.compile(r"(?<![\w\-])--?[A-Za-z][\w\-]*")
_IDENTIFIER = re.compile(r"\w+")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")  # a case change inside a word: getUser, HTTPServer
_CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W\d_A-Za-z]+")
_PLAIN = re.compile(r"\w+")  # a token to stem; anything else is kept exact
_VERSION = re.compile(r"v\d+(?:\.\d+)+")


def words_v1(text: str) -> list[str]:
    """Version 1: bm25s's words."""
    return _WORDS(text.lower())


def _identifier_parts(run: str) -> list[str]:
    """The words inside one identifier (snake_case, CamelCase), lower case, two characters or more."""
    pieces = [p for p in run.split("_") if p]
    if len(pieces) < 2 and not _CAMEL.search(run):
        return []
    out = []
    for piece in pieces:
        parts = _CAMEL_PART.findall(piece) if _CAMEL.search(piece) else [piece]
        out.extend(part.lower() for part in parts if len(part) >= 2)
    return out if len(out) > 1 or len(pieces) > 1 else []


def words_v2(text: str) -> list[str]:
    """Version 2: version 1's words, then compounds, flags and identifier parts (see the module)."""
    out = words_v1(text)
    for match in _COMPOUND.finditer(text):
        whole = match.group().lower().lstrip("~./")
        if _PLAIN.fullmatch(whole):
            continue  # foo_bar: already one of version 1's words
        out.append(whole)
        if _VERSION.fullmatch(whole):
            out.append(whole[1:])
        if "/" in whole:
            out.extend(s for s in whole.split("/") if s and not _PLAIN.fullmatch(s))
    out.extend(flag.lower() for flag in _FLAG.findall(text))
    for run in _IDENTIFIER.findall(text):
        out.extend(_identifier_parts(run))
    return out


TOKENIZERS: dict[int, Callable[[str], list[str]]] = {1: words_v1, 2: words_v2}


def splitter(version: int) -> Callable[[str], list[str]]:
    """The word splitter of a tokenizer version; ValueError for one this code does not know."""
    try:
        return TOKENIZERS[int(version)]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"unknown BM25 tokenizer version {version!r} (this version of reagent-local knows "
                         f"{', '.join(map(str, TOKENIZERS))})") from None


def stemmable(token: str) -> bool:
    """Whether a token is a word to stem (only word characters), not an exact compound or flag."""
    return _PLAIN.fullmatch(token) is not None
