"""Is the process that started a run still there? (pid, host and process start time)

A pid alone is not enough: pids are reused. On Linux the process's start time (in
clock ticks since boot, /proc/PID/stat field 22) tells a reused pid apart. A run
started on another host (a log on a shared disk) cannot be checked that way: it is
taken as gone once its heartbeat is older than STALE_SECONDS.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

STALE_SECONDS = 15 * 60.0


def process_start(pid: int) -> int | None:
    """The start time of process ``pid`` in clock ticks since boot, or None where /proc is missing."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after its last ")"
    return int(stat.rsplit(")", 1)[1].split()[19])


def is_zombie(pid: int) -> bool:
    """Whether process ``pid`` has ended but was not yet reaped by its parent (state Z in /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def this_process() -> dict:
    """This process as a run records it: {"pid", "host", "proc_start"}."""
    pid = os.getpid()
    return {"pid": pid, "host": socket.gethostname(), "proc_start": process_start(pid)}


def is_gone(pid: int | None, host: str | None, proc_start: int | None, heartbeat_at: float | None,
            now: float) -> bool:
    """Whether a run's process has ended (killed, crashed) without closing the run."""
    if pid is None:  # a run from before runs recorded their process: nothing to check
        return False
    if host != socket.gethostname():
        return heartbeat_at is not None and now - heartbeat_at > STALE_SECONDS
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by another user
        pass
    if is_zombie(pid):  # killed, its parent not yet told: it will never write again
        return True
    current = process_start(pid)
    return proc_start is not None and current is not None and current != proc_start
