"""Knowledge graph from infoboxes: extraction at index time, triples as evidence at query time."""

from .build import KGBuilder, build_kg
from .store import KnowledgeGraph
from .triples import Triple, triple_to_fact_text

__all__ = ["KGBuilder", "KnowledgeGraph", "Triple", "build_kg", "triple_to_fact_text"]
