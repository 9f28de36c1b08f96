"""Did a measurement share the machine? Other processes' share of the CPU, and the model calls' own account.

Timings taken while other processes used the cores are not comparable with timings on quiet
cores. ``CpuMeter`` reads the kernel's counters (``/proc/stat``, ``/proc/self/stat``) before
and after a piece of work: the CPU time all cores spent busy, minus this process's own, over
the cores' time, is the share other processes took. ``Sharing`` adds up what a model's calls
saw: the other model processes active (``runtime/cores.py``), the threads used, and, for a
model served by ``reagent serve``, the seconds a call waited while the server answered others.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .cpu import usable_cores

SHARED_CPU = 0.25  # other processes took at least this share of the cores: the seconds were measured under contention
SHARED_WAIT = 0.5  # seconds a question's calls waited for a served model busy with other clients
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _busy_ticks() -> int | None:
    """Clock ticks all CPUs spent busy since boot (everything but idle and iowait), or None without /proc."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    values = [int(v) for v in fields[:8]]
    return sum(values) - values[3] - values[4]


def _own_ticks() -> int | None:
    """Clock ticks this process has run (user and system, all threads)."""
    try:
        stat = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(stat[11]) + int(stat[12])


@dataclass(frozen=True)
class CpuMark:
    """The counters at one moment."""

    wall: float
    busy: int | None
    own: int | None


class CpuMeter:
    """Other processes' share of the cores between two marks (None where /proc is missing)."""

    def __init__(self, cores: int | None = None) -> None:
        self.cores = cores or usable_cores()

    def mark(self) -> CpuMark:
        """Read the counters now."""
        return CpuMark(time.monotonic(), _busy_ticks(), _own_ticks())

    def others_share(self, start: CpuMark, end: CpuMark) -> float | None:
        """The fraction of the cores' time that other processes used between ``start`` and ``end``."""
        seconds = end.wall - start.wall
        if None in (start.busy, end.busy, start.own, end.own) or seconds <= 0:
            return None
        others = ((end.busy - start.busy) - (end.own - start.own)) / _TICKS  # type: ignore[operator]
        return round(min(1.0, max(0.0, others / (seconds * self.cores))), 3)


@dataclass
class Sharing:
    """What a model's calls saw of other work on the machine, added up since the last ``reset``."""

    via: str = "local"  # local: this process's llama.cpp; server: a `reagent serve` of the same home
    calls: int = 0
    others_max: int = 0  # most other model processes active at one call (local)
    threads_min: int = 0  # fewest llama.cpp threads a call ran with (0: no call yet)
    threads_max: int = 0
    waited_seconds: float = 0.0  # server: time calls waited while the model answered other clients
    others_cpu_seconds: float = 0.0  # server: call seconds weighted by other processes' CPU share then
    call_seconds: float = 0.0

    def add(self, *, threads: int, others: int = 0, seconds: float = 0.0, waited: float = 0.0,
            others_cpu: float | None = None) -> None:
        """Count one call."""
        self.calls += 1
        self.others_max = max(self.others_max, others)
        self.threads_min = threads if not self.threads_min else min(self.threads_min, threads)
        self.threads_max = max(self.threads_max, threads)
        self.waited_seconds += waited
        self.call_seconds += seconds
        if others_cpu is not None:
            self.others_cpu_seconds += others_cpu * seconds

    def reset(self) -> None:
        """Start counting afresh (the benchmark does, before each question)."""
        for name, value in asdict(Sharing(via=self.via)).items():
            setattr(self, name, value)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def machine_record(sharing: Sharing | None, others_cpu: float | None, seconds: float) -> dict[str, Any]:
    """A benchmark record's ``machine`` field: how much of the machine a question's seconds had to themselves.

    ``others_cpu``: other processes' share of the cores during the question (this process's meter);
    for a served model the server's account replaces it (the server's own work is the question's).
    """
    via = sharing.via if sharing is not None else "local"
    if sharing is not None and via == "server":
        busy = sharing.others_cpu_seconds + sharing.waited_seconds
        others_cpu = round(min(1.0, busy / seconds), 3) if seconds > 0 else None
    record = {"via": via, "others_cpu": others_cpu,
              "model_processes": sharing.others_max if sharing is not None and via == "local" else None,
              "threads": sharing.threads_min or None if sharing is not None else None,
              "waited_seconds": round(sharing.waited_seconds, 3) if sharing is not None and via == "server" else None}
    record["shared"] = bool((others_cpu or 0.0) >= SHARED_CPU or (record["model_processes"] or 0) > 0
                            or (record["waited_seconds"] or 0.0) >= SHARED_WAIT)
    return record
