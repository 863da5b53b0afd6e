"""Words for workloads of a shape parked with its head (BestEffortFIFO): no cycle tries them,
so they are told the head's words (``kq.scheduler.held.parked_words``), each once."""

from __future__ import annotations

from dataclasses import replace

from kq.api.conditions import Condition
from kq.scheduler.cycle import CycleResult
from tests.core.world import World, pending


def world() -> World:
    out = World()
    out.flavor("default")
    out.cluster_queue("cq", [{"default": {"cpu": 4}}])
    out.local_queue("ns", "lq", "cq")
    return out


def told(result: CycleResult) -> dict[str, tuple[str, str]]:
    return {p.key: (p.reason, p.message) for p in result.held}


def test_an_arrival_in_a_parked_shape_is_told_the_heads_words_without_a_try() -> None:
    w = world()
    head = w.submit("head", "lq", {"cpu": 6}, namespace="ns")
    words = pending(w.cycle(), head)
    late = w.submit("late", "lq", {"cpu": 6}, namespace="ns")
    result = w.cycle()
    assert result.decisions == ()
    assert told(result) == {late: (words.reason, words.message)}
    assert result.held[0].cluster_queue == "cq"
    assert w.cycle().held == ()  # told once


def test_words_the_status_says_already_are_not_repeated() -> None:
    w = world()
    head = w.submit("head", "lq", {"cpu": 6}, namespace="ns")
    words = pending(w.cycle(), head)
    late = w.submit("late", "lq", {"cpu": 6}, namespace="ns")
    assert late in told(w.cycle())
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
    assert told(result) == {behind: (words.reason, words.message)}
    assert other in w.cycle().by_key  # another shape is tried, not told


def test_after_a_requeue_only_the_untold_hear_the_new_words() -> None:
    w = world()
    head = w.submit("head", "lq", {"cpu": 6}, namespace="ns")
    w.cycle()
    early = w.submit("early", "lq", {"cpu": 6}, namespace="ns")
    assert early in told(w.cycle())
    w.requeue_all()  # the shape is released: its head is tried again, arrivals are not told
    late = w.submit("late", "lq", {"cpu": 6}, namespace="ns")
    result = w.cycle()
    assert [d.key for d in result.decisions] == [head]
    assert set(told(result)) == {late}
