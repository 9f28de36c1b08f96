"""An index's knowledge graph by index name, the reason when it has none, and query lookups."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..config import Config
from ..errors import QuestionError, ReagentError
from .layout import read_manifest, resolve_index
from .readers import BENCHMARK_FORMATS
from ..kg.store import KG_FILENAME, KnowledgeGraph
from ..kg.triples import Triple

_CORPUS_NAMES = {"hotpotqa": "HotpotQA", "2wiki": "2WikiMultiHopQA", "musique": "MuSiQue"}


class NoKnowledgeGraphError(ReagentError):
    """The index has no kg.duckdb: built with --no-kg, or from text that has no infoboxes."""


def absence_reason(manifest: dict, path: Path) -> NoKnowledgeGraphError:
    """The error that says why the index at ``path`` has no knowledge graph, and what to do."""
    name = manifest.get("name") or path.name
    reader = manifest.get("reader")
    source = (manifest.get("source") or {}).get("path", "SOURCE")
    rebuild = f"`reagent index build {source} --name {name} --force`"
    if reader in BENCHMARK_FORMATS:
        return NoKnowledgeGraphError(
            f"index {name} has no knowledge graph: it was built from {_CORPUS_NAMES[reader]} paragraphs, "
            "which are plain text with no infoboxes to extract triples from",
            hint="search its passages without --kg; a graph comes only from a MediaWiki dump (for example enwiki-sample)",
        )
    if reader == "wikixml" and manifest.get("kg"):
        return NoKnowledgeGraphError(
            f"index {name} lists a knowledge graph in its manifest but {path / KG_FILENAME} is missing",
            hint=f"rebuild it with {rebuild}",
        )
    if reader == "wikixml":
        return NoKnowledgeGraphError(
            f"index {name} has no knowledge graph: it was built from a dump with --no-kg",
            hint=f"rebuild it without --no-kg: {rebuild}",
        )
    return NoKnowledgeGraphError(
        f"index {name} has no knowledge graph: it was built from {reader or 'plain'} documents, "
        "which have no infoboxes to extract triples from",
        hint="build an index from a MediaWiki XML dump (.xml or .xml.bz2) to get a graph",
    )


def open_index_graph(name_or_path: str | Path, config: Config) -> KnowledgeGraph:
    """The knowledge graph of an index given by name or folder; NoKnowledgeGraphError says why there is none."""
    path = resolve_index(name_or_path, config)
    graph = KnowledgeGraph.open(path)
    if graph is None:
        raise absence_reason(read_manifest(path), path)
    return graph


@dataclass(frozen=True)
class GraphLookup:
    """What the graph returns for a query: the entities named in it and their triples, best first."""

    query: str
    entities: list[str]
    triples: list[Triple]

    def to_dict(self) -> dict:
        """JSON-ready form; each triple carries its rank and provenance."""
        return {"query": self.query, "entities": self.entities,
                "triples": [{"rank": rank, **triple_record(t)} for rank, t in enumerate(self.triples, 1)]}


def triple_record(triple: Triple) -> dict:
    """A triple's fields as a dict (``display`` is the text shown in the infobox when it differs)."""
    return {"subject": triple.subject, "relation": triple.relation, "value": triple.value,
            "display": triple.display, "value_date": triple.value_date, "value_number": triple.value_number,
            "unit": triple.unit, "raw_key": triple.raw_key, "passage_id": triple.passage_id}


def lookup(graph: KnowledgeGraph, query: str, k: int = 10) -> GraphLookup:
    """The entities the query names and the k most relevant triples (``KnowledgeGraph.search``)."""
    if not query or not query.strip():
        raise QuestionError("the search query is empty", hint="pass some words to search for")
    if k < 1:
        raise ReagentError(f"k must be at least 1, got {k}")
    return GraphLookup(query, graph.find_entities(query), graph.search(query, k=k))
