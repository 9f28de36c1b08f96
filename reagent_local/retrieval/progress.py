"""A progress display for long build steps (rate in items/s and ETA), or none at all.

On a terminal it is a rich progress bar; when stderr is not a terminal (a log file, a pipe,
``nohup``), one line per step every ``LINE_SECONDS`` and when the step ends, so a long build
is never silent. Work found already done (reused embedding shards and vectors) is ``skip``ped:
it moves the count but not the rate, and a rate is printed only when it is meaningful.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import IO, Iterator, Protocol

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


LINE_SECONDS = 30.0  # without a terminal: a progress line per step this often
MIN_RATE_SECONDS = 1.0  # a rate over less time than this (or over no work) says nothing


def meaningful_rate(count: int, seconds: float | None) -> float | None:
    """``count / seconds``, or None when too little was timed for the rate to mean anything."""
    if not count or seconds is None or seconds < MIN_RATE_SECONDS:
        return None
    return count / seconds


class Reporter(Protocol):
    """What the builder calls: start a step, advance it, skip work already done, print a note."""

    def step(self, description: str, total: int | None, unit: str) -> object: ...
    def advance(self, handle: object, amount: int = 1) -> None: ...
    def skip(self, handle: object, amount: int) -> None: ...
    def finish(self, handle: object) -> None: ...
    def note(self, message: str) -> None: ...


class _Rate(ProgressColumn):
    """Items per second since the step began, over the work done (not the work skipped), with its unit."""

    def render(self, task: Task) -> Text:
        elapsed = task.finished_time if task.finished else task.elapsed
        speed = meaningful_rate(int(task.completed - task.fields.get("skipped", 0)), elapsed)
        unit = task.fields.get("unit", "items")
        return Text(f"{speed:,.0f} {unit}/s" if speed else f"- {unit}/s", style="cyan")


class _RichReporter:
    def __init__(self, progress: Progress) -> None:
        self._progress = progress

    def step(self, description: str, total: int | None, unit: str) -> object:
        return self._progress.add_task(description, total=total, unit=unit)

    def advance(self, handle: object, amount: int = 1) -> None:
        self._progress.advance(handle, amount)  # type: ignore[arg-type]

    def skip(self, handle: object, amount: int) -> None:
        task = self._progress.tasks[handle]  # type: ignore[index]
        self._progress.update(handle, advance=amount, skipped=task.fields.get("skipped", 0) + amount)  # type: ignore[arg-type]

    def finish(self, handle: object) -> None:
        task = self._progress.tasks[handle]  # type: ignore[index]
        self._progress.update(handle, total=task.completed)  # type: ignore[arg-type]

    def note(self, message: str) -> None:
        self._progress.console.print(message)


class _Step:
    """One step of a line reporter: counts and clocks."""

    def __init__(self, description: str, total: int | None, unit: str) -> None:
        self.description, self.total, self.unit = description, total, unit
        self.done = self.skipped = 0
        self.began = self.last = time.monotonic()


class LineReporter:
    """Progress as plain lines (no terminal): each step's count, rate and ETA every ``period`` seconds and at its end."""

    def __init__(self, stream: IO[str], period: float = LINE_SECONDS) -> None:
        self._stream, self._period = stream, period

    def _print(self, text: str) -> None:
        print(text, file=self._stream, flush=True)

    def step(self, description: str, total: int | None, unit: str) -> object:
        return _Step(description, total, unit)

    def advance(self, handle: object, amount: int = 1) -> None:
        step: _Step = handle  # type: ignore[assignment]
        step.done += amount
        now = time.monotonic()
        if now - step.last >= self._period:
            step.last = now
            self._print(self._line(step, now))

    def skip(self, handle: object, amount: int) -> None:
        step: _Step = handle  # type: ignore[assignment]
        step.skipped += amount
        step.done += amount

    def finish(self, handle: object) -> None:
        step: _Step = handle  # type: ignore[assignment]
        if step.done or step.total:
            self._print(self._line(step, time.monotonic(), finished=True))

    def note(self, message: str) -> None:
        self._print(message)

    @staticmethod
    def _line(step: _Step, now: float, finished: bool = False) -> str:
        elapsed = now - step.began
        count = f"{step.done:,}" + (f"/{step.total:,}" if step.total and not finished else "") + f" {step.unit}"
        if step.total and not finished:
            count += f" ({100 * step.done / step.total:.0f}%)"
        if step.skipped:
            count += f", {step.skipped:,} already done"
        rate = meaningful_rate(step.done - step.skipped, elapsed)
        out = f"{step.description}: {'done, ' if finished else ''}{count} in {elapsed:,.0f} s"
        if rate:
            out += f", {rate:,.1f} {step.unit}/s"
            left = (step.total or 0) - step.done
            if not finished and left > 0:
                out += f", about {_clock(left / rate)} left"
        return out


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class _SilentReporter:
    def step(self, description: str, total: int | None, unit: str) -> object:
        return None

    def advance(self, handle: object, amount: int = 1) -> None:
        pass

    def skip(self, handle: object, amount: int) -> None:
        pass

    def finish(self, handle: object) -> None:
        pass

    def note(self, message: str) -> None:
        pass


@contextmanager
def reporter(enabled: bool, stream: IO[str] | None = None) -> Iterator[Reporter]:
    """A progress display on stderr (or ``stream``) when ``enabled``, else a reporter that does nothing.

    A terminal gets a progress bar; anything else periodic lines (``LineReporter``).
    """
    if not enabled:
        yield _SilentReporter()
        return
    stream = stream if stream is not None else sys.stderr
    if not (hasattr(stream, "isatty") and stream.isatty()):
        yield LineReporter(stream)
        return
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _Rate(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=Console(file=stream),
        speed_estimate_period=60,
    )
    with progress:
        yield _RichReporter(progress)
