"""Placeholder: the `ask` command is being written."""

import click


@click.group(name="ask")
def ask() -> None:
    """(not yet available)"""
