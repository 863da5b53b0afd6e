"""Cycle time and controller memory against the number of pending workloads (modes B).

Pure helpers over what ``minimal_kq.py`` records: each cycle's duration with the pending
count after it, and (seconds, RSS MiB, pending) samples once a second.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

CENTERS = (100, 1_000, 10_000, 100_000)
"""Pending counts the cycle time is reported around: each bin spans a decade centred on its
value in log space (1,000: 317 to 3,162 pending), so every count falls in exactly one."""
MIN_CYCLES = 5
"""A bin with fewer cycles than this is left out: its median would be one cycle's noise."""
REFERENCE = 1_000


def pct(values: Sequence[float], p: float) -> float:
    """The ``p``th percentile, nearest rank (0 for no values)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] if ordered else 0.0


def bin_of(pending: int) -> int | None:
    """The centre of the bin ``pending`` falls in, or None below the first or above the last."""
    for centre in CENTERS:
        if centre / math.sqrt(10) <= pending < centre * math.sqrt(10):
            return centre
    return None


def cycles_by_pending(cycles: Sequence[float], pending: Sequence[int]) -> dict[int, list[float]]:
    """Cycle durations grouped by the bin of the pending count each cycle left, bins with at
    least ``MIN_CYCLES`` cycles only, smallest first."""
    bins: dict[int, list[float]] = {}
    for seconds, count in zip(cycles, pending, strict=True):
        centre = bin_of(count)
        if centre is not None:
            bins.setdefault(centre, []).append(seconds)
    return {c: bins[c] for c in sorted(bins) if len(bins[c]) >= MIN_CYCLES}


def scaling_ratio(bins: dict[int, list[float]]) -> float | None:
    """p50 of the largest bin over p50 of the one around 1,000 pending: how a cycle slows as
    the queues grow. None unless both exist and differ."""
    largest = max(bins, default=None)
    if largest is None or REFERENCE not in bins or largest == REFERENCE:
        return None
    reference = statistics.median(bins[REFERENCE])
    return statistics.median(bins[largest]) / reference if reference else None


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float] | None:
    """Least-squares (slope, intercept) of ``ys`` on ``xs``; None if ``xs`` do not vary."""
    if len(xs) < 2:
        return None
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if spread == 0:
        return None
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
    return slope, mean_y - slope * mean_x


def rss_growth(samples: Sequence[Sequence[float]]) -> float | None:
    """MiB of controller RSS per 1,000 pending workloads, fitted over the samples from the
    first pending workload to the largest pending count: before, the controller is starting
    (imports, informer lists), which is no growth per workload; after, the queues drain but
    freed memory mostly stays in Python's arenas, which would flatten the slope."""
    first = next((i for i, s in enumerate(samples) if s[2] > 0), None)
    if first is None:
        return None
    peak = max(range(len(samples)), key=lambda i: samples[i][2])
    rising = samples[first : peak + 1]
    fit = linear_fit([s[2] for s in rising], [s[1] for s in rising])
    return None if fit is None else fit[0] * 1000
