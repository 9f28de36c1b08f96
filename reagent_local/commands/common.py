"""Helpers shared by the command modules."""

from __future__ import annotations

import json
from typing import Any

import click

from ..config import Config, load_config


def config_from(**overrides: Any) -> Config:
    """Load the configuration with CLI overrides given as dotted names."""
    return load_config({k.replace("__", "."): v for k, v in overrides.items()})


def echo_json(data: Any) -> None:
    """Print JSON to stdout (UTF-8, indented)."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def info(message: str) -> None:
    """Progress messages go to stderr so --json output stays clean."""
    click.echo(message, err=True)
