"""`reagent serve` in the background: start it detached, say where it serves, stop it, show what runs.

The background server is the same command in a new session (Ctrl-C in the terminal does not reach
it) whose output goes to ``<home>/.serve/<pid>.log``. Starting waits until it announces its address
(``share/presence.py``), or shows the end of its output when it exits first. Stopping sends SIGTERM,
which lets the server stop its running question at the next step and mark it ``cancelled``, and
waits until its lock is free.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

from ..errors import ReagentError
from .presence import ServerInfo, live_servers, serve_dir, starting_servers

START_SECONDS = 900.0  # a first load probes the model in a child process and warms the index
STOP_SECONDS = 120.0  # the running question stops at its next step: after the model call under way


def output_file(home: Path, pid: int) -> Path:
    """Where a background server's output goes."""
    return serve_dir(home) / f"{pid}.log"


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:])


def _prune_outputs(home: Path) -> None:
    """Remove the output files of background servers that have ended."""
    for path in serve_dir(home).glob("*.log"):
        try:
            os.kill(int(path.stem), 0)
        except (ValueError, PermissionError):
            continue
        except ProcessLookupError:
            path.unlink(missing_ok=True)


def start_background(args: Sequence[str], home: Path, *, env: dict[str, str] | None = None,
                     timeout: float = START_SECONDS) -> tuple[ServerInfo, Path]:
    """Start ``reagent serve ARGS`` detached; return its announcement and output file once it answers."""
    folder = serve_dir(home)
    folder.mkdir(parents=True, exist_ok=True)
    _prune_outputs(home)
    pending = folder / f"starting-{os.getpid()}-{time.monotonic_ns()}.log"
    with open(pending, "wb") as output:
        child = subprocess.Popen([sys.executable, "-m", "reagent_local", "serve", *args], stdin=subprocess.DEVNULL,
                                 stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
                                 env=env if env is not None else os.environ.copy())
    path = output_file(home, child.pid)
    os.replace(pending, path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = next((s for s in live_servers(home) if s.pid == child.pid), None)
        if found is not None:
            return found, path
        if child.poll() is not None:
            raise ReagentError(f"the background server exited ({child.returncode}) before it answered: {_tail(path)}",
                               hint=f"its whole output is in {path}")
        time.sleep(0.2)
    raise ReagentError(f"the background server (pid {child.pid}) did not answer within {timeout:.0f} s",
                       hint=f"see {path}; `reagent serve --stop` stops it")


def stop_servers(home: Path, *, timeout: float = STOP_SECONDS,
                 on_wait: Callable[[str], None] | None = None) -> list[int]:
    """SIGTERM every server of the home (announced or still loading) and wait for each to end; their pids."""
    pids = [s.pid for s in live_servers(home)] + starting_servers(home)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + timeout
    told = False
    while time.monotonic() < deadline:
        running = {s.pid for s in live_servers(home)} | set(starting_servers(home))
        left = [pid for pid in pids if pid in running]
        if not left:
            return pids
        if on_wait is not None and not told and time.monotonic() > deadline - timeout + 2:
            on_wait(f"waiting for {', '.join(map(str, left))} to finish the question under way ...")
            told = True
        time.sleep(0.2)
    raise ReagentError(f"server{'s' if len(left) > 1 else ''} {', '.join(map(str, left))} did not stop within "
                       f"{timeout:.0f} s", hint=f"`kill -9 {' '.join(map(str, left))}` ends it at once (a question "
                                                "under way is then shown as interrupted in the log)")
