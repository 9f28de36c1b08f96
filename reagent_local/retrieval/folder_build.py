"""The passage step of an index built from a folder of documents, fresh or as an update.

``build_index`` runs it in the build folder, under the index's build lock, like any passage
step: it reads every candidate file of the scan (in path order), writes the passages with
their origins and the ``files`` table, and returns the folder's figures for the manifest.
A file that cannot be read (binary, no text, an encrypted or damaged PDF, removed since the
scan) is skipped with one line naming it; the rest is built.

As an update (``previous``: the index being replaced), a file whose sha256 equals the one
the index recorded is not read again (its passages are copied), and every passage whose
indexed text (title and text) the index already holds keeps its vector: only new text is
embedded. The step then writes every embedding shard itself, so the build's embedding step
finds them done; FAISS and BM25 are built from scratch as in any build, and the new index
replaces the old one in one swap, so a kill at any point leaves the old index served.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..errors import IndexBuildError
from .doc_passages import READER_VERSION, read_document
from .embed import Embedder, HashEmbedder
from .folder_scan import MAX_FILE_BYTES, NAMED, FileEntry, Scan, Skip, counts, megabytes, scan, summary
from .layout import MANIFEST, read_manifest
from .passages import index_text
from .pdf_text import Unreadable
from .progress import Reporter
from .store import FILENAME as PASSAGES_FILE
from .store import PassageStore, PassageWriter

DOCS = "docs"  # the format name of a folder (or one file) of documents
READ_FORMATS = "Markdown, text, HTML, PDF, docx, pptx, xlsx, csv, odt, epub, ipynb or eml"
LISTED = 200  # file names kept per list in the manifest (counts are always complete)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _text_key(title: str, text: str) -> bytes:
    return hashlib.blake2b(index_text(title, text).encode("utf-8"), digest_size=16).digest()


@dataclass
class Tally:
    """What the step did, file by file."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)


