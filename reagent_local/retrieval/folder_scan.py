"""Which files of a folder an index reads: a recursive walk with globs, hidden files and links left out.

``scan(root, include, exclude)`` lists the candidate files in path order (never following a
link: one that leads outside the folder, one that is broken and one that loops are named as
skipped, one inside is skipped because its target is read where it is) and the entries it
left out, with the reason. A pattern without ``/`` matches a file or folder name at any depth
(``*.md``, ``drafts``); one with ``/`` matches the path from the folder, where ``**`` crosses
folders (``docs/**/*.md``). Whether a file is binary is decided when it is read (its first
bytes), not here. A name that is not valid UTF-8 is shown (and stored) with its bad bytes
written as ``\\xNN``; the file itself is read under its real name.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Sequence

MAX_FILE_MB = 100  # larger files are skipped: a log or a data dump, not a document (retrieval.max_file_mb)
MAX_FILE_BYTES = MAX_FILE_MB * 1024 * 1024
KINDS = {".md": "markdown", ".markdown": "markdown", ".mdown": "markdown", ".mkd": "markdown", ".mdx": "markdown",
         ".html": "html", ".htm": "html", ".xhtml": "html", ".pdf": "pdf",
         ".docx": "docx", ".pptx": "pptx", ".xlsx": "xlsx", ".csv": "csv", ".tsv": "csv", ".odt": "odt",
         ".epub": "epub", ".ipynb": "ipynb", ".eml": "eml"}
# read as plain text when they are text; these are never text, so they are skipped unread
BINARY_SUFFIXES = frozenset(
    ".png .jpg .jpeg .gif .bmp .ico .webp .tif .tiff .psd .mp3 .mp4 .wav .ogg .flac .mov .avi .mkv .webm "
    ".zip .gz .tgz .bz2 .xz .zst .7z .rar .tar .whl .jar .so .dylib .dll .exe .o .a .pyc .class .bin .gguf "
    ".npy .npz .pt .onnx .faiss .duckdb .db .sqlite .parquet .woff .woff2 .ttf .otf .eot .doc .xls .xlsm .xlsb "
    ".ppt .pptm .docm .ods .odp .mobi .azw3 .msg".split())
# why an entry was left out; the reasons marked named are listed file by file, the others only counted
REASONS = {
    "hidden": "hidden",
    "excluded": "excluded by --include/--exclude",
    "binary": "binary",
    "link-outside": "a link leading outside the folder (not followed)",
    "link": "a link inside the folder (its target is read where it is)",
    "link-broken": "a broken link",
    "link-loop": "a link that loops",
    "special": "not a regular file",
    "too-large": "too large",
    "empty": "no text",
    "not-text": "binary content under a text name",
    "no-text-pdf": "no text layer (needs OCR)",
    "encrypted": "an encrypted PDF",
    "damaged": "a damaged PDF",
    "not-pdf": "not a PDF",
    "damaged-file": "a damaged file",
    "failed": "could not be read",
    "unreadable": "unreadable",
    "vanished": "removed during the build",
}
# listed file by file in the build's output and in `index info`; the others only counted
NAMED = frozenset({"link-outside", "link-broken", "link-loop", "special", "too-large", "empty", "not-text",
                   "no-text-pdf", "encrypted", "damaged", "not-pdf", "damaged-file", "failed", "unreadable",
                   "vanished"})


@dataclass(frozen=True)
class FileEntry:
    """A candidate file: its path from the folder (POSIX), its absolute path, kind, size and mtime."""

    rel: str
    path: Path
    kind: str  # markdown | html | pdf | text (text: read when its bytes are text)
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Skip:
    """An entry left out, why (a key of REASONS) and, for some, a detail (the link's target, the error)."""

    rel: str
    reason: str
    detail: str = ""

    def line(self) -> str:
        """``notes/x.pdf: an encrypted PDF (detail)``."""
        return f"{self.rel}: {REASONS.get(self.reason, self.reason)}" + (f" ({self.detail})" if self.detail else "")


@dataclass
class Scan:
    """What a walk found: the folder, its candidate files in path order, what it left out."""

    root: Path
    files: list[FileEntry] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    single: bool = False  # the source was one file, not a folder
    max_bytes: int = MAX_FILE_BYTES  # larger files are skipped and named

    def fingerprint(self, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> str:
        """A sha256 of the listing (paths, sizes, mtimes) and the patterns: equal listings, equal builds to resume."""
        digest = hashlib.sha256(f"{self.root}\0{list(include)}\0{list(exclude)}\n".encode("utf-8", "surrogateescape"))
        for entry in self.files:
            digest.update(f"{entry.rel}\0{entry.size}\0{entry.mtime_ns}\n".encode("utf-8", "surrogateescape"))
        return digest.hexdigest()


DOCUMENT_SUFFIXES = frozenset(KINDS) | {".txt", ".text", ".rst"}


def shown(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (held as surrogates by os) written as ``\\xNN``."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")


def is_document(path: Path) -> bool:
    """A source read as documents: a folder, or one file named like a document format read here."""
    return path.is_dir() or path.suffix.lower() in DOCUMENT_SUFFIXES


def kind_of(name: str) -> str:
    """The reader for a file name: markdown, html, pdf, binary (by suffix) or text (decided by its bytes)."""
    suffix = PurePosixPath(name.lower()).suffix
    if suffix in KINDS:
        return KINDS[suffix]
    return "binary" if suffix in BINARY_SUFFIXES else "text"


@lru_cache(maxsize=256)
def _pattern(pattern: str) -> re.Pattern[str]:
    """A glob as a regular expression over a POSIX path: ``**`` any folders, ``*`` and ``?`` within a name."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape("["))
                i += 1
            else:
                body = pattern[i + 1:end]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
                i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches(pattern: str, rel: str) -> bool:
    """Whether a glob matches a path from the folder (see the module's docstring)."""
    pattern = pattern.strip()
    pattern = pattern[2:] if pattern.startswith("./") else pattern
    if "/" in pattern.rstrip("/"):
        return bool(_pattern(pattern.strip("/")).match(rel))
    regex = _pattern(pattern.rstrip("/"))
    return any(regex.match(part) for part in rel.split("/"))


def selected(rel: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """A file is read when it matches an include pattern (or none is given) and no exclude pattern."""
    if include and not any(matches(p, rel) for p in include):
        return False
    return not any(matches(p, rel) for p in exclude)


def _inside(target: str, root: Path) -> bool:
    try:
        return os.path.commonpath([target, str(root)]) == str(root)
    except ValueError:  # another drive
        return False


def scan(source: Path, include: Sequence[str] = (), exclude: Sequence[str] = (),
         max_bytes: int = MAX_FILE_BYTES) -> Scan:
    """The candidate files of a folder (or of one file) and what was left out, in path order."""
    source = Path(source).expanduser()
    if source.is_file():  # one file given by name: read it whatever its name
        root = source.resolve().parent
        found = Scan(root=root, single=True, max_bytes=max_bytes)
        _consider(found, source.resolve(), shown(source.resolve().name), os.stat(source.resolve()), include=(),
                  exclude=())
        return found
    root = source.resolve()
    found = Scan(root=root, max_bytes=max_bytes)
    _walk(found, root, "", include, exclude)
    return found


def _link(found: Scan, path: str, rel: str) -> Skip:
    """Why a link is left out: it leads outside, it is broken, it loops, or its target is read where it is."""
    try:
        os.stat(path)
    except OSError as exc:
        try:
            target = f"-> {shown(os.readlink(path))}"
        except OSError:
            target = ""
        return Skip(rel, "link-loop" if exc.errno == errno.ELOOP else "link-broken", target)
    target = os.path.realpath(path)
    if _inside(target, found.root):
        return Skip(rel, "link")
    return Skip(rel, "link-outside", f"-> {shown(target)}")


def _walk(found: Scan, folder: Path, prefix: str, include: Sequence[str], exclude: Sequence[str]) -> None:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        found.skipped.append(Skip(prefix.rstrip("/") or ".", "unreadable", exc.strerror or str(exc)))
        return
    for entry in entries:
        rel = prefix + shown(entry.name)
        if entry.name.startswith("."):
            found.skipped.append(Skip(rel, "hidden"))
            continue
        if entry.is_symlink():
            found.skipped.append(_link(found, entry.path, rel))
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            found.skipped.append(Skip(rel, "vanished"))
            continue
        except OSError as exc:
            found.skipped.append(Skip(rel, "unreadable", exc.strerror or str(exc)))
            continue
        if stat.S_ISDIR(info.st_mode):
            if exclude and any(matches(p, rel) for p in exclude if "/" not in p.rstrip("/")):
                found.skipped.append(Skip(rel, "excluded"))
                continue
            _walk(found, Path(entry.path), rel + "/", include, exclude)
            continue
        _consider(found, Path(entry.path), rel, info, include, exclude)


def _consider(found: Scan, path: Path, rel: str, info: os.stat_result, include: Sequence[str],
              exclude: Sequence[str]) -> None:
    """Add one file to the candidates, or to the skipped entries with its reason."""
    if not stat.S_ISREG(info.st_mode):
        found.skipped.append(Skip(rel, "special", _special(info.st_mode)))
    elif not selected(rel, include, exclude):
        found.skipped.append(Skip(rel, "excluded"))
    elif info.st_size > found.max_bytes:
        found.skipped.append(Skip(rel, "too-large", f"{megabytes(info.st_size)}, over the limit of "
                                                    f"{megabytes(found.max_bytes)}: retrieval.max_file_mb"))
    elif kind_of(rel) == "binary":
        found.skipped.append(Skip(rel, "binary"))
    else:
        found.files.append(FileEntry(rel, path, kind_of(rel), info.st_size, info.st_mtime_ns))


def megabytes(size: int) -> str:
    """``12.5 MB``, ``0.48 MB``."""
    return f"{size / 1048576:,.3g} MB" if size < 1048576 * 100 else f"{size / 1048576:,.0f} MB"


def _special(mode: int) -> str:
    """What a file that is not a regular one is: a FIFO, a socket, a device."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return ""


def counts(skipped: Sequence[Skip]) -> dict[str, int]:
    """Skipped entries counted by reason, in REASONS' order."""
    tally = {reason: 0 for reason in REASONS}
    for skip in skipped:
        tally[skip.reason] = tally.get(skip.reason, 0) + 1
    return {reason: n for reason, n in tally.items() if n}


def summary(skipped: Sequence[Skip]) -> str:
    """``2 hidden, 1 binary, 1 an encrypted PDF``: the counts by reason in words ('' when none)."""
    return ", ".join(f"{n} {REASONS.get(reason, reason)}" for reason, n in counts(skipped).items())
