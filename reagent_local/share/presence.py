"""A running `reagent serve` announces itself in the home; clients find it, and never a dead one.

Each server holds an exclusive flock on ``<home>/.serve/<pid>-<start>.lock`` for its whole life and,
once it answers, writes ``<pid>-<start>.json`` next to it: its address, pid, model, index and the
identity clients compare with their own (``share/compat.py``). The kernel drops the flock when the
server ends, even by SIGKILL, so a client tells a live announcement from a stale one by trying the
lock: a lock it can take belongs to no server, and the stale files are removed while it holds it.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ..core.liveness import process_start

FOLDER = ".serve"


def serve_dir(home: Path) -> Path:
    """Where servers of this home announce themselves."""
    return Path(home) / FOLDER


@dataclass(frozen=True)
class ServerInfo:
    """A live server as it announced itself."""

    url: str
    pid: int
    model: str
    index: str
    identity: dict[str, Any]
    path: Path
    started_at: float = 0.0
    api_key: str | None = None
    log: str | None = None  # the background server's output file
    extra: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """'the server at URL (pid N, model M, index I)'."""
        return f"the server at {self.url} (pid {self.pid}, model {self.model}, index {self.index})"


def _stem(pid: int) -> str:
    return f"{pid}-{process_start(pid) or 0}"


class Announcement:
    """This process's announcement: the lock taken at start, the file written once it answers."""

    def __init__(self, home: Path, pid: int | None = None) -> None:
        self.folder = serve_dir(home)
        self.pid = pid or os.getpid()
        stem = _stem(self.pid)
        self.lock_path, self.path = self.folder / f"{stem}.lock", self.folder / f"{stem}.json"
        self._fd: int | None = None

    def hold(self) -> None:
        """Take the lock that says this server is alive (a read-only home is refused by the caller's writes)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            try:  # a client that found the file unlocked a moment ago may have removed it: lock the one on disk
                if os.stat(self.lock_path).st_ino == os.fstat(fd).st_ino:
                    break
            except FileNotFoundError:
                pass
            os.close(fd)
        self._fd = fd

    def publish(self, url: str, *, model: str, index: str, identity: dict[str, Any], api_key: str | None = None,
                log: str | None = None) -> None:
        """Write the announcement atomically (mode 0600: it may carry the API key)."""
        data = {"url": url, "pid": self.pid, "model": model, "index": index, "identity": identity,
                "started_at": time.time(), "api_key": api_key, "log": log}
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            json.dump(data, stream, indent=1)
        os.replace(tmp, self.path)

    def withdraw_address(self) -> None:
        """Stop telling clients the address (the server is stopping); the lock stays until it has stopped."""
        self.path.unlink(missing_ok=True)

    def withdraw(self) -> None:
        """Remove the announcement and drop the lock (at a clean stop)."""
        self.path.unlink(missing_ok=True)
        if self._fd is not None:
            self.lock_path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None


def _held(lock_path: Path) -> bool:
    """Whether a live process holds the lock; a free lock's files are removed while this process holds it."""
    try:
        fd = os.open(lock_path, os.O_RDWR)
    except FileNotFoundError:
        return False
    except OSError:  # unreadable: assume alive rather than remove what another user owns
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return True
    else:
        try:  # stale: nobody holds it; a new server with this name would have to take this lock first
            lock_path.with_suffix(".json").unlink(missing_ok=True)
            lock_path.unlink(missing_ok=True)
        except OSError:  # a read-only home: leave the files, they stay recognisably stale
            pass
        return False
    finally:
        os.close(fd)


def _read(path: Path) -> ServerInfo | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return ServerInfo(url=data["url"], pid=int(data["pid"]), model=str(data.get("model", "")),
                          index=str(data.get("index", "")), identity=dict(data.get("identity") or {}), path=path,
                          started_at=float(data.get("started_at", 0.0)), api_key=data.get("api_key"),
                          log=data.get("log"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def live_servers(home: Path) -> Iterator[ServerInfo]:
    """The servers of this home that are alive and answering, oldest first (stale announcements are removed)."""
    folder = serve_dir(home)
    try:
        locks = sorted(folder.glob("*.lock"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return
    for lock in locks:
        info = _read(lock.with_suffix(".json"))
        if info is not None and _held(lock):
            yield info


def starting_servers(home: Path) -> list[int]:
    """Pids of servers that hold their lock but have not announced an address yet (still loading)."""
    pids = []
    for lock in sorted(serve_dir(home).glob("*.lock")):
        if not lock.with_suffix(".json").exists() and _held(lock):
            pids.append(int(lock.stem.split("-")[0]))
    return pids
