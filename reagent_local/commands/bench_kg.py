"""`reagent bench kg`: what an index's knowledge graph adds to passage retrieval (template questions)."""

from __future__ import annotations

from pathlib import Path

import click

from .common import config_from, echo_json, info


@click.command(name="kg")
@click.option("--index", "index_name", default=None, help="Index name or folder (default: retrieval.index).")
@click.option("--limit", type=int, default=None, help="At most N questions, relations taken in turn (default: all).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (with per-question records).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Also write the JSON report here.")
def kg(index_name: str | None, limit: int | None, as_json: bool, out: Path | None) -> None:
    """Answer recall of hybrid top-5 passages, graph top-10 triples and both, on questions built from the graph."""
    from ..bench.kg_bench import format_kg_table, run_kg_bench, write_kg_report

    config = config_from(retrieval__index=index_name)
    report = run_kg_bench(config.retrieval.index, config, limit=limit)
    if as_json:
        echo_json(report)
    else:
        click.echo(format_kg_table(report))
    if out is not None:
        info(f"report: {write_kg_report(report, out)}")
