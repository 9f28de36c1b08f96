"""Placeholder: `reagent bench retrieval` is being written."""

import click


@click.command(name="retrieval")
def retrieval() -> None:
    """(not yet available)"""
