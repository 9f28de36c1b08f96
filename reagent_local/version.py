"""Which code produced a result: the package version plus the git commit when run from a checkout.

Benchmark records carry this so a table row can be traced to the commit behind it, even
when a run folder is resumed after the code has changed.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

__version__ = "0.1.0"


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """``"0.1.0+g1a2b3c4"`` (``-dirty`` with uncommitted changes), or ``"0.1.0"`` outside git."""
    checkout = Path(__file__).resolve().parent.parent
    if not (checkout / ".git").exists():
        return __version__
    try:
        commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=5, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__}+g{commit}{'-dirty' if status else ''}"
