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
SPIN_COUNT = "GOMP_SPINCOUNT"  # GNU OpenMP's own knob: iterations a waiting thread spins before it sleeps
DEFAULT_POLICY = "PASSIVE"


def prefer_passive_wait() -> bool:
    """Set OMP_WAIT_POLICY=PASSIVE unless the user set it or GOMP_SPINCOUNT, or llama_cpp is loaded already.

    True when waiting threads will sleep at once. ``GOMP_SPINCOUNT=300000`` gives back GNU OpenMP's
    own default (spin 300,000 times, then sleep), as before this setting.
    """
    chosen = WAIT_POLICY in os.environ or SPIN_COUNT in os.environ
    if not chosen and "llama_cpp" not in sys.modules:
        os.environ[WAIT_POLICY] = DEFAULT_POLICY
    return os.environ.get(WAIT_POLICY, "").upper() == DEFAULT_POLICY and os.environ.get(SPIN_COUNT, "0") == "0"


def wait_policy() -> str:
    """The wait policy OpenMP was (or will be) started with, in words."""
    policy = os.environ.get(WAIT_POLICY)
    spin = os.environ.get(SPIN_COUNT)
    if spin is not None:
        return f"{policy or 'default'}, spin {spin}"
    return policy or "default (spin, then sleep)"
