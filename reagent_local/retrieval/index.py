"""Open a built index and search it: dense (FAISS), sparse (BM25) or hybrid (RRF of both)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..config import Config
from ..errors import IndexMismatchError, IndexNotFoundError, QuestionError, ReagentError
from .dense import load_faiss, search_faiss
from .embed import Embedder, HashEmbedder, configured_dimension, make_embedder
from .fusion import rrf
from .layout import read_manifest, resolve_index
from .passages import Passage
from .sparse import SUBDIR as BM25_DIR
from .sparse import SparseIndex
from .store import FILENAME as PASSAGES_FILE
from .store import PassageStore

MODES = ("dense", "sparse", "hybrid")
# Hybrid fuses this many candidates from each side (at least), so a passage ranked
# moderately by both can overtake one ranked high by only one.
HYBRID_DEPTH = 50


@dataclass(frozen=True)
class Hit:
    """One search result; ``rank`` starts at 1."""

    passage: Passage
    score: float
    rank: int


def check_embedder(manifest: dict, wanted_name: str, wanted_dim: int, where: Path) -> None:
    """Raise IndexMismatchError when the index's embedder is not the configured one."""
    built = manifest.get("embedder") or {}
    built_name, built_dim = built.get("name"), built.get("dimension")
    if built_name != wanted_name or built_dim != wanted_dim:
        raise IndexMismatchError(
            f"index {where.name} was built with {built_name} ({built_dim}-d) "
            f"but the configured embedder {wanted_name} gives {wanted_dim}-d vectors",
            hint=f"rebuild it with `reagent index build {manifest.get('source', {}).get('path', 'SOURCE')} "
            f"--name {where.name} --force`, or set retrieval.embedder = \"{built_name}\"",
        )


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
        self._sparse: SparseIndex | None = None
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="reagent-search")

    @classmethod
    def open(cls, name_or_path: str | Path, config: Config, *, embedder: Embedder | HashEmbedder | None = None) -> "Index":
        """Open an index by name or folder; checks its manifest and embedder, loads data lazily."""
        path = resolve_index(name_or_path, config)
        manifest = read_manifest(path)
        if embedder is None:
            check_embedder(manifest, config.retrieval.embedder, configured_dimension(config.retrieval.embedder), path)
        else:
            check_embedder(manifest, embedder.name, embedder.dimension, path)
        for part in (PASSAGES_FILE, "dense.faiss", BM25_DIR):
            if not (path / part).exists():
                raise IndexNotFoundError(f"index {path} lacks {part}", hint="rebuild it with `reagent index build ... --force`")
        return cls(path, manifest, config, embedder)

    @property
    def name(self) -> str:
        """The index's folder name."""
        return self.path.name

    def _load(self) -> None:
        with self._lock:
            if self._store is None:
                self._store = PassageStore(self.path / PASSAGES_FILE)
                self._faiss = load_faiss(self.path / "dense.faiss")
                if self._faiss.d != self.manifest["embedder"]["dimension"]:
                    raise IndexMismatchError(
                        f"{self.path / 'dense.faiss'} holds {self._faiss.d}-d vectors, the manifest says "
                        f"{self.manifest['embedder']['dimension']}-d",
                        hint="rebuild the index with --force",
                    )
                self._sparse = SparseIndex(self.path / BM25_DIR)
                if self._embedder is None:
                    self._embedder = make_embedder(self.manifest["embedder"]["name"])

    def _dense(self, query: str, depth: int) -> tuple[list[int], list[float]]:
        vector = self._embedder.encode([query])[0]
        return search_faiss(self._faiss, vector, depth)

    def _ranked(self, query: str, k: int, mode: str) -> list[tuple[int, float]]:
        if mode == "dense":
            rows, scores = self._dense(query, k)
            return list(zip(rows, scores))
        if mode == "sparse":
            rows, scores = self._sparse.search(query, k)
            return list(zip(rows, scores))
        depth = max(k, HYBRID_DEPTH)
        dense = self._pool.submit(self._dense, query, depth)
        sparse = self._pool.submit(self._sparse.search, query, depth)
        # Sparse first: on a tie in fused score BM25's order wins (it is the sharper of
        # the two on entity names, which multi-hop sub-questions are full of).
        fused = rrf([sparse.result()[0], dense.result()[0]], k=self.config.retrieval.rrf_k)
        return fused[:k]

    def search(self, query: str, k: int = 5, mode: str = "hybrid") -> list[Hit]:
        """The k best passages for ``query``; hybrid runs dense and sparse in parallel and fuses by RRF."""
        if mode not in MODES:
            raise ReagentError(f"unknown search mode {mode!r}", hint=f"choose one of {', '.join(MODES)}")
        if not query or not query.strip():
            raise QuestionError("the search query is empty", hint="pass some words to search for")
        if k < 1:
            raise ReagentError(f"k must be at least 1, got {k}")
        self._load()
        ranked = self._ranked(query, k, mode)
        passages = self._store.by_rows([row for row, _ in ranked])
        return [Hit(passages[row], score, rank) for rank, (row, score) in enumerate(ranked, 1) if row in passages]

    def get(self, passage_id: str) -> Passage | None:
        """The passage with this id (``"Title#n"``), or None."""
        self._load()
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
