"""`reagent trace`: read a run from the event log (list, show, html, export).

Every subcommand opens the log read-only, so it works while a run is writing to it
(it then reads a snapshot as of the moment it opened). RUN_ID may be a full run id,
a unique prefix of one, or `last`.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import click

from .common import echo_json, info

_LOG_HELP = "Event log to read (default: paths.log from the configuration, i.e. <home>/reagent-log.duckdb)."


def _log_option(func: Callable) -> Callable:
    return click.option("--log", "log_path", type=click.Path(dir_okay=False, path_type=Path), help=_LOG_HELP)(func)


@contextmanager
def _open_log(log_path: Path | None) -> Iterator[Any]:
    from ..core.log import EventLog
    from .common import config_from

    path = log_path if log_path is not None else config_from().paths.log
    with EventLog(path, read_only=True) as log:
        yield log


@click.group(name="trace")
def trace() -> None:
    """Read a run: which agent said what, what was taken back, and why."""


@trace.command(name="list")
@click.option("--last", "last", type=click.IntRange(min=1), default=20, show_default=True, help="How many runs.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_log_option
def list_cmd(last: int, as_json: bool, log_path: Path | None) -> None:
    """Recent runs, newest first.

    Each with its question, answer, status, seconds, LLM calls and backtracks (local/global).
    """
    from ..trace.runs import list_runs

    with _open_log(log_path) as log:
        runs = list_runs(log, last)
    if as_json:
        echo_json([r.to_dict() for r in runs])
        return
    if not runs:
        info("no runs in this log yet: ask a question with `reagent ask \"...\"`")
        return
    from rich.console import Console

    from ..trace.terminal import runs_table

    Console().print(runs_table(runs))


@trace.command(name="show")
@click.argument("run_id")
@_log_option
def show(run_id: str, log_path: Path | None) -> None:
    """A run's timeline in the terminal.

    RUN_ID is a run id, a unique prefix of one, or `last`. Shows the messages of every
    round, checkpoints, local and global rollbacks with what they discarded, the
    conflict sets, the LLM calls, and the answer with its passages.
    """
    from rich.console import Console

    from ..trace import load_trace
    from ..trace.runs import resolve_run_id
    from ..trace.terminal import render

    with _open_log(log_path) as log:
        trace_ = load_trace(log, resolve_run_id(log, run_id))
    render(trace_, Console())


@trace.command(name="html")
@click.argument("run_id")
@click.option("-o", "--output", type=click.Path(path_type=Path), help="File to write (default: <run id>.html here).")
@_log_option
def html_cmd(run_id: str, output: Path | None, log_path: Path | None) -> None:
    """A run as one self-contained HTML page.

    Lanes per agent on a shared logical time axis; click a mark for its statement,
    evidence and LLM call. The file needs no network to view. Prints its path.
    """
    from ..trace import load_trace
    from ..trace.html import write_html
    from ..trace.runs import resolve_run_id

    with _open_log(log_path) as log:
        trace_ = load_trace(log, resolve_run_id(log, run_id))
    path = write_html(trace_, output or Path(f"{trace_.run.run_id}.html"))
    click.echo(str(path))


@trace.command(name="export")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, default=True,
              help="JSON (the default and, for now, the only format).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write to a file instead of stdout.")
@_log_option
def export(run_id: str, as_json: bool, output: Path | None, log_path: Path | None) -> None:
    """A run's events as JSON, for other tools.

    The run, its events, checkpoints (with snapshots) and LLM calls (prompt, raw output).
    """
    import json

    from ..trace.runs import export_run, resolve_run_id

    with _open_log(log_path) as log:
        data = export_run(log, resolve_run_id(log, run_id))
    if output is None:
        echo_json(data)
        return
    output.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    info(f"wrote {output}")
