"""Knowledge graph from infoboxes: the graph, its triples and values, and the infobox parser.

An index's graph is built from its dump by ``retrieval.kg_build`` (index time) and opened by
``retrieval.kg_lookup``; this package does not import ``retrieval``.
"""

from .store import KnowledgeGraph
from .triples import Triple, triple_to_fact_text

__all__ = ["KnowledgeGraph", "Triple", "triple_to_fact_text"]
