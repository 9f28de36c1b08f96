"""Placeholder: the `bench` command is being written."""

import click


@click.group(name="bench")
def bench() -> None:
    """(not yet available)"""
