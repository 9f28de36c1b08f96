"""FAISS inner-product indexes over normalised embeddings (cosine similarity).

Three kinds, and ``auto`` picks one by corpus size (measurements: docs/retrieval.md):
- ``flat`` (exact) below ``HNSW_THRESHOLD``: linear, 5.7 ms at 10k vectors, 159 ms at 500k;
- ``hnsw`` (M=32, efSearch=128) up to ``IVFPQ_THRESHOLD``: under 1 ms, but 1.8 KB a vector in RAM;
- ``ivfpq``: an inverted file of ``nlist`` k-means cells holding product-quantised codes
  (``m`` bytes a vector, plus its 8-byte id), trained on a sample of the corpus' vectors,
  optionally behind an OPQ rotation (off by default: ``OPQ_MIN``); a search scans the
  ``nprobe`` nearest cells.
  Its parameters are chosen from the corpus size (``ivfpq_params``) and recorded in the
  manifest; ``nprobe`` can be changed per search. Under ``IVFPQ_MIN`` vectors it falls
  back to flat (and says so in the manifest).
Indexes are memory-mapped when opened: IVF-PQ's inverted lists, flat and HNSW vectors.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ..errors import IndexBuildError

FAISS_TYPES = ("auto", "flat", "hnsw", "ivfpq")
HNSW_THRESHOLD = 100_000
IVFPQ_THRESHOLD = 1_000_000  # auto: past here HNSW's 1.8 KB a vector no longer fits a laptop's RAM comfortably
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 128
IVFPQ_MIN = 1_000  # fewer vectors: flat is exact and small, IVF-PQ has too little to train on
PQ_BYTES = 96  # target code size: 96 sub-quantisers of 8 bits (4 dimensions each for 384-d)
# OPQ (a learned rotation before PQ) is off by default: at 4 dimensions a sub-quantiser it
# moved recall little on real MiniLM vectors while its training (50 rounds of PQ training
# on up to 65,536 points) cost minutes of CPU on 3,000 vectors here (docs/retrieval.md).
# Set OPQ_MIN to a count to switch it on from there.
OPQ_MIN: int | None = None
MIN_POINTS_PER_CELL = 39  # FAISS's guidance for k-means: at least 39 training points a centroid
MAX_TRAIN_POINTS = 1_000_000  # 1.5 GB of 384-d float32: a laptop can train on it
# Below this many vectors IVF-PQ trains on one thread: its many small k-means runs spend
# more in OpenMP barriers than in work (measured on 1,500 vectors with the other core busy:
# 30 s on two threads, 1.7 s on one).
SMALL_TRAINING = 100_000


def choose_type(requested: str, count: int) -> str:
    """Resolve ``auto`` to flat, hnsw or ivfpq by corpus size."""
    if requested not in FAISS_TYPES:
        raise IndexBuildError(f"unknown FAISS index type {requested!r}", hint=f"choose one of {', '.join(FAISS_TYPES)}")
    if requested == "auto":
        if count >= IVFPQ_THRESHOLD:
            return "ivfpq"
        return "hnsw" if count >= HNSW_THRESHOLD else "flat"
    return requested


def ivfpq_params(count: int, dimension: int) -> dict:
    """IVF-PQ parameters for ``count`` vectors: cells, sub-quantisers, bits, OPQ, nprobe, training sample."""
    nlist = 1 << max(0, round(math.log2(4 * math.sqrt(count))))  # ~4 sqrt(n) cells, a power of two
    while nlist > 1 and count < MIN_POINTS_PER_CELL * nlist:
        nlist //= 2
    m = max(d for d in range(1, min(PQ_BYTES, dimension // 2) + 1) if dimension % d == 0)
    nbits = max(4, min(8, int(math.log2(count / 4))))  # a 2^nbits-centroid codebook needs enough points
    train = min(count, max(MIN_POINTS_PER_CELL * nlist, 100_000), MAX_TRAIN_POINTS)
    return {"nlist": nlist, "m": m, "nbits": nbits, "opq": OPQ_MIN is not None and count >= OPQ_MIN, "nprobe": default_nprobe(nlist),
            "train_points": train, "code_bytes": math.ceil(m * nbits / 8)}


def default_nprobe(nlist: int) -> int:
    """Cells scanned per search unless asked otherwise: all of a small index's, 1/64 of a large one's."""
    return min(nlist, max(16, nlist // 64))


class ShardVectors:
    """Vectors stored as consecutive ``.npy`` shards (the build's embeddings), read one shard at a time."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = list(paths)
        shapes = [np.load(p, mmap_mode="r").shape for p in self.paths]
        self.sizes = [s[0] for s in shapes]
        self.count = sum(self.sizes)
        self.dimension = int(shapes[0][1]) if shapes else 0

    def blocks(self) -> Iterator[np.ndarray]:
        """Every vector in row order, a shard at a time."""
        for path in self.paths:
            yield np.ascontiguousarray(np.load(path), dtype=np.float32)

    def sample(self, size: int, seed: int = 0) -> np.ndarray:
        """``size`` distinct vectors drawn uniformly (all of them when size >= count), in row order."""
        if size >= self.count:
            return np.concatenate(list(self.blocks()))
        rows = np.sort(np.random.default_rng(seed).choice(self.count, size, replace=False))
        out, start = [], 0
        for path, size_ in zip(self.paths, self.sizes):
            inside = rows[(rows >= start) & (rows < start + size_)] - start
            if len(inside):
                out.append(np.asarray(np.load(path, mmap_mode="r")[inside], dtype=np.float32))
            start += size_
        return np.concatenate(out)


def new_index(kind: str, dimension: int):
    """An empty flat or HNSW FAISS index for inner product."""
    import faiss

    if kind == "flat":
        return faiss.IndexFlatIP(dimension)
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dimension, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        index.hnsw.efSearch = HNSW_EF_SEARCH
        return index
    raise IndexBuildError(f"unknown FAISS index type {kind!r}", hint="choose flat or hnsw")


def build_faiss(vectors: ShardVectors, kind: str, path: Path) -> dict:
    """Index ``vectors`` (row order) as ``kind``, write it to ``path``; return its manifest entry."""
    import faiss

    described: dict = {}
    if kind == "ivfpq" and vectors.count < IVFPQ_MIN:
        described = {"requested": "ivfpq", "note": f"{vectors.count} vectors are fewer than {IVFPQ_MIN}: "
                     "too few to train IVF-PQ, so the index is flat (exact and small)"}
        kind = "flat"
    if kind == "ivfpq":
        index, params = _train_ivfpq(vectors)
    else:
        index = new_index(kind, vectors.dimension)
        params = {"M": HNSW_M, "efConstruction": HNSW_EF_CONSTRUCTION, "efSearch": HNSW_EF_SEARCH} if kind == "hnsw" else {}
    for block in vectors.blocks():
        index.add(block)
    faiss.write_index(index, str(path))
    return {"type": kind, "count": int(index.ntotal), "dimension": vectors.dimension, "params": params, **described}


def _train_ivfpq(vectors: ShardVectors):
    """An IVF-PQ index (OPQ-rotated where the corpus is large enough) trained on a sample of ``vectors``."""
    import faiss

    params = ivfpq_params(vectors.count, vectors.dimension)
    m, nlist, nbits = params["m"], params["nlist"], params["nbits"]
    spec = f"{f'OPQ{m},' if params['opq'] else ''}IVF{nlist},PQ{m}x{nbits}"
    index = faiss.index_factory(vectors.dimension, spec, faiss.METRIC_INNER_PRODUCT)
    ivf = faiss.downcast_index(faiss.extract_index_ivf(index))
    ivf.do_polysemous_training = False  # the factory's default; it costs minutes and IP search does not use it
    ivf.cp.min_points_per_centroid = 1  # small corpora: nlist was chosen for them; no warning per centroid
    ivf.pq.cp.min_points_per_centroid = 1
    sample = vectors.sample(params["train_points"])
    with _threads(1 if vectors.count < SMALL_TRAINING else 0):
        index.train(sample)
    del sample
    ivf.nprobe = params["nprobe"]
    return index, {**params, "factory": spec, "metric": "inner_product"}


@contextmanager
def _threads(count: int) -> Iterator[None]:
    """FAISS's OpenMP threads set to ``count`` (0: leave them) for the duration."""
    import faiss

    before = faiss.omp_get_max_threads()
    if count:
        faiss.omp_set_num_threads(count)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def is_ivf(index) -> bool:
    """Whether ``index`` is an inverted-file index (``nprobe`` applies)."""
    import faiss

    return faiss.try_extract_index_ivf(index) is not None


def load_faiss(path: Path, kind: str | None = None):
    """Read an index written by ``build_faiss``, memory-mapped (IVF lists, or flat and HNSW vectors)."""
    import faiss

    flag = faiss.IO_FLAG_MMAP if kind == "ivfpq" else faiss.IO_FLAG_MMAP_IFC
    index = faiss.read_index(str(path), flag | faiss.IO_FLAG_READ_ONLY)
    if hasattr(index, "hnsw"):
        index.hnsw.efSearch = HNSW_EF_SEARCH
    return index


def search_faiss(index, query: np.ndarray, k: int, nprobe: int | None = None) -> tuple[list[int], list[float]]:
    """Rows and scores of the k nearest vectors to one query vector; ``nprobe`` for IVF indexes."""
    import faiss

    k = min(k, index.ntotal)
    if k <= 0:
        return [], []
    params = faiss.SearchParametersIVF(nprobe=int(nprobe)) if nprobe else None
    scores, rows = index.search(np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32), k, params=params)
    pairs = [(int(r), float(s)) for r, s in zip(rows[0], scores[0]) if r >= 0]
    return [r for r, _ in pairs], [s for _, s in pairs]
