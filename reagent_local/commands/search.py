"""Placeholder: the `search` command is being written."""

import click


@click.group(name="search")
def search() -> None:
    """(not yet available)"""
