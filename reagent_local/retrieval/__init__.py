"""Corpus reading, passages, embedding, FAISS and BM25 indexes, and hybrid search.

Public API::

    build_index(source, name, config, ...) -> Path     # a dump, a corpus file, or a folder of documents
    update_index(name, config, ...) -> Path            # an index of a folder brought up to date
    Index.open(name_or_path, config).search(query, k, mode) -> list[Hit]
    list_indexes(config), benchmark_index_name(path)
    open_search_index("a,b", config) -> MultiIndex    # several indexes, rankings fused (multi.py)
"""

from .build import build_index
from .index import Hit, Index
from .layout import benchmark_index_name, list_indexes
from .multi import MultiIndex, open_search_index
from .passages import Passage
from .update import update_index

__all__ = ["Hit", "Index", "MultiIndex", "Passage", "benchmark_index_name", "build_index", "list_indexes",
           "open_search_index", "update_index"]
