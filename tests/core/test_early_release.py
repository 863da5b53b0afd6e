"""Early release (``kq.scheduler.early``): with paced retries, a parked shape whose head fits
its ClusterQueue's own unused nominal quota is retried at the release that made the room;
one that would borrow waits for the period, and so does one whose early try failed."""

from __future__ import annotations

from kq.scheduler.decisions import Admit, Pending, Preempt
from tests.core.world import World

PERIOD = 10.0  # the world's clock moves one second per cycle


def cohort_of_two(cpu: int = 4) -> World:
    w = World(requeue_period=PERIOD)
    w.flavor("f")
    for name in ("a", "b"):
        w.cluster_queue(name, [{"f": {"cpu": cpu}}], cohort="co")
        w.local_queue(name, "lq", name)
    return w


def admitted(w: World, key: str) -> None:
    assert isinstance(w.cycle().by_key[key], Admit)


def parked(w: World, key: str) -> None:
    assert isinstance(w.cycle().by_key[key], Pending)
    assert key not in w.cycle().by_key  # parked: the next cycle does not try it


def test_room_in_its_own_nominal_quota_lets_a_parked_head_in_at_once() -> None:
    w = cohort_of_two()
    admitted(w, w.submit("filler", "lq", {"cpu": 4}, namespace="b"))  # nothing to borrow
    holder = w.submit("holder", "lq", {"cpu": 4}, namespace="a")
    admitted(w, holder)
    waiting = w.submit("waiting", "lq", {"cpu": 2}, namespace="a")
    parked(w, waiting)
    w.finish(holder)
    admitted(w, waiting)  # the next cycle, not a period later


def test_a_head_that_would_borrow_waits_for_the_period() -> None:
    w = cohort_of_two()
    holder = w.submit("holder", "lq", {"cpu": 4}, namespace="a")
    admitted(w, holder)
    big = w.submit("big", "lq", {"cpu": 6}, namespace="a")
    parked(w, big)
    w.finish(holder)  # big now fits, borrowing 2 of b's
    waited = 0
    while big not in w.cycle().by_key:
        waited += 1
    assert waited >= PERIOD - 1
    assert w.cache.holds_quota(big)


def test_room_lent_to_a_borrower_is_not_room() -> None:
    w = cohort_of_two()
    borrower = w.submit("borrower", "lq", {"cpu": 7}, namespace="b")  # 3 of a's
    admitted(w, borrower)
    assert not w.cache.fits_unborrowed("a", {"cpu": 2000})
    assert w.cache.fits_unborrowed("a", {"cpu": 1000})


def test_a_resource_the_queue_does_not_cover_fails_it_except_pods() -> None:
    w = cohort_of_two()
    assert w.cache.fits_unborrowed("a", {"cpu": 1000, "pods": 3})
    assert not w.cache.fits_unborrowed("a", {"cpu": 1000, "memory": 1})
    assert not w.cache.fits_unborrowed("gone", {"cpu": 1000})


def test_a_shape_whose_early_try_fails_waits_for_the_period_once() -> None:
    """Checked by resource, not by resource group: cpu fits in one flavor and memory in the
    other, so the check passes a head that no single flavor holds."""
    w = World(requeue_period=PERIOD)
    w.flavor("f1")
    w.flavor("f2")
    w.cluster_queue("cq", [{"f1": {"cpu": 4, "memory": 0}, "f2": {"cpu": 0, "memory": 4}}])
    w.local_queue("ns", "lq", "cq")
    split = w.submit("split", "lq", {"cpu": 1, "memory": 1}, namespace="ns")
    parked(w, split)

    def admit_and_finish(name: str) -> None:
        key = w.submit(name, "lq", {"cpu": 1}, namespace="ns")
        admitted(w, key)
        w.finish(key)

    admit_and_finish("first")
    assert isinstance(w.cycle().by_key[split], Pending)  # released early, failed again
    tries = 0
    for n in range(int(PERIOD) + 2):  # a release every cycle: none releases it early again
        key = w.submit(f"other-{n}", "lq", {"cpu": 1}, namespace="ns")
        result = w.cycle()
        tries += split in result.by_key
        w.finish(key)
    assert tries == 1  # the period's retry only


