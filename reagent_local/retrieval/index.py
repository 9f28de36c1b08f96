"""Open a built index and search it: dense (FAISS), sparse (BM25) or hybrid (RRF of both)."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import duckdb
import numpy as np

from ..config import Config
from ..errors import IndexCorruptError, IndexMismatchError, QuestionError, ReagentError
from .dense import is_ivf, load_faiss, search_faiss
from .embed import Embedder, HashEmbedder, configured_dimension, is_hash, make_embedder, vectors_agree
from .fusion import rrf
from .layout import read_manifest, rebuild_command, resolve_index
from .passages import Passage
from .sparse import SUBDIR as BM25_DIR
from .sparse import LegacySparseIndex, SparseIndex, open_sparse
from .store import FILENAME as PASSAGES_FILE
from .store import PassageStore
from .tokens import LEGACY

MODES = ("dense", "sparse", "hybrid")
# Hybrid fuses this many candidates from each side (at least), so a passage ranked
# moderately by both can overtake one ranked high by only one.
HYBRID_DEPTH = 50


@dataclass(frozen=True)
class Hit:
    """One search result; ``rank`` starts at 1; ``index`` names the index it came from when several were searched."""

    passage: Passage
    score: float
    rank: int
    index: str | None = None


def check_embedder(manifest: dict, wanted_name: str, wanted_dim: int, where: Path, wanted_backend: str = "torch") -> None:
    """Raise IndexMismatchError when the index's embedder is not the configured one, or runs on a
    backend whose vectors do not agree with the one that built the index."""
    built = manifest.get("embedder") or {}
    built_name, built_dim = built.get("name"), built.get("dimension")
    rebuild = f"reagent index build {manifest.get('source', {}).get('path', 'SOURCE')} --name {where.name} --force"
    if built_name != wanted_name or built_dim != wanted_dim:
        raise IndexMismatchError(
            f"index {where.name} was built with {built_name} ({built_dim}-d) "
            f"but the configured embedder {wanted_name} gives {wanted_dim}-d vectors",
            hint=f"rebuild it with `{rebuild}`, or set retrieval.embedder = \"{built_name}\"",
        )
    built_backend = built.get("backend", "torch")  # indexes from before the ONNX backends: PyTorch
    if not is_hash(str(built_name)) and not vectors_agree(built_backend, wanted_backend):
        raise IndexMismatchError(
            f"index {where.name} was built with {built_name} on {built_backend}, whose vectors differ from the "
            f"configured backend {wanted_backend}'s beyond tolerance",
            hint=f"set REAGENT_RETRIEVAL_EMBEDDER_BACKEND={built_backend} (retrieval.embedder_backend) to search it, "
            f"or rebuild it with `{rebuild}`",
        )


def check_sizes(path: Path, manifest: dict) -> None:
    """Compare each file's size with the one the build recorded: a cheap catch of truncation."""
    for relative, size in (manifest.get("files") or {}).items():  # indexes built before this lack it
        file = path / relative
        actual = file.stat().st_size if file.is_file() else None
        if actual != size:
            found = "missing" if actual is None else f"{actual:,} bytes"
            raise IndexCorruptError(f"{file} is truncated or damaged ({found}, the build wrote {size:,} bytes)",
                                    hint=f"rebuild the index: `{rebuild_command(manifest, path.name)}`")


def _first_unreadable(folder: Path) -> Path | None:
    """The first JSON or .npy file in ``folder`` that does not load (only run once loading failed)."""
    for file in sorted(folder.iterdir()):
        try:
            if file.suffix == ".json":
                json.loads(file.read_text(encoding="utf-8"))
            elif file.suffix == ".npy":
                np.load(file, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError):
            return file
    return None


def _expect(wanted: int | None, found: int, what: str) -> None:
    if wanted is not None and int(found) != int(wanted):
        raise ValueError(f"holds {found} {what}, the manifest says {wanted}")


