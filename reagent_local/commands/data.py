"""Placeholder: the `data` command is being written."""

import click


@click.group(name="data")
def data() -> None:
    """(not yet available)"""
