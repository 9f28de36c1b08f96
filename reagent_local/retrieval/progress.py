"""A progress display for long build steps (rate in items/s and ETA), or none at all."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator, Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class Reporter(Protocol):
    """What the builder calls: start a step, advance it, print a note."""

    def step(self, description: str, total: int | None, unit: str) -> object: ...
    def advance(self, handle: object, amount: int = 1) -> None: ...
    def finish(self, handle: object) -> None: ...
    def note(self, message: str) -> None: ...


class _Rate(ProgressColumn):
    """Average items per second since the step began, with its unit ("passages/s")."""

    def render(self, task: Task) -> Text:
        elapsed = task.finished_time if task.finished else task.elapsed
        speed = task.completed / elapsed if elapsed else None
        unit = task.fields.get("unit", "items")
        return Text(f"{speed:,.0f} {unit}/s" if speed else f"- {unit}/s", style="cyan")


class _RichReporter:
    def __init__(self, progress: Progress) -> None:
        self._progress = progress

    def step(self, description: str, total: int | None, unit: str) -> object:
        return self._progress.add_task(description, total=total, unit=unit)

    def advance(self, handle: object, amount: int = 1) -> None:
        self._progress.advance(handle, amount)  # type: ignore[arg-type]

    def finish(self, handle: object) -> None:
        task = self._progress.tasks[handle]  # type: ignore[index]
        self._progress.update(handle, total=task.completed)  # type: ignore[arg-type]

    def note(self, message: str) -> None:
        self._progress.console.print(message)


class _SilentReporter:
    def step(self, description: str, total: int | None, unit: str) -> object:
        return None

    def advance(self, handle: object, amount: int = 1) -> None:
        pass

    def finish(self, handle: object) -> None:
        pass

    def note(self, message: str) -> None:
        pass


@contextmanager
def reporter(enabled: bool) -> Iterator[Reporter]:
    """A progress display on stderr when ``enabled``, else a reporter that does nothing."""
    if not enabled:
        yield _SilentReporter()
        return
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _Rate(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr),
        speed_estimate_period=60,
    )
    with progress:
        yield _RichReporter(progress)
