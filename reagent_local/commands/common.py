"""Helpers shared by the command modules."""

from __future__ import annotations

import json
from typing import Any, Callable

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


LOCAL_RAY = "local"


def ray_option(func: Callable) -> Callable:
    """``--ray [ADDRESS]``: run on Ray; no address starts it on this machine."""
    return click.option(
        "--ray", "ray_address", is_flag=False, flag_value=LOCAL_RAY, default=None, metavar="[ADDRESS]",
        help="Run on Ray (needs the cluster extra): alone, on this machine; `auto`, the cluster this machine "
             "joined with `ray start`; HOST:PORT, that cluster's head node (--ray=HOST:PORT).",
    )(func)


def ray_target(address: str) -> str | None:
    """The address for ``reagent_local.cluster`` (None: start Ray here)."""
    return None if address == LOCAL_RAY else address


def refuse_without_ray(**given: Any) -> None:
    """Options that only mean something with --ray are refused without it."""
    used = [name for name, value in given.items() if value is not None]
    if used:
        flags = ", ".join("--" + name.replace("_", "-") for name in used)
        raise click.UsageError(f"{flags} only applies with --ray")
