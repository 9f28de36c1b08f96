"""Placeholder: the `trace` command is being written."""

import click


@click.group(name="trace")
def trace() -> None:
    """(not yet available)"""
