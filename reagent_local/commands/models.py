"""Placeholder: the `models` command is being written."""

import click


@click.group(name="models")
def models() -> None:
    """(not yet available)"""
