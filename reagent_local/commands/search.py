"""`reagent search`: ranked passages for a query from one index, or with --kg its knowledge-graph triples."""

from __future__ import annotations

import click

from ..retrieval.index import MODES
from .common import config_from, echo_json


@click.command(name="search")
@click.argument("query")
@click.option("--index", "index_name", default=None,
              help="Index name or folder, or several separated by commas (rankings fused; default: retrieval.index).")
@click.option("-k", "k", type=int, default=None, help="How many passages (default: retrieval.top_k).")
@click.option("--mode", type=click.Choice(MODES), default=None, help="dense, sparse or hybrid (default: retrieval.mode).")
@click.option("--kg", is_flag=True,
              help="Search the index's knowledge graph instead: the entities QUERY names and their triples "
              "(-k default 10).")
@click.option("--json", "as_json", is_flag=True, help="Print hits as JSON.")
@click.option("--chars", type=int, default=300, show_default=True, help="Characters of each passage to show (0: all).")
@click.option("--nprobe", type=click.IntRange(min=1), default=None,
              help="IVF-PQ indexes: cells the dense search scans (default: retrieval.nprobe, else the index's own).")
def search(query: str, index_name: str | None, k: int | None, mode: str | None, kg: bool, as_json: bool, chars: int,
           nprobe: int | None) -> None:
    """Search QUERY and print the ranked passages with title, score and id (--kg: graph triples)."""
    from ..retrieval import open_search_index

    if kg:
        _search_graph(query, index_name, k, as_json)
        return
    config = config_from(retrieval__index=index_name, retrieval__top_k=k, retrieval__mode=mode,
                         retrieval__nprobe=nprobe)
    r = config.retrieval
    with open_search_index(r.index, config) as index:
        hits = index.search(query, k=r.top_k, mode=r.mode)
    if as_json:
        echo_json([{"rank": h.rank, "id": h.passage.id, "title": h.passage.title, "score": h.score,
                    **({"index": h.index} if h.index else {}), "text": h.passage.text,
                    **({"origin": h.passage.origin.to_dict()} if h.passage.origin else {})}
                   for h in hits])
        return
    if not hits:
        click.echo(f"no passages matched in {r.mode} mode")
    for h in hits:
        text = h.passage.text.replace("\n", " ")
        if chars and len(text) > chars:
            text = text[:chars].rstrip() + "..."
        click.echo(f"{h.rank}. {h.index + ': ' if h.index else ''}{h.passage.title}  [{h.passage.id}]  score {h.score:.4f}")
        if h.passage.origin is not None:
            click.echo(f"   {h.passage.origin.label()}")
        click.echo(f"   {text}")


def _search_graph(query: str, index_name: str | None, k: int | None, as_json: bool) -> None:
    """Print the entities the query names and their triples, from the index's kg.duckdb."""
    from ..retrieval.kg_lookup import lookup, open_index_graph

    config = config_from(retrieval__index=index_name)
    with open_index_graph(config.retrieval.index, config) as graph:
        found = lookup(graph, query, k=k or 10)
    if as_json:
        echo_json({"index": config.retrieval.index, **found.to_dict()})
        return
    if not found.entities and not found.triples:
        click.echo("no entity of the knowledge graph is named in the query")
        return
    click.echo("entities: " + (", ".join(found.entities) if found.entities else "none (triples found by value)"))
    if not found.triples:
        click.echo("no triples for these entities")
    for rank, t in enumerate(found.triples, 1):
        shown = f'  (shown as "{t.display}")' if t.display and t.display != t.value else ""
        click.echo(f"{rank}. {t.subject} | {t.relation} | {t.value}{shown}  [{t.passage_id}]")
