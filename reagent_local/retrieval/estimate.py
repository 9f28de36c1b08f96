"""A warning before a long build: a file far larger than the rest, its size and a guess at its embedding time.

A 50 MB text file in a folder of notes is most of the build (its passages are embedded one by
one), so the build says so before it starts instead of going quiet for half an hour. The time
is a rough guess from the file's bytes: about ``BYTES_PER_PASSAGE`` bytes make a passage, and
the embedder backend embeds about ``PASSAGES_PER_SECOND`` of them a second on two cores
(docs/retrieval.md, "Measured"); the progress lines give the real rate once it runs.
"""

from __future__ import annotations

from statistics import median
from typing import Sequence

BYTES_PER_PASSAGE = 600  # ~100 words of ~6 bytes (Markdown and HTML markup make it more, PDFs less)
PASSAGES_PER_SECOND = {"onnx-int8": 45.0, "onnx": 25.0, "torch": 15.0}
MIN_BYTES = 1 << 20  # a file under 1 MB is never worth a warning
TIMES_THE_REST = 10  # "far larger": this many times the median size of the other files
MIN_SECONDS = 60.0  # nor a file whose guessed embedding time is under a minute


def guess_seconds(size: int, backend: str) -> float | None:
    """A rough embedding time for ``size`` bytes of text; None for an embedder without a known rate (tests')."""
    rate = PASSAGES_PER_SECOND.get(backend)
    return None if rate is None else size / BYTES_PER_PASSAGE / rate


def _size(n: int) -> str:
    return f"{n / 2**20:,.1f} MB" if n >= 2**20 else f"{n / 1024:,.0f} KB"


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def warn_large_files(files: Sequence[tuple[str, int]], backend: str, *, rate: float | None = None) -> list[str]:
    """One warning per file far larger than the others ((path, bytes) pairs), with its size and a guessed time.

    ``rate`` (passages a second) replaces the backend's nominal one.
    """
    out = []
    sizes = [size for _, size in files]
    for index, (path, size) in enumerate(files):
        if size < MIN_BYTES:
            continue
        others = sizes[:index] + sizes[index + 1:]
        if others and size < TIMES_THE_REST * max(median(others), 1):
            continue
        seconds = size / BYTES_PER_PASSAGE / rate if rate else guess_seconds(size, backend)
        if seconds is None or seconds < MIN_SECONDS:
            continue
        share = f", {100 * size / sum(sizes):.0f}% of the folder's bytes" if others else ""
        out.append(f"warning: {path} is {_size(size)}{share}: embedding it may take about {_duration(seconds)} "
                   f"(~{size // BYTES_PER_PASSAGE:,} passages); leave it out with --exclude if it is not a document")
    return out
