"""Put a finished build in place of an index, so that no reader ever finds it missing or half there.

On Linux the two folders are exchanged in one ``renameat2(RENAME_EXCHANGE)``; where
that is unavailable the old index is renamed aside first and the new one renamed in.
A build killed in between leaves ``indexes/.NAME.old-PID``; ``recover`` (run by the
next build, under the build lock) finishes or undoes that swap.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
from pathlib import Path
from typing import Callable

from .layout import MANIFEST

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _renameat2() -> Callable[..., int] | None:
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # not glibc >= 2.28, or not Linux
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    function.restype = ctypes.c_int
    return function


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths atomically; False when the system or filesystem cannot."""
    function = _renameat2()
    if function is None:
        return False
    if function(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


def _aside(final: Path) -> Path:
    return final.with_name(f".{final.name}.old-{os.getpid()}")


def swap_in(folder: Path, final: Path) -> None:
    """Rename the finished build ``folder`` to ``final``, replacing an old index only now."""
    if not final.exists():
        os.replace(folder, final)
        return
    old = _aside(final)
    if exchange(folder, final):
        os.replace(folder, old)  # now the old index: out of sight of `index list` before deleting it
    else:
        os.replace(final, old)
        os.replace(folder, final)
    shutil.rmtree(old, ignore_errors=True)


def _finished(folder: Path, state_file: str) -> bool:
    """A build folder that holds a complete index (its manifest written, its build state removed)."""
    return (folder / MANIFEST).is_file() and not (folder / state_file).exists()


def recover(folder: Path, final: Path, state_file: str, note: Callable[[str], None]) -> None:
    """Clean up after a build killed during ``swap_in`` (call it under the build lock)."""
    for old in sorted(final.parent.glob(f".{final.name}.old-*")):
        if (final / MANIFEST).is_file():
            shutil.rmtree(old, ignore_errors=True)  # the swap was done; only the deletion was cut short
        elif _finished(folder, state_file):
            os.replace(folder, final)  # killed between the two renames: finish the swap
            note(f"finished swapping in the interrupted rebuild of {final.name}")
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(old, final)
            note(f"restored the previous index {final.name}")
