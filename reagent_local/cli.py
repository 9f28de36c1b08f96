"""The `reagent` command: a thin click layer over the library.

Each command parses its options, calls one library function and prints. Command
groups live in ``reagent_local.commands``; this module wires them together and turns
ReagentError into a one-line message and a non-zero exit, without a traceback.
"""

from __future__ import annotations

import os
import sys

import click

from .version import __version__
from .errors import ReagentError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="reagent")
def cli() -> None:
    """Offline multi-hop question answering with reversible multi-agent reasoning."""


def _register() -> None:
    from .commands import (ask, bench, bench_conversation, bench_kg, bench_retrieval, chat, data, doctor, index, mcp,
                           models, rules, search, serve, trace)

    cli.add_command(models.models)
    cli.add_command(data.data)
    cli.add_command(index.index)
    cli.add_command(search.search)
    cli.add_command(ask.ask)
    cli.add_command(chat.chat)
    cli.add_command(rules.rules)
    cli.add_command(bench.bench)
    bench.bench.add_command(bench_retrieval.retrieval)
    bench.bench.add_command(bench_kg.kg)
    bench.bench.add_command(bench_conversation.conversation)
    cli.add_command(trace.trace)
    cli.add_command(serve.serve)
    cli.add_command(mcp.mcp)
    cli.add_command(doctor.doctor)


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, print user errors without a stack trace."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from .runtime.openmp import prefer_passive_wait

    prefer_passive_wait()  # llama.cpp's waiting OpenMP threads sleep instead of spinning (runtime/openmp.py)
    try:
        cli.main(args=argv, prog_name="reagent", standalone_mode=False)
    except ReagentError as exc:
        click.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except click.exceptions.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