class Index:
    """A built index; ``search`` and ``get`` are safe to call from several threads."""

    def __init__(self, path: Path, manifest: dict, config: Config, embedder: Embedder | HashEmbedder | None = None) -> None:
        self.path = Path(path)
        self.manifest = manifest
        self.config = config
        self._embedder = embedder
        self._lock = threading.Lock()
        self._store: PassageStore | None = None
        self._faiss = None
        self._sparse: SparseIndex | LegacySparseIndex | None = None
        self._ivf = False
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="reagent-search")

    @classmethod
    def open(cls, name_or_path: str | Path, config: Config, *, embedder: Embedder | HashEmbedder | None = None) -> "Index":
        """Open an index by name or folder; checks its manifest and embedder, loads data lazily."""
        path = resolve_index(name_or_path, config)
        manifest = read_manifest(path)
        if embedder is None:
            check_embedder(manifest, config.retrieval.embedder, configured_dimension(config.retrieval.embedder), path,
                           config.retrieval.embedder_backend)
        else:
            check_embedder(manifest, embedder.name, embedder.dimension, path, embedder.backend)
        for part in (PASSAGES_FILE, "dense.faiss", BM25_DIR):
            if not (path / part).exists():
                raise IndexCorruptError(f"index {path} lacks {part}",
                                        hint=f"rebuild it: `{rebuild_command(manifest, path.name)}`")
        check_sizes(path, manifest)
        return cls(path, manifest, config, embedder)

    @property
    def name(self) -> str:
        """The index's folder name."""
        return self.path.name

    def _load(self) -> None:
        with self._lock:
            if self._store is not None:
                return
            passages = self.manifest.get("passages")
            with self._reading(PASSAGES_FILE):
                store = PassageStore(self.path / PASSAGES_FILE)
                _expect(passages, store.count(), "passages")
            with self._reading("dense.faiss"):
                dense = load_faiss(self.path / "dense.faiss", (self.manifest.get("faiss") or {}).get("type"))
                _expect(passages, dense.ntotal, "vectors")
            if dense.d != self.manifest["embedder"]["dimension"]:
                raise IndexMismatchError(
                    f"{self.path / 'dense.faiss'} holds {dense.d}-d vectors, the manifest says "
                    f"{self.manifest['embedder']['dimension']}-d",
                    hint="rebuild the index with --force",
                )
            with self._reading(BM25_DIR + "/"):
                sparse = open_sparse(self.path / BM25_DIR)
                _expect(passages, sparse.size, "documents")
                # queries are split as the index was built; a manifest without a version is from version 1
                recorded = int((self.manifest.get("bm25") or {}).get("tokenizer", LEGACY))
                if recorded != sparse.tokenizer:
                    raise ValueError(f"built with tokenizer version {sparse.tokenizer}, the manifest says {recorded}")
            if self._embedder is None:
                self._embedder = make_embedder(self.manifest["embedder"]["name"], backend=self.config.retrieval.embedder_backend,
                                               models_dir=self.config.paths.models)
            self._store, self._faiss, self._sparse, self._ivf = store, dense, sparse, is_ivf(dense)

    @contextmanager
    def _reading(self, part: str) -> Iterator[None]:
        """Turn a library's error while reading ``part`` into one message naming it and the repair."""
        try:
            yield
        except (OSError, ValueError, RuntimeError, duckdb.Error) as exc:  # what FAISS, bm25s, numpy, DuckDB raise
            detail = " ".join(str(exc).split())[:200]
            where = self.path / part
            if where.is_dir():  # bm25s does not say which of its files failed: find it
                where = _first_unreadable(where) or where
            raise IndexCorruptError(f"{where} is truncated or damaged ({detail})",
                                    hint=f"rebuild the index: `{rebuild_command(self.manifest, self.name)}`") from None

    def _dense(self, query: str, depth: int, nprobe: int | None) -> tuple[list[int], list[float]]:
        vector = self._embedder.encode([query])[0]
        return search_faiss(self._faiss, vector, depth, nprobe if self._ivf else None)

    def _ranked(self, query: str, k: int, mode: str, nprobe: int | None) -> list[tuple[int, float]]:
        if mode == "dense":
            rows, scores = self._dense(query, k, nprobe)
            return list(zip(rows, scores))
        if mode == "sparse":
            rows, scores = self._sparse.search(query, k)
            return list(zip(rows, scores))
        depth = max(k, HYBRID_DEPTH)
        dense = self._pool.submit(self._dense, query, depth, nprobe)
        sparse = self._pool.submit(self._sparse.search, query, depth)
        # Sparse first: on a tie in fused score BM25's order wins (it is the sharper of
        # the two on entity names, which multi-hop sub-questions are full of).
        fused = rrf([sparse.result()[0], dense.result()[0]], k=self.config.retrieval.rrf_k)
        return fused[:k]

    def search(self, query: str, k: int = 5, mode: str = "hybrid", *, nprobe: int | None = None) -> list[Hit]:
        """The k best passages for ``query``; hybrid runs dense and sparse in parallel and fuses by RRF.

        ``nprobe`` (IVF-PQ indexes only) is how many cells the dense search scans; default
        ``retrieval.nprobe``, and when that is 0 the value the build recorded.
        """
        if mode not in MODES:
            raise ReagentError(f"unknown search mode {mode!r}", hint=f"choose one of {', '.join(MODES)}")
        if not query or not query.strip():
            raise QuestionError("the search query is empty", hint="pass some words to search for")
        if k < 1:
            raise ReagentError(f"k must be at least 1, got {k}")
        nprobe = nprobe if nprobe is not None else self.config.retrieval.nprobe
        if nprobe < 0:
            raise ReagentError(f"nprobe must be at least 1 (or 0 for the index's default), got {nprobe}")
        self._load()
        ranked = self._ranked(query, k, mode, nprobe or None)
        with self._reading(PASSAGES_FILE):
            passages = self._store.by_rows([row for row, _ in ranked])
        return [Hit(passages[row], score, rank) for rank, (row, score) in enumerate(ranked, 1) if row in passages]

    def get(self, passage_id: str) -> Passage | None:
        """The passage with this id (``"Title#n"``), or None."""
        self._load()
        with self._reading(PASSAGES_FILE):
            return self._store.by_id(passage_id)

    def close(self) -> None:
        """Release files and threads."""
        self._pool.shutdown(wait=True)
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
