"""`reagent ask`: answer one question offline."""

from __future__ import annotations

from typing import Any

import click

from ..config import BACKTRACKING
from .common import echo_json, info


@click.command(name="ask")
@click.argument("question")
@click.option("--index", help="Index name or path, or several separated by commas (a,b: searched together, rankings "
                               "fused; default: config retrieval.index, enwiki-sample).")
@click.option("--model", help="Registry model name or path to a .gguf file.")
@click.option("--backtracking", type=click.Choice(list(BACKTRACKING)), help="Ablation switch.")
@click.option("--rules", default=None, metavar="SPEC",
              help="Question-shape rules: 'all', names, '-NAME' to switch one off (`reagent rules` lists them).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--local", is_flag=True,
              help="Load the model in this process even when a `reagent serve` of this home could answer.")
def ask(question: str, index: str | None, model: str | None, backtracking: str | None, rules: str | None,
        as_json: bool, local: bool) -> None:
    """Answer QUESTION with the six-agent ReAgent pipeline."""
    from ..api import ReAgent
    from ..reasoning.pipeline import validate_question
    from .common import config_from

    config = config_from(retrieval__index=index, llm__model=model, pipeline__backtracking=backtracking,
                         pipeline__rules=rules, llm__use_server=False if local else None)
    validate_question(question, config.pipeline.max_question_chars)  # fail before loading anything
    with ReAgent.load(config=config, on_event=_tell) as agent:
        if agent.route.note():
            info(agent.route.note())
        if not as_json and not agent.served:
            info(f"thinking with {config.llm.model if not model else model} over index {config.retrieval.index} ...")
        answer = agent.ask(question)
    if as_json:
        echo_json(answer.to_dict())
        return
    print_answer(answer)


def print_answer(answer: Any) -> None:
    """An answer as `reagent ask` prints it: the steps, the answer, the sources, the account line."""
    from ..reasoning.answer import snippet

    rewrite = answer.extra.get("rewrite") or {}
    if rewrite.get("changed"):
        click.echo(click.style("Read as: ", fg="blue") + rewrite["standalone"])
    for number, sub in enumerate(answer.subquestions, 1):
        titles = ", ".join(dict.fromkeys(f"{p.index}: {p.title}" if p.index else p.title
                                         for p in sub.passages)) or "no passage"
        flag = " (unverified)" if sub.uncertain else ""
        click.echo(f"  {number}. {sub.question}\n     -> {sub.answer}{flag}   [{titles}]")
    mark = click.style(" (uncertain: " + answer.uncertain_reason + ")", fg="yellow") if answer.uncertain else ""
    click.echo(click.style("Answer: ", bold=True) + answer.answer + mark)
    if answer.trust_line():
        label = (answer.trust or {}).get("label")
        colour = {"trusted": "green", "likely wrong": "red"}.get(str(label), "yellow")
        click.echo(click.style(answer.trust_line(), fg="yellow" if answer.not_found else colour))
    if answer.closest:
        click.echo(click.style("Closest passages:", bold=True))
        for number, passage in enumerate(answer.closest, 1):
            where = passage.origin.label() if passage.origin is not None else passage.title
            click.echo(f"  [{number}] {where}: {snippet(passage.text)}")
    sources = answer.sources()
    if sources:
        click.echo(click.style("Sources:", bold=True))
        for number, line in enumerate(sources, 1):
            click.echo(f"  [{number}] {line}")
    if answer.road_line():
        click.echo(click.style(answer.road_line(), dim=True))
    if answer.rules_fired:
        click.echo(click.style("rules: " + ", ".join(answer.rules_fired), dim=True))
    click.echo(click.style(answer.account_line(), dim=True))


def _tell(kind: str, data: dict) -> None:
    """A served question's place in the queue, and a fallback to this process's own model."""
    if kind == "queued" and data.get("ahead"):
        info(data["line"].replace("[server] ", "server: "))
    elif kind == "local":
        info(data["line"])
