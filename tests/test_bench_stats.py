"""The one median, p90 and paired bootstrap interval every benchmark table uses."""

from __future__ import annotations

import statistics

import pytest

from reagent_local.bench.stats import bootstrap_interval, median, p90


def test_median_is_the_standard_one_not_the_lower() -> None:
    assert median([30.0, 29.0, 31.0, 40.0]) == 30.5  # the lower median would say 30.0
    assert median([3, 1, 2]) == 2 and median([]) is None


def test_p90_interpolates_between_order_statistics() -> None:
    values = list(range(1, 11))  # 1..10: inclusive p90 = 9 + 0.1 * (10 - 9)
    assert p90(values) == pytest.approx(9.1)
    assert p90([5.0]) == 5.0 and p90([]) is None
    assert p90([8.0, 9.0]) == pytest.approx(8.9)


def test_bootstrap_interval_is_seeded_and_covers_the_mean() -> None:
    diffs = [1.0] * 10 + [0.0] * 30 + [-1.0] * 5  # mean +5/45
    low, high = bootstrap_interval(diffs, resamples=4000, seed=3)
    assert low < statistics.mean(diffs) < high
    assert bootstrap_interval(diffs, resamples=4000, seed=3) == (low, high)  # same seed, same interval
    assert bootstrap_interval(diffs, resamples=4000, seed=4) != (low, high)
    assert bootstrap_interval([0.5] * 7) == (0.5, 0.5)  # no spread, no width
    assert bootstrap_interval([]) is None


def test_bootstrap_interval_excludes_zero_only_for_a_clear_gain() -> None:
    clear = [1.0] * 20 + [0.0] * 20
    low, _ = bootstrap_interval(clear)
    assert low > 0
    noisy = [1.0] * 3 + [-1.0] * 2 + [0.0] * 45
    low, high = bootstrap_interval(noisy)
    assert low < 0 < high
