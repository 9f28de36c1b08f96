"""Placeholder: the `index` command is being written."""

import click


@click.group(name="index")
def index() -> None:
    """(not yet available)"""
