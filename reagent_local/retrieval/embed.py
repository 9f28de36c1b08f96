"""Sentence embeddings on CPU: the embedder a configuration names, and which backends' vectors agree.

Backends: "torch" (sentence-transformers on PyTorch, embed_model.py), "onnx" (the same
graph exported to ONNX, fp32) and "onnx-int8" (its weights quantised to int8), chosen by
``retrieval.embedder_backend``; see ``onnx_embed.py``. ``hash-<d>`` is a model-free test double.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..errors import ConfigError
from .embed_model import DEFAULT_EMBEDDER, KNOWN_DIMENSIONS, Embedder, resolve_model_path  # noqa: F401
from .onnx_embed import OnnxEmbedder

if TYPE_CHECKING:
    from ..config import Config

BACKENDS = ("torch", "onnx", "onnx-int8")
# Backends whose vectors agree within tolerance, so an index built by one is searched
# with query vectors from the other. Measured (docs/retrieval.md, "ONNX Runtime embedder"):
# fp32 ONNX gives PyTorch's vectors (cosine > 0.9999, recall identical); int8 vectors have
# cosine 0.984-0.99+ to them, and mixing int8 with fp32 on either side moved recall@5 on
# the three benchmarks by at most .005. A backend missing here is refused (IndexMismatchError).
AGREEING = {frozenset(pair) for pair in (("torch", "onnx"), ("torch", "onnx-int8"), ("onnx", "onnx-int8"))}


def vectors_agree(built: str, query: str) -> bool:
    """Whether query vectors from backend ``query`` may search an index built by backend ``built``."""
    return built == query or frozenset({built, query}) in AGREEING


_HASH_NAME = re.compile(r"^hash-(\d{1,4})$")


def is_hash(name: str) -> bool:
    """Whether ``name`` is the hashed bag-of-words test embedder (no model, no backend)."""
    return bool(_HASH_NAME.match(name))


def configured_dimension(name: str) -> int:
    """The output dimension of an embedder, loading it only when it is not a known one."""
    if name in KNOWN_DIMENSIONS:
        return KNOWN_DIMENSIONS[name]
    return make_embedder(name).dimension


def make_embedder(name: str, *, backend: str = "torch", models_dir: Path | None = None,
                  batch_size: int = 64) -> Embedder | HashEmbedder | OnnxEmbedder:
    """The embedder called ``name``: ``hash-<d>`` is the lexical test double, anything else a model.

    ``backend`` picks how a model runs (BACKENDS); the ONNX ones keep their export
    under ``models_dir``.
    """
    match = _HASH_NAME.match(name)
    if match:
        return HashEmbedder(int(match.group(1)))
    if backend == "torch":
        return Embedder(name, batch_size=batch_size)
    if backend not in BACKENDS:
        raise ConfigError(f"unknown embedder backend {backend!r}", hint=f"set retrieval.embedder_backend to one of {', '.join(BACKENDS)}")
    if models_dir is None:
        raise ConfigError(f"the {backend} embedder needs a models folder for its export")
    return OnnxEmbedder(name, backend=backend, models_dir=models_dir, batch_size=batch_size)


def embedder_for(config: Config) -> Embedder | HashEmbedder | OnnxEmbedder:
    """The embedder the configuration names (retrieval.embedder, retrieval.embedder_backend)."""
    return make_embedder(config.retrieval.embedder, backend=config.retrieval.embedder_backend,
                         models_dir=config.paths.models)


class HashEmbedder:
    """A model-free embedder for tests: hashed bag of lower-cased words, normalised.

    Lexical, not semantic: texts sharing words are close. Deterministic across runs
    (CRC32, not Python's salted hash) and instant, so tests can build real indexes.
    """

    def __init__(self, dimension: int = 64) -> None:
        if dimension < 2:
            raise ConfigError(f"hash embedder dimension must be at least 2, got {dimension}")
        self.name = f"hash-{dimension}"
        self.dimension = dimension
        self.backend = "hash"

    def record(self) -> dict:
        """Nothing beyond name, backend and dimension to record in an index manifest."""
        return {}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One normalised row per text; a text without words maps to the zero vector."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = zlib.crc32(word.encode("utf-8"))
                out[i, h % self.dimension] += 1.0 if (h >> 16) & 1 else -1.0
            norm = np.linalg.norm(out[i])
            if norm:
                out[i] /= norm
        return out
