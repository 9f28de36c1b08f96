"""Corpus reading, passages, embedding, FAISS and BM25 indexes, and hybrid search.

Public API::

    build_index(source, name, config, ...) -> Path
    Index.open(name_or_path, config).search(query, k, mode) -> list[Hit]
    list_indexes(config), benchmark_index_name(path)
"""

from .build import build_index
from .index import Hit, Index
from .layout import benchmark_index_name, list_indexes
from .passages import Passage

__all__ = ["Hit", "Index", "Passage", "benchmark_index_name", "build_index", "list_indexes"]
