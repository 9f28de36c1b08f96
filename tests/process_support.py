"""Helpers for tests of several processes and of hostile filesystems.

``held_lock`` holds a reagent lock in another process (so waiting is real, across
processes); ``read_only`` makes a folder unwritable even for root (a read-only bind
mount); ``small_fs`` mounts a tiny tmpfs to fill up. The last two skip the test with
the reason when the machine does not allow it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

_HOLDER = """
import sys
from reagent_local.locks import file_lock
with file_lock(sys.argv[1], purpose=sys.argv[2]):
    print("held", flush=True)
    sys.stdin.read()  # hold until the test closes stdin (or kills this process)
"""


@contextmanager
def held_lock(path: Path, purpose: str) -> Iterator[subprocess.Popen]:
    """Hold the lock at ``path`` in a child process for the block; yields the child."""
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path), purpose],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        if proc.poll() is None:
            proc.stdin.close()
        proc.wait(timeout=30)


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True)


def _umount(folder: Path) -> None:
    subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


@contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """Make ``folder`` read-only for the block (a bind mount as root, who ignores permission bits)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [folder, *folder.rglob("*")]}
        for p in modes:
            p.chmod(modes[p] & ~0o222)
        try:
            yield
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
        return
    try:
        _mount("--bind", str(folder), str(folder))
        _mount("-o", "remount,ro,bind", str(folder))
    except (OSError, subprocess.CalledProcessError) as exc:
        _umount(folder)
        pytest.skip(f"cannot make a read-only bind mount here: {getattr(exc, 'stderr', exc)}")
    try:
        yield
    finally:
        _umount(folder)


@contextmanager
def small_fs(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (e.g. "2m") mounted at ``folder`` for the block."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root and mount(8)")
    try:
        _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder))
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"mount -t tmpfs is not permitted here: {exc.stderr.strip()}")
    try:
        yield folder
    finally:
        _umount(folder)


def used_bytes(folder: Path) -> int:
    """Bytes in use on the filesystem holding ``folder``."""
    usage = shutil.disk_usage(folder)
    return usage.total - usage.free
