"""The statistics every benchmark table uses: the standard median, p90, and a paired bootstrap interval.

One definition each, so that no two tables disagree about what a "median" is:

- median: ``statistics.median`` (the mean of the two middle values for an even count);
- p90: ``statistics.quantiles(values, n=10, method="inclusive")[-1]``, the 90th percentile
  interpolated between order statistics (numpy's default "linear" percentile);
- paired bootstrap: resample the questions (with replacement) ``resamples`` times with a seeded
  numpy generator; the 95% interval is the 2.5th and 97.5th percentile of the resampled mean
  differences.
"""

from __future__ import annotations

import statistics
from typing import Sequence

RESAMPLES = 10_000
SEED = 0


def median(values: Sequence[float]) -> float | None:
    """``statistics.median`` of the values; None when there are none."""
    return statistics.median(values) if len(values) else None


def p90(values: Sequence[float]) -> float | None:
    """The 90th percentile (inclusive, interpolated); the value itself for one value, None for none."""
    if not len(values):
        return None
    if len(values) == 1:
        return float(values[0])
    return statistics.quantiles(values, n=10, method="inclusive")[-1]


def bootstrap_interval(differences: Sequence[float], *, resamples: int = RESAMPLES, seed: int = SEED,
                       level: float = 0.95) -> tuple[float, float] | None:
    """The paired bootstrap interval of the mean of per-question differences; None for no questions."""
    import numpy as np

    values = np.asarray(differences, dtype=float)
    if values.size == 0:
        return None
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    chunk = max(1, 2_000_000 // values.size)  # bounded memory for large samples
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        means[start:stop] = values[rng.integers(0, values.size, size=(stop - start, values.size))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)
