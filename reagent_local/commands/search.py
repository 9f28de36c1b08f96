"""`reagent search`: ranked passages for a query from one index."""

from __future__ import annotations

import click

from ..errors import ReagentError
from ..retrieval.index import MODES
from .common import config_from, echo_json


@click.command(name="search")
@click.argument("query")
@click.option("--index", "index_name", default=None, help="Index name or folder (default: retrieval.index).")
@click.option("-k", "k", type=int, default=None, help="How many passages (default: retrieval.top_k).")
@click.option("--mode", type=click.Choice(MODES), default=None, help="dense, sparse or hybrid (default: retrieval.mode).")
@click.option("--kg", is_flag=True, help="Also look the query up in the index's knowledge graph.")
@click.option("--json", "as_json", is_flag=True, help="Print hits as JSON.")
@click.option("--chars", type=int, default=300, show_default=True, help="Characters of each passage to show (0: all).")
def search(query: str, index_name: str | None, k: int | None, mode: str | None, kg: bool, as_json: bool, chars: int) -> None:
    """Search QUERY and print the ranked passages with title, score and id."""
    from ..retrieval import Index

    if kg:
        raise ReagentError(
            "knowledge-graph search from `reagent search` is not available yet",
            hint="search passages without --kg; the knowledge graph is used by the pipeline's agents",
        )
    config = config_from(retrieval__index=index_name, retrieval__top_k=k, retrieval__mode=mode)
    r = config.retrieval
    with Index.open(r.index, config) as index:
        hits = index.search(query, k=r.top_k, mode=r.mode)
    if as_json:
        echo_json([{"rank": h.rank, "id": h.passage.id, "title": h.passage.title, "score": h.score,
                    "text": h.passage.text} for h in hits])
        return
    if not hits:
        click.echo(f"no passages matched in {r.mode} mode")
    for h in hits:
        text = h.passage.text.replace("\n", " ")
        if chars and len(text) > chars:
            text = text[:chars].rstrip() + "..."
        click.echo(f"{h.rank}. {h.passage.title}  [{h.passage.id}]  score {h.score:.4f}")
        click.echo(f"   {text}")
