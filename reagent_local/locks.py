"""Cross-process file locks (``fcntl.flock``) for files many reagent processes share.

A lock is a small ``NAME.lock`` file next to what it guards. The kernel drops a flock
when its holder dies, even by SIGKILL, so a killed process never leaves a stale lock.
The holder writes its pid, host and purpose into the file, so a process that has to
wait can say who it is waiting for.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from .errors import ReagentError


class LockTimeout(ReagentError):
    """Another process held a lock for longer than this one would wait."""


def holder_of(lock_path: Path) -> dict:
    """Who holds (or last held) a lock: {"pid", "host", "purpose", "since"}, or {} when unknown."""
    try:
        return json.loads(Path(lock_path).read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}


def describe_holder(lock_path: Path) -> str:
    """One line naming the holder of a lock, for messages."""
    info = holder_of(lock_path)
    if not info:
        return "another process"
    where = "" if info.get("host") == socket.gethostname() else f" on {info.get('host')}"
    return f"process {info.get('pid')}{where} ({info.get('purpose', 'working')})"


def is_held(lock_path: Path) -> bool:
    """Whether some process holds the lock at ``lock_path`` exclusively right now (a build running).

    Asks for a shared lock without waiting and drops it at once. A build that starts in that
    instant finds the lock taken and polls again a few milliseconds later (it may say once that
    it is waiting).
    """
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return False  # no lock file: nothing was ever built under this name
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the shared lock if it was taken
    return False


class FileLock:
    """A flock on one lock file, taken and released many times over one open descriptor.

    One object per lock file per process: two descriptors of one process on the same
    file would lock each other out.
    """

    def __init__(self, lock_path: str | Path, *, purpose: str) -> None:
        self.path = Path(lock_path)
        self.purpose = purpose
        self._fd: int | None = None
        self.held: str | None = None  # "shared", "exclusive" or None

    def acquire(self, *, shared: bool = False, timeout: float | None = None,
                on_wait: Callable[[str], None] | None = None, poll: float = 0.01, max_poll: float = 0.5) -> None:
        """Take the lock (converting a held one); LockTimeout after ``timeout`` seconds."""
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        deadline = None if timeout is None else time.monotonic() + timeout
        told, delay = False, poll
        while True:
            try:
                fcntl.flock(self._fd, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if on_wait is not None and not told:
                    on_wait(describe_holder(self.path))
                    told = True
                if deadline is not None and time.monotonic() >= deadline:
                    raise LockTimeout(f"{self.path.name}: held by {describe_holder(self.path)} for over "
                                      f"{timeout:.0f} s",
                                      hint="wait for it to finish, or stop it; a killed holder frees the lock") from None
                time.sleep(delay)
                delay = min(delay * 2, max_poll)  # bounded back-off
        self.held = "shared" if shared else "exclusive"
        if not shared:  # readers leave the writer's note alone
            note = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "purpose": self.purpose,
                               "since": time.time()})
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, note.encode(), 0)

    def release(self) -> None:
        """Release the lock (the descriptor stays open for the next acquire)."""
        if self._fd is not None and self.held:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self.held = None

    def close(self) -> None:
        """Release and close the descriptor."""
        if self._fd is not None:
            os.close(self._fd)  # closing also drops the flock
        self._fd, self.held = None, None


@contextmanager
def file_lock(lock_path: str | Path, *, purpose: str, shared: bool = False, timeout: float | None = None,
              on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the lock at ``lock_path`` for the block.

    ``shared`` takes a reader's lock (many at once, none while a writer holds it).
    ``timeout`` None waits as long as it takes; otherwise LockTimeout after that many seconds.
    ``on_wait`` is called once, with who holds the lock, when this process has to wait.
    """
    lock = FileLock(lock_path, purpose=purpose)
    try:
        lock.acquire(shared=shared, timeout=timeout, on_wait=on_wait, poll=0.05)
        yield
    finally:
        lock.close()
