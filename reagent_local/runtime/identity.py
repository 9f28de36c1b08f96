"""Which machine ran a model: the CPU, llama.cpp's build, threads, extra buffers, OpenMP and host, and a short id.

``machine_identity`` gathers everything a benchmark record's answers and seconds may depend on
below the configuration. ``machine_id`` hashes the part that can change an answer: the CPU model,
the instruction-set flags llama.cpp picks its kernels by (``cpu.NOTABLE_FLAGS``), llama-cpp-python's
version and llama.cpp's system-info line, and whether the extra buffer types (weight repacking) are
on. Left out of the hash, and why:

- the host name: two hosts of one CPU type running one build compute the same numbers, so their
  records may be paired (the host is kept in the full identity, for tracing);
- the threads: they are a setting, part of the configuration id (``bench/provenance.py``), so a
  1-thread and a 2-thread run differ there and a comparison of the two names the change;
- OpenMP's wait policy: it decides how waiting threads idle, which costs time, never a number.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from functools import lru_cache
from typing import Any

from .cpu import read_cpu

ID_LENGTH = 12
UNKNOWN = "unknown"
# the parts of an identity that can change an answer, hashed into ``machine_id``
ANSWER_PARTS = ("cpu", "flags", "llama_cpp", "system_info", "extra_buffers")


@lru_cache(maxsize=1)
def _cpu() -> tuple[str, tuple[str, ...]]:
    cpu = read_cpu()
    return cpu.model, tuple(cpu.notable_flags())


@lru_cache(maxsize=1)
def _build() -> tuple[str | None, str | None]:
    """llama-cpp-python's version and llama.cpp's system-info line; (None, None) when it is not installed."""
    from .openmp import prefer_passive_wait

    prefer_passive_wait()  # importing llama_cpp starts OpenMP: its wait policy is set first (runtime/openmp.py)
    try:
        from .load_probe import llama_build

        return llama_build()
    except ImportError:
        return None, None


def openmp_settings() -> dict[str, str]:
    """The OMP_* and GOMP_* variables this process runs with (after runtime/openmp.py set its default)."""
    return {name: value for name, value in sorted(os.environ.items()) if name.startswith(("OMP_", "GOMP_"))}


def model_facts(llm: Any) -> tuple[int | None, bool | None, str]:
    """(threads, extra buffers on, how the model runs) of a benchmark's model; None where not known here."""
    from .llm import LlamaModel, physical_threads

    if isinstance(llm, LlamaModel):
        verdict = llm.verdict()
        return llm.n_threads or physical_threads(), verdict.extra_buffers, "local"
    if type(llm).__name__ == "RemoteLLM":  # a `reagent serve` of the same home: its settings are the server's
        return None, None, "server"
    return None, None, type(llm).__name__ if llm is not None else "none"


def machine_identity(llm: Any = None) -> dict[str, Any]:
    """This machine and ``llm``'s settings on it, with its ``machine_id``."""
    from .openmp import wait_policy

    model, flags = _cpu()
    version, info = _build()
    threads, extra, via = model_facts(llm)
    identity = {"cpu": model, "flags": list(flags), "llama_cpp": version, "system_info": info,
                "extra_buffers": extra, "threads": threads, "via": via,
                "openmp": {"wait_policy": wait_policy(), "env": openmp_settings()},
                "host": platform.node(), "python": sys.version.split()[0]}
    return {"machine_id": machine_id(identity), **identity}


def machine_id(identity: dict[str, Any]) -> str:
    """A 12-hex-digit hash of the parts of an identity that can change an answer (``ANSWER_PARTS``)."""
    parts = {key: identity.get(key) for key in ANSWER_PARTS}
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:ID_LENGTH]


def describe_machine(identity: dict[str, Any]) -> str:
    """'Intel Xeon ... (avx2, avx512f), llama-cpp-python 0.3.x, extra buffers off': a one-line name."""
    flags = ", ".join(identity.get("flags") or []) or "no flags read"
    extra = {True: "on", False: "off"}.get(identity.get("extra_buffers"), "unknown")
    return (f"{identity.get('cpu') or UNKNOWN} ({flags}), llama-cpp-python {identity.get('llama_cpp') or UNKNOWN}, "
            f"extra buffers {extra}")
