"""`reagent rules`: the question-shape rules, their stages, and which the configuration enables."""

from __future__ import annotations

import click

from .common import config_from, echo_json


@click.command(name="rules")
@click.option("--rules", "spec", default=None, metavar="SPEC", help="Show what this spec enables (e.g. 'all,-both-yes').")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list.")
def rules(spec: str | None, as_json: bool) -> None:
    """List the question-shape rules (name, stage, what it does, on/off)."""
    from ..rules import RuleSet, describe_rules

    enabled = RuleSet(config_from(pipeline__rules=spec).pipeline.rules).enabled
    rows = [{"name": n, "stage": s, "enabled": n in enabled, "summary": d} for n, s, d in describe_rules()]
    if as_json:
        echo_json(rows)
        return
    width, stage_width = max(len(r["name"]) for r in rows), max(len(r["stage"]) for r in rows)
    for row in rows:
        mark = "on " if row["enabled"] else "off"
        click.echo(f"{mark}  {row['name']:<{width}}  {row['stage']:<{stage_width}}  {row['summary']}")
