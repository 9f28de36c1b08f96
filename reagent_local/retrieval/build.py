"""Build an index folder: passages (DuckDB), dense vectors (FAISS), BM25, manifest.

The build writes into ``indexes/.NAME.building/`` and renames it to ``indexes/NAME``
only when everything is written, so an interrupted build never looks complete; the
lock ``indexes/.NAME.lock`` makes a second build of NAME wait for the first. A full
disk removes the temporary folder and says so.
Embeddings are saved in shards (``embeddings/shard-NNNNNN.npy``); running the same
build again reuses the finished shards. Bad input removes the temporary folder.
A folder (or one document: Markdown, text, HTML, PDF, Office, EPUB, ...) is read by ``folder_build``; with
``update`` an existing index of that folder is rebuilt reusing what did not change.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import time
from importlib import metadata
from pathlib import Path
from typing import Callable, Sequence

import duckdb
import numpy as np

from ..config import Config
from ..errors import IndexBuildError, ReagentError
from ..locks import holder_of
from ..paths import file_sha256, is_disk_full, unwritable_reason
from ..version import __version__
from .dense import ShardVectors, build_faiss, choose_type
from .embed import Embedder, HashEmbedder, embedder_for
from .folder_build import DOCS, FolderStep, check_updatable, scan_source
from .folder_scan import Scan, is_document
from .layout import MANIFEST, build_lock, building_dir, index_dir, lock_path, validate_name
from .passages import TARGET_WORDS, index_text
from .estimate import warn_large_files
from .progress import Reporter, meaningful_rate, reporter
from .readers import FORMATS, detect_format, document_passages, read_documents
from .sparse import SUBDIR as BM25_DIR
from .sparse import build_bm25
from .tokens import LATEST
from .store import FILENAME as PASSAGES_FILE
from .store import PassageStore, PassageWriter
from .swap import recover, swap_in

SHARD_SIZE = 4096
STATE = "build-state.json"
# Writes the passage table (and may write every embedding shard ahead, and kg.duckdb, which its
# manifest extra's "kg" then announces) instead of reading SOURCE here;
# called as step(source=, fmt=, limit=, folder=, key=, report=) -> (documents, passages, manifest extra).
# reagent_local.cluster passes one that runs the reading and embedding on Ray workers.
PassageStep = Callable[..., tuple[int, int, dict]]
_VERSIONED = ("faiss-cpu", "bm25s", "PyStemmer", "sentence-transformers", "torch", "duckdb", "mwparserfromhell", "numpy",
              "markdown-it-py", "pypdf")


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries an index depends on."""
    out = {}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    out["reagent-local"] = __version__
    return out


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def _load_state(folder: Path, key: dict, report: Reporter) -> dict:
    """The saved state of an interrupted build with the same inputs, else a fresh folder."""
    state_path = folder / STATE
    if state_path.is_file():
        try:
            state = json.loads(state_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            state = {}
        if state.get("key") == key:
            report.note(f"resuming the interrupted build in {folder}")
            return state
    if folder.exists():
        report.note(f"discarding an interrupted build with other inputs in {folder}")
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    state = {"key": key, "passages": None, "documents": None, "seconds": {}}
    _write_json(state_path, state)
    return state


def _write_passages(source: Path, fmt: str, folder: Path, limit: int | None, report: Reporter) -> tuple[int, int]:
    """Stream documents into the passage table; return (documents, passages)."""
    writer = PassageWriter(folder / PASSAGES_FILE)
    handle = report.step("reading documents", limit, "docs")
    documents = 0
    try:
        for document in read_documents(source, fmt):
            if limit is not None and documents >= limit:
                break
            for text in document_passages(document):
                writer.add(document.title, text)
            documents += 1
            report.advance(handle)
        report.finish(handle)
    except BaseException:
        writer.abort()
        raise
    if writer.count == 0:
        writer.abort()
        kind = "articles" if fmt == "wikixml" else "documents with text"
        raise IndexBuildError(
            f"{source} contains no {kind} (read as {fmt})",
            hint="check that it is the right file, or pass the right --format",
        )
    try:
        return documents, writer.finish()
    except BaseException:
        writer.abort()  # close the database, or its deleted files keep their disk space
        raise


def _shard_path(folder: Path, number: int) -> Path:
    return folder / "embeddings" / f"shard-{number:06d}.npy"


def _embed(store: PassageStore, count: int, folder: Path, embedder: Embedder | HashEmbedder, report: Reporter) -> dict:
    """Embed every passage in shards, skipping shards already on disk; return timing."""
    (folder / "embeddings").mkdir(exist_ok=True)
    shards = (count + SHARD_SIZE - 1) // SHARD_SIZE
    handle = report.step("embedding passages", count, "passages")
    done, seconds, cpu, reused = 0, 0.0, 0.0, 0
    for number in range(shards):
        start, stop = number * SHARD_SIZE, min(count, (number + 1) * SHARD_SIZE)
        path = _shard_path(folder, number)
        if path.is_file() and np.load(path, mmap_mode="r").shape[0] == stop - start:
            reused += stop - start
            report.skip(handle, stop - start)  # done before (a resumed build, an update): not in the rate
            continue
        texts = [index_text(title, text) for title, text in store.iter_range(start, stop)]
        began, cpu_began = time.perf_counter(), time.process_time()
        vectors = embedder.encode(texts)
        seconds += time.perf_counter() - began
        cpu += time.process_time() - cpu_began  # CPU time: comparable across runs on a shared machine
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as stream:
            np.save(stream, vectors)
        os.replace(tmp, path)
        done += len(texts)
        report.advance(handle, len(texts))
    report.finish(handle)
    rate = meaningful_rate(done, seconds)  # an update that embedded 3 passages in 1 ms has no rate to speak of
    return {"passages": done, "reused": reused, "seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3),
            "passages_per_second": rate}


def _check_kg_available() -> None:
    if importlib.util.find_spec("reagent_local.retrieval.kg_build") is None:
        raise IndexBuildError(
            "the knowledge-graph builder (reagent_local.retrieval.kg_build) is not available in this installation",
            hint="pass --no-kg (kg=False) to build the index without a knowledge graph",
        )


def build_index(
    source: Path,
    name: str,
    config: Config,
    *,
    fmt: str = "auto",
    limit: int | None = None,
    kg: bool = True,
    force: bool = False,
    progress: bool = True,
    faiss_type: str = "auto",
    embedder: Embedder | HashEmbedder | None = None,
    log: Callable[[str], None] = lambda _msg: None,
    passage_step: PassageStep | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    update: bool = False,
    tokenizer: int = LATEST,
) -> Path:
    """Build index ``name`` from ``source`` and return its folder (``config.paths.indexes / name``).

    ``fmt`` is one of "auto", "docs" or readers.FORMATS; ``limit`` keeps the first N documents
    (articles, lines, rows, paragraphs or files); ``kg`` also extracts the infobox knowledge
    graph when the source is a dump; ``force`` replaces an existing index. A build of
    a name another process is building waits for it (``log`` says for whom).
    ``passage_step`` replaces the passage step (see ``PassageStep``). A folder (``docs``) is
    read with ``include``/``exclude`` globs; ``update`` rebuilds an existing index of it,
    reading only changed files and embedding only new text (or builds it when there is none).
    ``tokenizer`` is the BM25 tokenizer version (``tokens.py``; benchmark indexes keep version 1).
    """
    began = time.perf_counter()
    validate_name(name)
    given = Path(source).expanduser()
    source = given.resolve()
    if not source.exists():
        raise IndexBuildError(f"{source} does not exist", hint="check the SOURCE path")
    if limit is not None and limit < 1:
        raise IndexBuildError(f"--limit must be at least 1, got {limit}")
    final = index_dir(config, name)
    if update:
        check_updatable(final)
    else:
        _refuse_existing(final, force)
    if fmt == "auto":
        fmt = DOCS if is_document(source) else detect_format(source)
    elif fmt not in FORMATS and fmt != DOCS:
        raise IndexBuildError(f"unknown format {fmt!r}", hint=f"choose one of auto, {DOCS}, {', '.join(FORMATS)}")
    if fmt != DOCS and (include or exclude or update or source.is_dir()):
        raise IndexBuildError(f"{source} read as {fmt}: --include, --exclude and --update apply to folders of documents",
                              hint=f"pass a folder (or --format {DOCS}), or drop those options")
    with_kg = kg and fmt == "wikixml"
    if with_kg:
        _check_kg_available()
    choose_type(faiss_type, 0)  # validate the flag before any work
    reason = unwritable_reason(config.paths.indexes)
    if reason is not None:
        raise IndexBuildError(f"cannot write to {config.paths.indexes}: {reason}",
                              hint="make that folder writable, or set REAGENT_HOME to a writable folder")
    embedder = embedder or embedder_for(config)
    listing: Scan | None = None
    if fmt == DOCS:
        listing = scan_source(given, include, exclude, max_bytes=int(config.retrieval.max_file_mb * 1024 * 1024))
        sha256, size = listing.fingerprint(include, exclude), sum(f.size for f in listing.files)
        if not update or not (final / MANIFEST).is_file():  # an update embeds only what changed: no estimate
            for warning in warn_large_files([(f.rel, f.size) for f in listing.files], embedder.backend):
                log(warning)
        if passage_step is None:
            options = {"include": list(include), "exclude": list(exclude), "faiss_requested": faiss_type}
            passage_step = FolderStep(listing, embedder=embedder, final=final if update else None,
                                      shards=(SHARD_SIZE, _shard_path), log=log, options=options)
    else:
        sha256, size = file_sha256(source), source.stat().st_size
    key = {"source": str(source), "sha256": sha256, "format": fmt, "limit": limit,
           "embedder": embedder.name, "backend": embedder.backend, "target_words": TARGET_WORDS, "shard_size": SHARD_SIZE}
    folder = building_dir(config, name)

    def waiting(_holder: str) -> None:
        pid = holder_of(lock_path(config, name)).get("pid")
        log(f"waiting: {f'process {pid}' if pid else 'another process'} is building index {name!r} ...")

    try:
        with build_lock(config, name, on_wait=waiting), reporter(progress) as report:
            recover(folder, final, STATE, report.note)
            if update:
                check_updatable(final)  # another process may have replaced it while this one waited
            else:
                _refuse_existing(final, force)  # it may have been built while this process waited
            state = _load_state(folder, key, report)
            state["command"] = _command(source, name, fmt, limit, faiss_type, include, exclude,
                                        update and (final / MANIFEST).is_file(), update, force, kg)
            _write_json(folder / STATE, state)
            try:
                manifest = _run_steps(source, fmt, limit, with_kg, faiss_type, embedder, folder, state, report,
                                      passage_step, tokenizer)
            except ReagentError as exc:
                shutil.rmtree(folder, ignore_errors=True)  # bad input: nothing half-built stays
                if is_disk_full(exc):  # the KG builder reports a full disk as its own error
                    raise _disk_full(name, config) from None
                raise
            except KeyboardInterrupt:
                raise IndexBuildError(
                    f"the build of {name!r} was interrupted; finished embedding batches are kept in {folder}",
                    hint="run the same command again to resume",
                ) from None
            manifest.update(
                name=name, source={"path": str(source), "sha256": sha256, "bytes": size},
                format=fmt, limit=limit, created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                build_seconds=round(time.perf_counter() - began, 3), versions=library_versions(),
                files=file_sizes(folder),
            )
            _write_json(folder / MANIFEST, manifest)
            (folder / STATE).unlink()
            swap_in(folder, final)
    except (OSError, RuntimeError, duckdb.Error) as exc:  # FAISS and DuckDB wrap the OS error
        if not is_disk_full(exc):
            raise
        shutil.rmtree(folder, ignore_errors=True)  # give back the space the failed build used
        raise _disk_full(name, config) from None
    return final


def _command(source: Path, name: str, fmt: str, limit: int | None, faiss_type: str, include: Sequence[str],
             exclude: Sequence[str], updating: bool, update: bool, force: bool, kg: bool) -> str:
    """The command that runs this build again (and so resumes it), for what `index list` prints."""
    if updating:
        return f"reagent index update {name}"
    parts = ["reagent index build", shlex.quote(str(source)), "--name", name]
    parts += [] if fmt == DOCS else ["--format", fmt]
    parts += [f"--include {shlex.quote(g)}" for g in include] + [f"--exclude {shlex.quote(g)}" for g in exclude]
    parts += [f"--limit {limit}"] if limit else []
    parts += [] if faiss_type == "auto" else [f"--faiss {faiss_type}"]
    parts += ["--update"] if update else ["--force"] if force else []
    parts += [] if kg or fmt != "wikixml" else ["--no-kg"]
    return " ".join(parts)


def _disk_full(name: str, config: Config) -> IndexBuildError:
    return IndexBuildError(f"disk full while building index {name!r} in {config.paths.indexes}",
                           hint="free some space (the failed build's files were removed) and build again, "
                           "or set REAGENT_HOME to a larger disk")


def _refuse_existing(final: Path, force: bool) -> None:
    if final.exists() and not force:
        raise IndexBuildError(f"index {final.name!r} already exists at {final}",
                              hint="pass --force to rebuild it, or choose another --name")


def file_sizes(folder: Path) -> dict[str, int]:
    """Bytes of every file of a finished build, by relative path; opening an index compares them."""
    return {p.relative_to(folder).as_posix(): p.stat().st_size for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name not in (MANIFEST, STATE)}


def _run_steps(source: Path, fmt: str, limit: int | None, with_kg: bool, faiss_type: str,
               embedder: Embedder | HashEmbedder, folder: Path, state: dict, report: Reporter,
               passage_step: PassageStep | None = None, tokenizer: int = LATEST) -> dict:
    """Passages, embeddings, FAISS, BM25, knowledge graph; returns the manifest body."""
    seconds = state["seconds"]
    if state["passages"] is None:
        began = time.perf_counter()
        if passage_step is None:
            state["documents"], state["passages"] = _write_passages(source, fmt, folder, limit, report)
        else:
            state["documents"], state["passages"], state["extra"] = passage_step(
                source=source, fmt=fmt, limit=limit, folder=folder, key=state["key"], report=report)
        seconds["passages"] = round(time.perf_counter() - began, 3)
        _write_json(folder / STATE, state)
    count = state["passages"]
    store = PassageStore(folder / PASSAGES_FILE)
    try:
        began, cpu_began = time.perf_counter(), time.process_time()
        embedding = _embed(store, count, folder, embedder, report)
        seconds["embedding"] = round(time.perf_counter() - began, 3)
        embedding["step_cpu_seconds"] = round(time.process_time() - cpu_began, 3)
        vectors = ShardVectors([_shard_path(folder, n) for n in range((count + SHARD_SIZE - 1) // SHARD_SIZE)])
        dimension = vectors.dimension
        began = time.perf_counter()
        faiss_info = build_faiss(vectors, choose_type(faiss_type, count), folder / "dense.faiss")
        seconds["faiss"] = round(time.perf_counter() - began, 3)
        began = time.perf_counter()
        bm25_info = build_bm25((index_text(t, x) for t, x in store.iter_range(0, count)), folder / BM25_DIR,
                               tokenizer=tokenizer)
        seconds["bm25"] = round(time.perf_counter() - began, 3)
    finally:
        store.close()
    if fmt == DOCS and faiss_info["type"] == "ivfpq":
        os.replace(folder / "embeddings", folder / "vectors")  # IVF-PQ codes are lossy: an update reuses these
    else:
        shutil.rmtree(folder / "embeddings")  # the FAISS index holds the vectors now
    manifest = {
        "reader": fmt, "documents": state["documents"], "passages": count,
        "passage_words": TARGET_WORDS if fmt in ("wikixml", "jsonl", "json", DOCS) else None,
        "embedder": {"name": embedder.name, "dimension": dimension, "backend": embedder.backend, **embedder.record()},
        "embedding": embedding, "faiss": faiss_info, "bm25": bm25_info, "seconds": seconds,
        **state.get("extra", {}),
    }
    if with_kg and "kg" not in manifest:  # a passage step may have written kg.duckdb already
        from .kg_build import build_kg

        began = time.perf_counter()
        manifest["kg"] = build_kg(source, folder, limit=limit)
        seconds["kg"] = round(time.perf_counter() - began, 3)
    return manifest
