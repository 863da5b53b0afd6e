"""The scaling figures of modes B: cycle time binned by pending count, RSS growth."""

from __future__ import annotations

import pytest
from scaling import bin_of, cycles_by_pending, linear_fit, pct, rss_growth, scaling_ratio


def test_each_count_falls_in_the_decade_around_one_centre() -> None:
    assert [bin_of(n) for n in (10, 316, 317, 3_162, 3_163, 99_999, 316_227, 316_228)] == [
        None,
        100,
        1_000,
        1_000,
        10_000,
        100_000,
        100_000,
        None,
    ]


def test_bins_keep_only_those_with_enough_cycles() -> None:
    pending = [1_000] * 5 + [20_000] * 4 + [90_000] * 6
    cycles = [0.001] * 5 + [0.5] * 4 + [0.002, 0.002, 0.002, 0.003, 0.003, 0.003]
    bins = cycles_by_pending(cycles, pending)
    assert list(bins) == [1_000, 100_000]  # 4 cycles around 10,000 are too few
    assert scaling_ratio(bins) == pytest.approx(2.5)  # medians 2.5 ms / 1 ms


def test_no_ratio_without_the_reference_bin_or_a_larger_one() -> None:
    assert scaling_ratio({}) is None
    assert scaling_ratio({100: [0.001] * 5, 1_000: [0.002] * 5}) is None
    assert scaling_ratio({100: [0.001] * 5, 10_000: [0.002] * 5}) is None


def test_linear_fit_recovers_a_line_and_refuses_a_vertical_one() -> None:
    assert linear_fit([0, 1, 2, 3], [1, 3, 5, 7]) == pytest.approx((2.0, 1.0))
    assert linear_fit([2, 2], [1, 5]) is None
    assert linear_fit([1], [1]) is None


def test_rss_growth_fits_from_the_first_pending_workload_to_the_peak() -> None:
    start = [(0.0, 80.0, 0), (1.0, 120.0, 0)]  # imports and informer lists, nothing pending
    rising = [(2.0 + i, 120.0 + 5 * i, 1_000 * (i + 1)) for i in range(4)]
    draining = [(6.0, 140.0, 500), (7.0, 140.0, 0)]  # memory kept as the queues drain
    assert rss_growth(start + rising + draining) == pytest.approx(5.0)
    assert rss_growth(start) is None
    assert rss_growth([]) is None


def test_percentile_is_nearest_rank() -> None:
    assert pct([3.0, 1.0, 2.0, 4.0], 50) == 3.0
    assert pct([], 99) == 0.0
