"""Model processes on one machine share its cores: a registry of them, and each one's fair count of threads.

Every process that holds a llama.cpp model writes a small file into a per-user folder of this
machine (``cores_dir()``): its pid and start time, the threads it was told to use (None: a fair
share), and whether it is busy (in a model call, or was within the last ``HOLD_SECONDS``). Before
each call a process reads the folder and takes its share of the cores: the cores left by
processes with a fixed thread count, split evenly among the busy processes with an adaptive one
(``fair_threads``). llama.cpp applies a new count to the next call (``llama_set_n_threads``), so
the split follows processes as they start and end, between calls.

The folder is per machine, not per home: two homes on one machine share the same cores. A
process that is killed leaves its file behind; it is ignored (and removed) once its pid is gone
or belongs to another process.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.liveness import is_zombie, process_start
from .cpu import usable_cores

HOLD_SECONDS = 3.0  # a process that ended a call this recently is still busy (a question's next call is near)
CORES_DIR_ENV = "REAGENT_CORES_DIR"


def cores_dir() -> Path:
    """This user's registry folder on this machine: $REAGENT_CORES_DIR, else under $XDG_RUNTIME_DIR or /tmp."""
    if os.environ.get(CORES_DIR_ENV):
        return Path(os.environ[CORES_DIR_ENV])
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "reagent" / "cores"
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"reagent-{uid}" / "cores"


@dataclass(frozen=True)
class Member:
    """One registered model process as its file says."""

    pid: int
    proc_start: int | None
    fixed_threads: int | None  # None: takes a fair share
    busy: bool  # in a call now
    since: float  # when ``busy`` last changed
    model: str = ""

    def active(self, now: float) -> bool:
        """Busy, or idle for less than HOLD_SECONDS."""
        return self.busy or now - self.since < HOLD_SECONDS


def fair_threads(cores: int, me: int, members: list[Member], now: float) -> int:
    """The threads process ``me`` should use: cores left by fixed members, split evenly among active adaptive ones."""
    active = [m for m in members if m.active(now) or m.pid == me]
    fixed = sum(m.fixed_threads or 0 for m in active if m.fixed_threads and m.pid != me)
    sharing = sorted(m.pid for m in active if not m.fixed_threads or m.pid == me)
    left = max(cores - fixed, len(sharing), 1)
    base, extra = divmod(left, max(len(sharing), 1))
    rank = sharing.index(me) if me in sharing else 0
    return max(1, base + (1 if rank < extra else 0))


def _alive(pid: int, proc_start: int | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if is_zombie(pid):
        return False
    now = process_start(pid)
    return proc_start is None or now is None or now == proc_start


def read_members(folder: Path, *, prune: bool = True) -> list[Member]:
    """The live registered processes (files of dead ones are removed when ``prune``)."""
    members = []
    try:
        names = [p for p in folder.iterdir() if p.suffix == ".json"]
    except OSError:
        return []
    for path in names:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            member = Member(int(data["pid"]), data.get("proc_start"), data.get("fixed_threads"),
                            bool(data.get("busy")), float(data.get("since", 0.0)), str(data.get("model", "")))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being replaced, or not ours
        if _alive(member.pid, member.proc_start):
            members.append(member)
        elif prune:
            path.unlink(missing_ok=True)
    return members


@dataclass
class CallShare:
    """What one call's share was: the threads it ran with and the other model processes active then."""

    threads: int
    others: int


@dataclass
class CoreShare:
    """This process's entry in the registry; ``begin``/``end`` bracket each model call."""

    model: str
    fixed_threads: int | None = None  # llm.n_threads when set: used as is, and counted by the others
    folder: Path = field(default_factory=cores_dir)
    cores: int = field(default_factory=usable_cores)
    pid: int = field(default_factory=os.getpid)
    _registered: bool = field(default=False, init=False)

    @property
    def path(self) -> Path:
        return self.folder / f"{self.pid}.json"

    def _write(self, busy: bool) -> None:
        note = {"pid": self.pid, "proc_start": process_start(self.pid), "fixed_threads": self.fixed_threads,
                "busy": busy, "since": time.time(), "model": self.model}
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self.folder / f".{self.pid}.tmp"
            tmp.write_text(json.dumps(note), encoding="utf-8")
            os.replace(tmp, self.path)
            self._registered = True
        except OSError:  # a registry that cannot be written only costs fairness, never an answer
            pass

    def register(self) -> None:
        """Enter the registry as idle (at model load)."""
        self._write(busy=False)

    def begin(self) -> CallShare:
        """Mark this process busy and return the threads its next call should use."""
        self._write(busy=True)
        members = read_members(self.folder)
        now = time.time()
        others = sum(1 for m in members if m.pid != self.pid and m.active(now))
        threads = self.fixed_threads or fair_threads(self.cores, self.pid, members, now)
        return CallShare(threads=threads, others=others)

    def end(self) -> None:
        """Mark this process idle (it stays active for HOLD_SECONDS)."""
        self._write(busy=False)

    def unregister(self) -> None:
        """Leave the registry (at close)."""
        if self._registered:
            self.path.unlink(missing_ok=True)
            self._registered = False

    def snapshot(self) -> dict[str, Any]:
        """The registry as this process sees it now (for `reagent doctor` and tests)."""
        members = read_members(self.folder, prune=False)
        now = time.time()
        return {"cores": self.cores, "members": len(members),
                "active": sum(1 for m in members if m.active(now))}
