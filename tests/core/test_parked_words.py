"""Words for workloads of a shape parked with its head (BestEffortFIFO): no cycle tries them,
so once it has stayed parked a while they are told the head's words
(``kq.scheduler.held.parked_words``), each once."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from kq.api.conditions import Condition
from kq.queue.cluster_queue import PARKED_WORDS_AFTER_S
from kq.queue.order import Ordered
from kq.scheduler.cycle import CycleResult
from kq.workload.info import WorkloadInfo
from tests.core.world import World, pending


def world() -> World:
    out = World()
    out.flavor("default")
    out.cluster_queue("cq", [{"default": {"cpu": 4}}])
    out.local_queue("ns", "lq", "cq")
    return out


def told(result: CycleResult) -> dict[str, tuple[str, str]]:
    return {p.key: (p.reason, p.message) for p in result.held}


def later(w: World) -> World:
    """The world's clock past the wait before a parked shape's words are told."""
    w.clock = itertools.count(next(w.clock) + int(PARKED_WORDS_AFTER_S))
    return w


def test_an_arrival_in_a_parked_shape_is_told_the_heads_words_without_a_try() -> None:
    w = world()
    head = w.submit("head", "lq", {"cpu": 6}, namespace="ns")
    words = pending(w.cycle(), head)
    late = w.submit("late", "lq", {"cpu": 6}, namespace="ns")
    assert told(w.cycle()) == {}  # not yet: a busy cohort would release the shape sooner
    result = later(w).cycle()
    assert result.decisions == ()
    assert told(result) == {late: (words.reason, words.message)}
    assert result.held[0].cluster_queue == "cq"
    assert w.cycle().held == ()  # told once


def test_words_the_status_says_already_are_not_repeated() -> None:
    w = world()
    head = w.submit("head", "lq", {"cpu": 6}, namespace="ns")
    words = pending(w.cycle(), head)
    late = w.submit("late", "lq", {"cpu": 6}, namespace="ns")
    assert late in told(later(w).cycle())
    # Our write of the words comes back through the informer: an update, not a new try.
    says = Condition("QuotaReserved", "False", words.reason, words.message)
    w.queues.add_workload(replace(w.workloads[late], conditions=(says,)))
    result = w.cycle()
    assert (result.decisions, result.held) == ((), ())


def test_equals_queued_untried_when_the_shape_parks_are_told_too() -> None:
    w = world()
    head = w.submit("head", "lq", {"cpu": 6}, namespace="ns")
    behind = w.submit("behind", "lq", {"cpu": 6}, namespace="ns")
    other = w.submit("other", "lq", {"cpu": 5}, namespace="ns")
    result = w.cycle()
    words = pending(result, head)
    assert [d.key for d in result.decisions] == [head]
    assert told(result) == {}  # the shape parked this instant
    result = later(w).cycle()
    assert told(result) == {behind: (words.reason, words.message)}
    assert other in result.by_key  # another shape is tried, not told


def test_after_a_requeue_only_the_untold_hear_the_new_words() -> None:
    w = world()
    head = w.submit("head", "lq", {"cpu": 6}, namespace="ns")
    w.cycle()
    early = w.submit("early", "lq", {"cpu": 6}, namespace="ns")
    assert early in told(later(w).cycle())
    w.requeue_all()  # the shape is released: its head is tried again, arrivals are not told
    late = w.submit("late", "lq", {"cpu": 6}, namespace="ns")
    result = w.cycle()
    assert [d.key for d in result.decisions] == [head]
    assert set(told(later(w).cycle())) == {late}


def test_a_shape_released_again_soon_tells_nobody() -> None:
    """A busy cohort requeues a parked shape again and again: its head is tried each time,
    and the workloads behind it are not written words they would hold for a moment."""
    w = world()
    head = w.submit("head", "lq", {"cpu": 6}, namespace="ns")
    pending(w.scheduler.run_cycle(100.0), head)
    behind = w.submit("behind", "lq", {"cpu": 6}, namespace="ns")
    step = PARKED_WORDS_AFTER_S / 4
    for i in range(1, 12):  # the shape is released after each cycle, tried in the next
        assert told(w.scheduler.run_cycle(100.0 + i * step)) == {}
        w.requeue_all()
    w.scheduler.run_cycle(200.0)  # its head is tried and parks it again
    assert told(w.scheduler.run_cycle(200.0 + PARKED_WORDS_AFTER_S - step)) == {}
    assert set(told(w.scheduler.run_cycle(200.0 + PARKED_WORDS_AFTER_S))) == {behind}


def test_a_told_workload_keeps_its_words_when_its_shape_parks_anew() -> None:
    """Our write of the words comes back after the shape was released; when the head fails
    again with other words, the told workload is not written again: like a workload Kueue has
    not tried again, it keeps its last words until it is tried."""
    w = world()
    running = w.submit("running", "lq", {"cpu": 2}, namespace="ns")
    w.cycle()
    head = w.submit("head", "lq", {"cpu": 3}, namespace="ns")
    first = pending(w.cycle(), head)
    early = w.submit("early", "lq", {"cpu": 3}, namespace="ns")
    other = w.submit("other", "lq", {"cpu": 1}, namespace="ns")
    w.cycle()  # the one-cpu workload is admitted
    later(w).cycle()  # early is told
    assert w.admitted() == {running, other}
    w.requeue_all()
    says = Condition("QuotaReserved", "False", first.reason, first.message)
    w.queues.add_workload(replace(w.workloads[early], conditions=(says,)))
    result = w.cycle()
    again = pending(result, head)
    assert again.message != first.message  # one cpu more is missing now
    assert told(result) == {}
    late = w.submit("late", "lq", {"cpu": 3}, namespace="ns")
    assert told(later(w).cycle()) == {late: (again.reason, again.message)}


def test_an_evicted_workload_is_told_despite_its_eviction_words() -> None:
    w = world()
    head = w.submit("head", "lq", {"cpu": 6}, namespace="ns")
    words = pending(w.cycle(), head)
    back = w.submit("back", "lq", {"cpu": 6}, namespace="ns")
    released = (
        Condition("QuotaReserved", "False", "Pending", "Preempted to accommodate a workload"),
        Condition("Evicted", "True", "Preempted", "Preempted to accommodate a workload"),
    )
    w.queues.add_workload(replace(w.workloads[back], conditions=released))
    assert told(later(w).cycle()) == {back: (words.reason, words.message)}


class _ByName:
    """A plugin's queue order (as admission fair sharing's): by name, revision fixed."""

    def key(self, info: WorkloadInfo) -> tuple[Any, ...]:
        return (info.key,)

    def revision(self) -> int:
        return 0


def test_a_new_queue_order_keeps_the_untold_to_be_told() -> None:
    """A plugin's order moves (fair-sharing usage did): the queue re-orders its workloads,
    which tries none of them, so the one behind a parked head is still told its words."""
    w = world()
    head = w.submit("head", "lq", {"cpu": 6}, namespace="ns")
    words = pending(w.cycle(), head)
    late = w.submit("late", "lq", {"cpu": 6}, namespace="ns")
    queue = w.queues.queues["cq"]
    queue.set_strategy(Ordered(queue.strategy, _ByName()))
    assert told(later(w).cycle()) == {late: (words.reason, words.message)}
