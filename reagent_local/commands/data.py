"""`reagent data`: fetch sample data that a fresh machine can get from PyPI."""

from __future__ import annotations

import click

from ..retrieval.sample_data import fetch_wiki_sample
from .common import config_from, info


@click.group(name="data")
def data() -> None:
    """Fetch sample data."""


@data.command(name="fetch-wiki-sample")
def fetch_wiki_sample_cmd() -> None:
    """Fetch a real shortened Wikipedia dump (206 pages) and print its path."""
    path = fetch_wiki_sample(config_from().paths.cache, log=info)
    click.echo(str(path))
