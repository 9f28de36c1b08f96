"""A copy of an index with its dense part rebuilt as another FAISS type, from the vectors it holds,
or its BM25 part rebuilt with another tokenizer version (``tokens.py``), from the passages it holds.

Embedding is almost all of a build (12 days for full Wikipedia on 2 cores), and a flat
or HNSW index keeps every vector exactly, so changing the FAISS type needs no
re-embedding: the vectors are read back in shards, the new FAISS index is built from
them, and passages, BM25 and knowledge graph are hard-linked (copied across disks).
A new tokenizer needs only the passage table, so ``--tokenizer`` brings an index built
before tokenizer version 2 to it in seconds. The copy is built like any index: in ``.NAME.building/`` under NAME's build lock,
swapped in whole at the end.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ..config import Config
from ..errors import IndexBuildError
from .build import SHARD_SIZE, _refuse_existing, _shard_path, _write_json, file_sizes, library_versions
from .dense import ShardVectors, build_faiss, choose_type
from .layout import MANIFEST, build_lock, building_dir, index_dir, read_manifest, resolve_index, validate_name
from .passages import index_text
from .sparse import SUBDIR as BM25_DIR
from .sparse import build_bm25
from .store import FILENAME as PASSAGES_FILE
from .store import PassageStore
from .swap import recover, swap_in
from .tokens import splitter

EXACT_TYPES = ("flat", "hnsw")  # FAISS types that keep the vectors themselves


def _link_or_copy(source: Path, target: Path) -> None:
    if source.is_dir():
        target.mkdir()
        for child in source.iterdir():
            _link_or_copy(child, target / child.name)
        return
    try:
        os.link(source, target)  # index files are never written after their build: sharing them is safe
    except OSError:
        shutil.copy2(source, target)


def _export_vectors(dense_path: Path, folder: Path) -> ShardVectors:
    """The vectors of an exact FAISS index, written as embedding shards in row order."""
    import faiss

    index = faiss.read_index(str(dense_path), faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY)
    (folder / "embeddings").mkdir()
    paths = []
    for number, start in enumerate(range(0, index.ntotal, SHARD_SIZE)):
        paths.append(_shard_path(folder, number))
        np.save(paths[-1], index.reconstruct_n(start, min(SHARD_SIZE, index.ntotal - start)))
    return ShardVectors(paths)


def convert_index(base: str | Path, name: str, config: Config, faiss_type: str | None, *, tokenizer: int | None = None,
                  force: bool = False, log: Callable[[str], None] = lambda _msg: None) -> Path:
    """Build index ``name``: index ``base`` with its FAISS index rebuilt as ``faiss_type`` (None: kept) and its
    BM25 index rebuilt with ``tokenizer`` (None: kept); return its folder."""
    validate_name(name)
    if faiss_type is None and tokenizer is None:
        raise IndexBuildError("nothing to convert", hint="pass --faiss TYPE, --tokenizer N or both")
    if tokenizer is not None:
        try:
            splitter(tokenizer)
        except ValueError as exc:
            raise IndexBuildError(str(exc), hint="pass --tokenizer 1 or 2") from None
    source = resolve_index(base, config)
    manifest = read_manifest(source)
    built = (manifest.get("faiss") or {}).get("type")
    if faiss_type is not None and built not in EXACT_TYPES:
        raise IndexBuildError(f"index {source.name!r} holds {built} codes, not its vectors, so it cannot be converted",
                              hint="convert an index built with --faiss flat or hnsw, or build from the source again")
    final = index_dir(config, name)
    if final.resolve() == source.resolve():
        raise IndexBuildError(f"cannot convert index {name!r} into itself", hint="choose another --name")
    _refuse_existing(final, force)
    kind = choose_type(faiss_type, int(manifest.get("passages") or 0)) if faiss_type is not None else None
    rebuilt = {"dense.faiss"} if kind is not None else set()
    rebuilt |= {BM25_DIR} if tokenizer is not None else set()
    began = time.perf_counter()
    with build_lock(config, name, on_wait=lambda _holder: log(f"waiting: another process is building {name!r} ...")):
        folder = building_dir(config, name)
        recover(folder, final, "build-state.json", log)
        _refuse_existing(final, force)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        seconds, changed = dict(manifest.get("seconds") or {}), {}
        try:
            for part in source.iterdir():
                if part.name != MANIFEST and part.name not in rebuilt:
                    _link_or_copy(part, folder / part.name)
            if kind is not None:
                vectors = _export_vectors(source / "dense.faiss", folder)
                step_began = time.perf_counter()
                changed["faiss"] = build_faiss(vectors, kind, folder / "dense.faiss")
                seconds["faiss"] = round(time.perf_counter() - step_began, 3)
                shutil.rmtree(folder / "embeddings")
            if tokenizer is not None:
                step_began = time.perf_counter()
                changed["bm25"] = _rebuild_bm25(source, folder, int(manifest.get("passages") or 0), tokenizer)
                seconds["bm25"] = round(time.perf_counter() - step_began, 3)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        converted = {**manifest, "name": name, **changed, "seconds": seconds,
                     "converted_from": {"index": source.name, **{part: manifest.get(part) for part in changed},
                                        "seconds": round(time.perf_counter() - began, 3)},
                     "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "versions": library_versions(),
                     "files": file_sizes(folder)}
        _write_json(folder / MANIFEST, converted)
        swap_in(folder, final)
    return final


def _rebuild_bm25(source: Path, folder: Path, count: int, tokenizer: int) -> dict:
    """BM25 over the passages of index ``source`` (title and text, as a build indexes them) with ``tokenizer``."""
    store = PassageStore(source / PASSAGES_FILE)
    try:
        return build_bm25((index_text(t, x) for t, x in store.iter_range(0, count)), folder / BM25_DIR,
                          tokenizer=tokenizer)
    finally:
        store.close()