def test_a_queue_that_covers_pods_counts_the_heads_pods() -> None:
    w = World(requeue_period=PERIOD)
    w.flavor("f")
    w.cluster_queue("cq", [{"f": {"cpu": 10, "pods": 2}}])
    w.local_queue("ns", "lq", "cq")
    holder = w.submit("holder", "lq", {"cpu": 1}, namespace="ns", count=2)
    admitted(w, holder)
    pair = w.submit("pair", "lq", {"cpu": 1}, namespace="ns", count=2)
    parked(w, pair)
    wide = w.submit("wide", "lq", {"cpu": 1}, namespace="ns", count=3)  # never fits 2 pods
    parked(w, wide)
    w.finish(holder)
    assert list(w.cycle().by_key) == [pair]  # wide, 3 pods, is not released early
    assert w.cycle().decisions == ()  # nor tried after pair


def test_room_for_one_head_releases_one_shape_the_first_in_queue_order() -> None:
    w = World(requeue_period=PERIOD)
    w.flavor("f")
    w.cluster_queue("cq", [{"f": {"cpu": 1}}])
    w.local_queue("ns", "lq", "cq")
    holder = w.submit("holder", "lq", {"cpu": 1}, namespace="ns")
    admitted(w, holder)
    low = w.submit("low", "lq", {"cpu": 1}, namespace="ns", priority=1)
    parked(w, low)
    high = w.submit("high", "lq", {"cpu": 1}, namespace="ns", priority=2)
    parked(w, high)
    w.finish(holder)
    assert list(w.cycle().by_key) == [high]  # low is not tried: no early failure for it
    assert w.cycle().decisions == ()
    w.finish(high)
    admitted(w, low)


def preemptible_room(within: str, low_priority: int = 1) -> tuple[World, str, str, str]:
    """A 4 cpu queue held by two priority-9 workloads, with a priority-5 head of 3 cpu and a
    newer 2 cpu head parked; returns the world, the second holder, high and low."""
    w = World(requeue_period=PERIOD)
    w.flavor("f")
    w.cluster_queue("cq", [{"f": {"cpu": 4}}], preemption={"withinClusterQueue": within})
    w.local_queue("ns", "lq", "cq")
    first = w.submit("first", "lq", {"cpu": 2}, namespace="ns", priority=9)
    second = w.submit("second", "lq", {"cpu": 2}, namespace="ns", priority=9)
    w.cycle()
    w.cycle()
    assert w.cache.holds_quota(first)
    assert w.cache.holds_quota(second)
    high = w.submit("high", "lq", {"cpu": 3}, namespace="ns", priority=5)
    parked(w, high)
    low = w.submit("low", "lq", {"cpu": 2}, namespace="ns", priority=low_priority)
    parked(w, low)
    w.finish(first)  # room for low, not for high
    return w, second, high, low


def test_a_waiting_head_holds_back_the_heads_it_may_preempt() -> None:
    """Admitted early into the room high waits for, low would be evicted by it at the period."""
    w, second, high, low = preemptible_room("LowerPriority")
    assert w.cycle().decisions == ()  # low is not released early
    w.finish(second)
    for _ in range(int(PERIOD) + 1):
        result = w.cycle()
        assert not any(isinstance(d, Preempt) for d in result.decisions)
        if high in result.by_key:
            break
    assert w.cache.holds_quota(high)
    assert not w.cache.holds_quota(low)


def test_a_waiting_head_that_may_not_preempt_holds_nobody_back() -> None:
    w, _, high, low = preemptible_room("Never")
    admitted(w, low)
    assert not w.cache.holds_quota(high)


def test_equal_priority_is_held_only_where_newer_equals_may_be_preempted() -> None:
    w, _, _, _ = preemptible_room("LowerOrNewerEqualPriority", low_priority=5)
    assert w.cycle().decisions == ()  # low, newer at high's priority, is not released early
    w, _, _, low = preemptible_room("LowerPriority", low_priority=5)
    admitted(w, low)
