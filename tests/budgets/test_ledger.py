"""The accounting math of a budget, on a virtual clock: windows, entries, shortfall."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kq.budgets import CALENDAR, ROLLING, Window
from kq_plugins.budgets.ledger import (
    Account,
    Entry,
    account,
    compact,
    need,
    prune,
    shortfall,
)

CPU = "cpu"


def test_an_open_entry_consumes_until_now_and_reserves_up_to_its_bound() -> None:
    entry = Entry("ns/a", "u1", start=100.0, usage={CPU: 2000}, bound_end=160.0)
    got = account([entry], window_start=0.0, now=130.0)
    assert got.consumed == {CPU: 2000 * 30}
    assert got.reserved == {CPU: 2000 * 30}


def test_a_closed_entry_consumes_only_its_span_and_reserves_nothing() -> None:
    entry = Entry("ns/a", "u1", 100.0, {CPU: 1000}, end=110.0, bound_end=160.0)
    got = account([entry], 0.0, 500.0)
    assert got.consumed == {CPU: 10_000}
    assert got.reserved == {}


def test_only_the_part_inside_the_window_counts() -> None:
    entry = Entry("ns/a", "u1", 100.0, {CPU: 1000}, end=200.0)
    assert account([entry], 150.0, 300.0).consumed == {CPU: 50_000}
    assert account([entry], 250.0, 300.0).consumed == {}


def test_rolling_and_calendar_windows() -> None:
    rolling = Window(3600.0, ROLLING)
    assert rolling.start(10_000.0) == 6400.0
    assert rolling.end(10_000.0) is None
    calendar = Window(3600.0, CALENDAR, anchor=600.0)
    assert calendar.start(10_000.0) == 600.0 + 2 * 3600
    assert calendar.end(10_000.0) == 600.0 + 3 * 3600
    assert calendar.start(600.0 + 3600) == 600.0 + 3600  # a boundary starts the next window


def test_prune_drops_what_ended_before_the_window() -> None:
    old = Entry("ns/a", "u1", 0.0, {CPU: 1}, end=50.0)
    recent = Entry("ns/b", "u2", 0.0, {CPU: 1}, end=150.0)
    running = Entry("ns/c", "u3", 0.0, {CPU: 1})
    assert prune([old, recent, running], 100.0) == [recent, running]


def test_shortfall_names_the_resource_used_and_wanted() -> None:
    used = Account({CPU: 900.0}, {CPU: 50.0})
    assert shortfall({CPU: 1000.0}, used, {CPU: 50.0}) is None  # exactly full fits
    assert shortfall({CPU: 1000.0}, used, {CPU: 51.0}) == (CPU, 950.0, 51.0)
    assert shortfall({"memory": 10.0}, used, {CPU: 10**9}) is None  # not a budgeted resource


def test_need_is_usage_times_seconds() -> None:
    assert need({CPU: 1500, "nvidia.com/gpu": 0}, 60.0) == {CPU: 90_000.0}


# -- property: under Wait, a budget is never exceeded ------------------------------------------

Arrival = tuple[float, int, float, float]
"""(arrival offset, cores, maximum execution time, fraction of it actually run)."""

arrivals = st.lists(
    st.tuples(
        st.floats(0, 50),
        st.integers(1, 8),
        st.floats(1, 40),
        st.floats(0.0, 1.0),
    ),
    max_size=25,
)


def as_seen(entries: list[Entry], now: float) -> list[Entry]:
    """What the ledger holds at ``now``: an admission that ends later is still open."""
    return [e if e.end is not None and e.end <= now else replace(e, end=None) for e in entries]


def simulate(window: Window, limit: float, plan: list[Arrival]) -> list[Entry]:
    """A virtual-clock run: each arrival is admitted once the budget check allows it (retried
    every second), and runs its fraction of its maximum execution time."""
    entries: list[Entry] = []
    now = 0.0
    waiting = sorted(plan)
    while waiting and now < 1000:
        still = []
        for offset, cores, bound, ran in waiting:
            if offset > now:
                still.append((offset, cores, bound, ran))
                continue
            current = account(as_seen(entries, now), window.start(now), now)
            wanted = need({CPU: cores * 1000}, bound)
            if shortfall({CPU: limit}, current, wanted) is None:
                entries.append(
                    Entry(
                        f"ns/{len(entries)}",
                        str(len(entries)),
                        now,
                        {CPU: cores * 1000},
                        end=now + bound * ran,
                        bound_end=now + bound,
                    )
                )
            else:
                still.append((offset, cores, bound, ran))
        waiting = still
        now += 1.0
    return entries


@settings(max_examples=150, deadline=None)
@given(
    plan=arrivals,
    seconds=st.floats(5, 120),
    calendar=st.booleans(),
    limit_core_seconds=st.floats(50, 400),
)
def test_consumption_in_any_window_never_exceeds_the_limit(
    plan: list[Arrival], seconds: float, calendar: bool, limit_core_seconds: float
) -> None:
    window = Window(seconds, CALENDAR if calendar else ROLLING)
    limit = limit_core_seconds * 1000
    entries = simulate(window, limit, plan)
    ends = [e.end for e in entries if e.end is not None]
    horizon = max(ends, default=0.0) + seconds
    moment = 0.0
    while moment <= horizon:
        consumed = account(entries, window.start(moment), moment).consumed.get(CPU, 0.0)
        assert consumed <= limit * (1 + 1e-9), (moment, consumed, limit)
        moment += 0.5


@pytest.mark.parametrize("alignment", [ROLLING, CALENDAR])
def test_the_simulation_admits_again_once_the_window_moves(alignment: str) -> None:
    window = Window(10.0, alignment)
    plan: list[Arrival] = [(0.0, 1, 8.0, 1.0), (0.0, 1, 8.0, 1.0)]  # 8 core-s each, limit 10
    entries = simulate(window, 10_000.0, plan)
    assert len(entries) == 2
    assert entries[1].start >= 10.0  # the second waited for the first to leave the window


# -- compaction: a ledger stays small and never counts less ------------------------------------


def test_a_small_ledger_is_left_as_it_is() -> None:
    entries = [Entry(f"ns/{i}", str(i), float(i), {CPU: 1}, end=i + 1.0) for i in range(10)]
    assert compact(entries, 0.0, 100.0) == entries


@settings(max_examples=40, deadline=None)
@given(
    spans=st.lists(st.tuples(st.floats(0, 5000), st.floats(0, 300), st.integers(1, 8)),
                   min_size=21, max_size=80),
    seconds=st.floats(600, 7200),
    calendar=st.booleans(),
)  # fmt: skip
def test_compaction_keeps_the_ledger_small_and_never_counts_less(
    spans: list[tuple[float, float, int]], seconds: float, calendar: bool
) -> None:
    window = Window(seconds, CALENDAR if calendar else ROLLING)
    now = 5300.0
    entries = [
        Entry(f"ns/{i}", str(i), start, {CPU: cores * 1000}, end=start + length)
        for i, (start, length, cores) in enumerate(spans)
    ]
    compacted = compact(entries, window.start(now), now, most=20, chunk=5)
    assert len(compacted) <= 20 + len(spans) // 5 + 1
    assert len(compacted) < len(entries)
    moment = now
    while moment <= now + seconds + 300:
        start = window.start(moment)
        real = account(entries, start, moment).consumed.get(CPU, 0.0)
        counted = account(compacted, start, moment).consumed.get(CPU, 0.0)
        assert counted >= real * (1 - 1e-9), (moment, counted, real)
        moment += seconds / 7
