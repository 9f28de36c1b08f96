"""What this machine's CPU is and reports, and the llama.cpp settings that follow from it.

The one rule here: llama.cpp's "extra buffer types" repack a model's weights into layouts for
special matrix units. On CPUs with Intel AMX (Xeons since Sapphire Rapids, 2023) the AMX
matrix multiply of llama.cpp 0.3.36 segfaults on the first prompt of a Q4_K_M model
(ggml-org/llama.cpp issue 20824, closed unfixed). Without the extra buffers llama.cpp uses
its ordinary CPU kernels there. On every other CPU ``auto`` starts from llama.cpp's default
(repacking), and the load probe (load_probe.py) times both settings and keeps the faster.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

EXTRA_BUFFER_CHOICES = ("auto", "on", "off")
AMX_FLAGS = frozenset({"amx_tile", "amx_int8", "amx_bf16", "amx_fp16", "amx_complex"})
# the flags worth showing in a bug report: what llama.cpp's kernels are chosen by
NOTABLE_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx512_bf16",
                 "avx512_fp16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16", "amx_fp16", "asimd", "sve")
CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class CpuInfo:
    """The CPU's model name, its feature flags and how many cores this process may use."""

    model: str
    flags: frozenset[str]
    usable_cores: int

    @property
    def has_amx(self) -> bool:
        """Whether the CPU reports Intel AMX (the feature behind llama.cpp's repacking crash)."""
        return bool(self.flags & AMX_FLAGS)

    def notable_flags(self) -> list[str]:
        """The flags that decide llama.cpp's kernels, in a fixed order."""
        return [flag for flag in NOTABLE_FLAGS if flag in self.flags]


def parse_cpuinfo(text: str) -> tuple[str, frozenset[str]]:
    """The model name and feature flags of the first processor in a /proc/cpuinfo text."""
    model, flags = "", frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "cpu model", "hardware") and not model:
            model = value.strip()
        elif key in ("flags", "features") and not flags:  # x86 says flags, ARM says Features
            flags = frozenset(value.split())
        if model and flags:
            break
    return model, flags


def usable_cores() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def read_cpu(cpuinfo: Path = CPUINFO) -> CpuInfo:
    """This machine's CPU (flags from /proc/cpuinfo on Linux; none elsewhere)."""
    try:
        model, flags = parse_cpuinfo(cpuinfo.read_text(encoding="utf-8", errors="replace"))
    except OSError:  # macOS, Windows: no AMX Xeons run there
        model, flags = "", frozenset()
    return CpuInfo(model=model or platform.processor() or platform.machine(), flags=flags, usable_cores=usable_cores())


def extra_buffers_enabled(setting: str, cpu: CpuInfo) -> bool:
    """The setting a load starts from: ``on``, ``off``, or ``auto`` (off where AMX is; on elsewhere, where the
    load probe then keeps whichever of on and off it measured faster)."""
    if setting not in EXTRA_BUFFER_CHOICES:
        raise ValueError(f"extra_buffers must be one of {EXTRA_BUFFER_CHOICES}, not {setting!r}")
    if setting == "auto":
        return not cpu.has_amx
    return setting == "on"
