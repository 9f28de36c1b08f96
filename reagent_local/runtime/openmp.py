"""llama.cpp's OpenMP threads: waiting ones sleep instead of spinning, unless the user chose otherwise.

This llama-cpp-python build runs its matrix work on OpenMP threads (``OPENMP = 1`` in
``llama_cpp.llama_print_system_info()``). GNU OpenMP lets a thread that waits at a barrier
spin first; when other processes use the same cores, the spinning threads take the cores
from the threads that have work, and a model process crawls (measured on 2 cores beside
another model process: the load probe took 14.0 s instead of 0.9 s, an ask 213 s instead of
25 s). ``OMP_WAIT_POLICY=PASSIVE`` makes waiting threads sleep at once. OpenMP reads it when
its runtime starts, that is when llama_cpp is first imported, so it is set before that.
"""

from __future__ import annotations

import os
import sys

WAIT_POLICY = "OMP_WAIT_POLICY"
DEFAULT_POLICY = "PASSIVE"


def prefer_passive_wait() -> bool:
    """Set OMP_WAIT_POLICY=PASSIVE unless it is set or llama_cpp is already loaded; True when it is PASSIVE now."""
    if WAIT_POLICY not in os.environ and "llama_cpp" not in sys.modules:
        os.environ[WAIT_POLICY] = DEFAULT_POLICY
    return os.environ.get(WAIT_POLICY, "").upper() == DEFAULT_POLICY


def wait_policy() -> str:
    """The wait policy OpenMP was (or will be) started with: the variable's value, or 'default (spin, then sleep)'."""
    return os.environ.get(WAIT_POLICY) or "default (spin, then sleep)"
