"""Several indexes searched as one: each is searched, the rankings are fused by reciprocal rank.

``--index a,b`` (and ``retrieval.index = "a,b"``, ``ReAgent.load(index=["a", "b"])``) opens a
``MultiIndex``: it has the ``search`` and ``get`` of ``Index``, so the agents and the benchmark
methods take it as they take one index. A passage's id gets its index's name in front,
``"notes|guide.md#2"``, so ids stay unique across indexes and every citation says where its
passage came from (``|`` never occurs in a Wikipedia title and hardly in a file path).

All indexes must have been built with the same embedder: one query vector serves them all,
and their dense scores are comparable. The knowledge graph is per index and is not used here.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from ..config import Config
from ..errors import IndexMismatchError, ReagentError
from .embed import make_embedder
from .fusion import rrf
from .index import Hit, Index
from .layout import read_manifest, resolve_index
from .passages import SEPARATOR, local_id, source_index



def split_spec(spec: str | Sequence[str]) -> list[str]:
    """The index names of ``"a,b"`` (or of a list), blanks dropped; one name gives a list of one."""
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    return [p.strip() for p in parts if str(p).strip()]


def is_multi(spec: str | Sequence[str]) -> bool:
    """Whether ``spec`` names more than one index."""
    return len(split_spec(spec)) > 1


class MultiIndex:
    """Indexes searched together; ``search`` fuses their rankings, ``get`` finds a passage by its prefixed id."""

    def __init__(self, indexes: Sequence[Index], rrf_k: int = 60) -> None:
        if len(indexes) < 2:
            raise ValueError("a MultiIndex joins at least two indexes")
        self.indexes = {index.name: index for index in indexes}
        self.rrf_k = rrf_k
        self._pool = ThreadPoolExecutor(max_workers=len(indexes), thread_name_prefix="reagent-multi")

    @classmethod
    def open(cls, names: Sequence[str | Path], config: Config) -> "MultiIndex":
        """Open each index (by name or folder); refuse two of one name or indexes of different embedders."""
        paths = [resolve_index(name, config) for name in names]
        seen: dict[str, Path] = {}
        for path in paths:
            if path.name in seen:
                raise ReagentError(f"two of the indexes are named {path.name} ({seen[path.name]} and {path})",
                                   hint="a passage's citation names its index: give indexes of distinct names")
            seen[path.name] = path
        built = {path.name: (read_manifest(path).get("embedder") or {}) for path in paths}
        kinds = {(e.get("name"), e.get("dimension")) for e in built.values()}
        if len(kinds) > 1:
            listed = ", ".join(f"{name} with {e.get('name')} ({e.get('dimension')}-d)" for name, e in built.items())
            raise IndexMismatchError(
                f"the indexes were built with different embedders: {listed}",
                hint="one question searches several indexes only when one embedder built them all: rebuild the odd "
                     "one out with `reagent index build SOURCE --name NAME --force` under that embedder")
        embedder = make_embedder(config.retrieval.embedder, backend=config.retrieval.embedder_backend,
                                 models_dir=config.paths.models)  # one model for all (Index.open checks each)
        opened: list[Index] = []
        try:
            for path in paths:
                opened.append(Index.open(path, config, embedder=embedder))
        except BaseException:
            for index in opened:
                index.close()
            raise
        return cls(opened, rrf_k=config.retrieval.rrf_k)

    @property
    def name(self) -> str:
        """The indexes' names joined by commas, as ``--index`` takes them."""
        return ",".join(self.indexes)

    def search(self, query: str, k: int = 5, mode: str = "hybrid", *, nprobe: int | None = None) -> list[Hit]:
        """The k best passages over all indexes: each index's top k, fused by reciprocal rank.

        A hit's passage id carries its index's name in front and ``Hit.index`` names it; the score
        is the fused one (each list counts alike, whatever its own scores' scale).
        """
        futures = {name: self._pool.submit(index.search, query, k, mode, nprobe=nprobe)
                   for name, index in self.indexes.items()}
        by_id: dict[str, Hit] = {}
        rankings = []
        for name, future in futures.items():
            ranking = []
            for hit in future.result():
                pid = f"{name}{SEPARATOR}{hit.passage.id}"
                by_id[pid] = Hit(replace(hit.passage, id=pid), hit.score, hit.rank, index=name)
                ranking.append(pid)
            rankings.append(ranking)
        fused = rrf(rankings, k=self.rrf_k)[:k]
        return [replace(by_id[pid], score=score, rank=rank) for rank, (pid, score) in enumerate(fused, 1)]

    def get(self, passage_id: str):  # -> Passage | None
        """The passage with this prefixed id (``"notes|a.md#0"``), or None."""
        name = source_index(passage_id)
        index = self.indexes.get(name) if name else None
        if index is None:
            return None
        passage = index.get(local_id(passage_id))
        return replace(passage, id=passage_id) if passage is not None else None

    def close(self) -> None:
        """Release every index."""
        self._pool.shutdown(wait=True)
        for index in self.indexes.values():
            index.close()

    def __enter__(self) -> "MultiIndex":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_search_index(spec: str | Sequence[str], config: Config) -> Index | MultiIndex:
    """One index, or a MultiIndex when ``spec`` names several (``"a,b"``)."""
    names = split_spec(spec)
    if not names:
        raise ReagentError("no index named", hint="pass an index name, or several separated by commas: --index a,b")
    if len(names) == 1:
        return Index.open(names[0], config)
    return MultiIndex.open(names, config)