class Previous:
    """The index an update replaces: its files, passages and vectors (opened read-only)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.manifest = read_manifest(path)
        self.store = PassageStore(path / PASSAGES_FILE)
        self.files = {f["path"]: f for f in self.store.files()}
        self.same_reader = (self.manifest.get("folder") or {}).get("reader_version") == READER_VERSION
        self._vectors: np.ndarray | None = None

    def vectors(self, work: Path) -> np.ndarray:
        """Every vector of the old index in row order, memory-mapped from a file in ``work``."""
        if self._vectors is None:
            self._vectors = _old_vectors(self.path, work / "previous-vectors.npy")
        return self._vectors

    def close(self) -> None:
        """Release the old passage table."""
        self.store.close()


def _old_vectors(index: Path, target: Path) -> np.ndarray:
    """The vectors of an index: kept shards (``vectors/``, IVF-PQ) or read back from an exact FAISS index."""
    kept = sorted((index / "vectors").glob("shard-*.npy")) if (index / "vectors").is_dir() else []
    if kept:
        blocks = [np.load(p, mmap_mode="r") for p in kept]
        count, dimension = sum(b.shape[0] for b in blocks), blocks[0].shape[1]
        out = np.lib.format.open_memmap(target, mode="w+", dtype=np.float32, shape=(count, dimension))
        start = 0
        for block in blocks:
            out[start:start + block.shape[0]] = block
            start += block.shape[0]
        out.flush()
        return out
    import faiss

    dense = faiss.read_index(str(index / "dense.faiss"), faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY)
    if faiss.try_extract_index_ivf(dense) is not None:
        raise IndexBuildError(f"index {index.name!r} holds IVF-PQ codes without its vectors, so an update would re-embed "
                              "everything", hint=f"rebuild it with `reagent index build ... --name {index.name} --force`")
    out = np.lib.format.open_memmap(target, mode="w+", dtype=np.float32, shape=(dense.ntotal, dense.d))
    for start in range(0, dense.ntotal, 4096):
        size = min(4096, dense.ntotal - start)
        out[start:start + size] = dense.reconstruct_n(start, size)
    out.flush()
    return out


def scan_source(source: Path, include: Sequence[str], exclude: Sequence[str], *,
                max_bytes: int = MAX_FILE_BYTES) -> Scan:
    """The files a folder build reads; an empty folder is refused here, before any work."""
    listing = scan(source, include, exclude, max_bytes)
    if not listing.files and not listing.skipped:
        raise IndexBuildError(f"{listing.root} is empty: no files to read",
                              hint=f"point at a folder of documents ({READ_FORMATS})")
    return listing


def check_updatable(final: Path) -> None:
    """An update replaces only an index built from a folder of documents."""
    if not (final / MANIFEST).is_file():
        return  # nothing to update: the update builds it
    manifest = read_manifest(final)
    if manifest.get("format") != DOCS:
        source = (manifest.get("source") or {}).get("path", "its source")
        raise IndexBuildError(f"index {final.name!r} was built from {source} read as {manifest.get('format')}, "
                              "not from a folder of documents, so it cannot be updated",
                              hint=f"rebuild it with `reagent index build SOURCE --name {final.name} --force`")


def _read(entry: FileEntry, max_bytes: int) -> bytes:
    """A file's bytes; a file that became a FIFO or a device since the scan is refused, not waited on."""
    fd = os.open(entry.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _NotRegular()
        data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _TooLarge(len(data))
    return data


class _NotRegular(Exception):
    """The path is no longer a regular file."""


class _TooLarge(Exception):
    """The file grew past the size limit since the scan."""


def _short(text: str) -> str:
    return " ".join(text.split())[:160]


class FolderStep:
    """A PassageStep (see build.PassageStep) over a scanned folder; ``final`` set: an update of that index."""

    def __init__(self, scan: Scan, *, embedder: Embedder | HashEmbedder, final: Path | None,
                 shards: tuple[int, Callable[[Path, int], Path]], log: Callable[[str], None],
                 options: dict) -> None:
        self.scan, self.embedder, self.final, self.log, self.options = scan, embedder, final, log, options
        self.shard_size, self.shard_path = shards

    def __call__(self, *, source: Path, fmt: str, limit: int | None, folder: Path, key: dict,
                 report: Reporter) -> tuple[int, int, dict]:
        """Write the passage table (and, updating, every embedding shard); return (files, passages, manifest extra)."""
        previous = Previous(self.final) if self.final is not None and (self.final / MANIFEST).is_file() else None
        try:
            began = time.perf_counter()
            tally, documents, count = self._passages(folder, limit, previous, report)
            extra = {"folder": self._figures(tally, documents, count, time.perf_counter() - began)}
            if previous is not None:
                extra["update"] = self._update(folder, count, previous, tally, report)
            return documents, count, extra
        finally:
            if previous is not None:
                previous.close()

    def _passages(self, folder: Path, limit: int | None, previous: Previous | None,
                  report: Reporter) -> tuple[Tally, int, int]:
        writer = PassageWriter(folder / PASSAGES_FILE, origins=True)
        tally = Tally(skipped=list(self.scan.skipped))
        for skip in tally.skipped:
            if skip.reason in NAMED:
                self.log(f"skipped {skip.line()}")
        handle = report.step("reading files", len(self.scan.files), "files")
        documents = 0
        try:
            for entry in self.scan.files:
                if limit is not None and documents >= limit:
                    break
                report.advance(handle)
                skip = self._add(writer, entry, previous, tally)
                if skip is not None:
                    tally.skipped.append(skip)
                    if skip.reason in NAMED:
                        self.log(f"skipped {skip.line()}")
                    continue
                documents += 1
            report.finish(handle)
            if writer.count == 0:
                raise self._nothing_readable(tally)
            count = writer.finish()
        except BaseException:
            writer.abort()
            raise
        if previous is not None:
            seen = set(tally.added) | set(tally.changed) | set(tally.unchanged)
            tally.deleted = sorted(set(previous.files) - seen)
        left_out = f"; skipped {summary(tally.skipped)}" if tally.skipped else ""
        self.log(f"read {documents} file{'s' if documents != 1 else ''} of {self.scan.root} into {count} passages{left_out}")
        return tally, documents, count

    def _add(self, writer: PassageWriter, entry: FileEntry, previous: Previous | None, tally: Tally) -> Skip | None:
        """Write one file's passages; the Skip when it is left out."""
        try:
            data = _read(entry, self.scan.max_bytes)
        except FileNotFoundError:
            return Skip(entry.rel, "vanished")
        except OSError as exc:
            return Skip(entry.rel, "unreadable", exc.strerror or str(exc))
        except _NotRegular:
            return Skip(entry.rel, "special", "it changed since the listing")
        except _TooLarge:
            return Skip(entry.rel, "too-large", f"over the limit of {megabytes(self.scan.max_bytes)}: "
                                                "retrieval.max_file_mb")
        sha256 = _sha256(data)
        old = previous.files.get(entry.rel) if previous is not None else None
        if old is not None and old["sha256"] == sha256 and previous.same_reader:
            title = old["title"]
            pairs = [(p.text, p.origin) for p in previous.store.passages(old["first_row"], old["first_row"] + old["passages"])]
            tally.unchanged.append(entry.rel)
        else:
            try:
                document = read_document(entry.rel, data, entry.kind)
            except Unreadable as exc:
                return Skip(entry.rel, exc.reason, exc.detail)
            except Exception as exc:  # noqa: BLE001 - no file may stop a build: a reader's bug skips that file
                return Skip(entry.rel, "failed", f"{type(exc).__name__}: {_short(str(exc))}")
            title, pairs = document.title, [(p.text, p.origin) for p in document.passages]
            (tally.changed if old is not None else tally.added).append(entry.rel)
        first = writer.count
        for text, origin in pairs:
            writer.add(title, text, origin)
        writer.add_file(entry.rel, sha256, len(data), entry.kind, title, first, len(pairs))
        return None

    def _nothing_readable(self, tally: Tally) -> IndexBuildError:
        where = self.scan.root / self.scan.files[0].rel if self.scan.single and self.scan.files else self.scan.root
        if not tally.skipped:
            return IndexBuildError(f"{where} is empty: no files to read",
                                   hint=f"point at a folder of documents ({READ_FORMATS})")
        return IndexBuildError(f"nothing readable in {where}: skipped {summary(tally.skipped)}",
                               hint=f"check --include/--exclude, or point at a folder of documents ({READ_FORMATS}; "
                                    "scanned PDFs need OCR first)")

    def _figures(self, tally: Tally, documents: int, count: int, seconds: float) -> dict:
        named = [s for s in tally.skipped if s.reason in NAMED or s.reason in ("binary", "empty")]
        return {**self.options, "root": str(self.scan.root), "single_file": self.scan.single,
                "reader_version": READER_VERSION, "files": documents, "passages": count,
                "read_seconds": round(seconds, 3),
                "files_per_second": round(documents / seconds, 1) if seconds else None,
                "skipped": counts(tally.skipped),
                "skipped_files": [{"path": s.rel, "reason": s.reason, "detail": s.detail} for s in named[:LISTED]]}

    def _update(self, folder: Path, count: int, previous: Previous, tally: Tally, report: Reporter) -> dict:
        """Write every embedding shard, reusing the old index's vectors for text it already holds."""
        began = time.perf_counter()
        old_embedder = previous.manifest.get("embedder") or {}
        reuse = (old_embedder.get("name"), old_embedder.get("backend", "torch")) == (self.embedder.name, self.embedder.backend)
        if not reuse:
            self.log(f"index {previous.path.name!r} was embedded by {old_embedder.get('name')} on "
                     f"{old_embedder.get('backend', 'torch')}: every passage is embedded again")
        lookup: dict[bytes, int] = {}
        if reuse:
            total = int(previous.manifest.get("passages") or 0)
            for row, (title, text) in enumerate(previous.store.iter_range(0, total)):
                lookup.setdefault(_text_key(title, text), row)
        store = PassageStore(folder / PASSAGES_FILE)
        (folder / "embeddings").mkdir(exist_ok=True)
        handle = report.step("embedding new passages", count, "passages")
        reused = embedded = 0
        embed_seconds = 0.0
        try:
            for number, start in enumerate(range(0, count, self.shard_size)):
                stop = min(count, start + self.shard_size)
                path = self.shard_path(folder, number)
                if path.is_file() and np.load(path, mmap_mode="r").shape[0] == stop - start:
                    report.skip(handle, stop - start)  # done before the update was interrupted: not in the rate
                    continue
                pairs = list(store.iter_range(start, stop))
                rows = [lookup.get(_text_key(title, text)) for title, text in pairs]
                fresh = [i for i, row in enumerate(rows) if row is None]
                vectors = np.zeros((stop - start, self.embedder.dimension), dtype=np.float32)
                kept = [i for i, row in enumerate(rows) if row is not None]
                if kept:
                    old = previous.vectors(folder)
                    vectors[kept] = old[np.array([rows[i] for i in kept])]
                if fresh:
                    t = time.perf_counter()
                    vectors[fresh] = self.embedder.encode([index_text(*pairs[i]) for i in fresh])
                    embed_seconds += time.perf_counter() - t
                reused, embedded = reused + len(kept), embedded + len(fresh)
                tmp = path.with_name(path.name + ".tmp")
                with open(tmp, "wb") as stream:
                    np.save(stream, vectors)
                os.replace(tmp, path)
                report.skip(handle, len(kept))  # reused vectors count, but only embedded passages make the rate
                report.advance(handle, len(fresh))
            report.finish(handle)
        finally:
            store.close()
        (folder / "previous-vectors.npy").unlink(missing_ok=True)
        return {"previous": previous.manifest.get("created"),
                "files": {"added": len(tally.added), "changed": len(tally.changed), "deleted": len(tally.deleted),
                          "unchanged": len(tally.unchanged)},
                "added": tally.added[:LISTED], "changed": tally.changed[:LISTED], "deleted": tally.deleted[:LISTED],
                "passages": {"total": count, "vectors_reused": reused, "embedded": embedded},
                "embed_seconds": round(embed_seconds, 3), "seconds": round(time.perf_counter() - began, 3)}
