"""Paced retries of parked workloads (``kq.queue.pacing``): the first at once, later ones
folded into one at the end of the period."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from kq.api.localqueue import LocalQueue
from kq.api.workload import PodSet, Workload
from kq.queue.manager import QueueManager
from kq.queue.pacing import RequeuePacer
from kq.queue.requeue import RequeueReason
from tests.core.world import plugins


def paced(period: float) -> QueueManager:
    queues = QueueManager(plugins().strategies, requeue_period=period)
    queues.set_cluster_queue("cq", "BestEffortFIFO")
    queues.set_local_queue(LocalQueue("ns", "lq", "cq"))
    return queues


def park_one(queues: QueueManager, name: str) -> None:
    wl = Workload("ns", name, f"uid-{name}", (PodSet("main", 1, {"cpu": 1000}),), "lq", 0)
    queues.add_workload(wl)
    (head,) = queues.heads()
    queues.requeue(head, RequeueReason.NO_FIT)


def test_the_first_retry_runs_at_the_next_cycle_and_later_ones_wait_for_the_period() -> None:
    queues = paced(10.0)
    park_one(queues, "a")
    queues.requeue_inadmissible(["cq"])
    assert queues.queues["cq"].parked_count() == 1  # asked, not yet carried out
    queues.take_requeues(100.0)
    (head,) = queues.heads()
    assert head.obj.name == "a"

    queues.requeue(head, RequeueReason.NO_FIT)
    queues.requeue_inadmissible(["cq"])
    queues.requeue_inadmissible(["cq"])  # folded into the same retry
    assert queues.requeue_due() == 110.0
    queues.take_requeues(109.9)
    assert queues.heads() == []
    queues.take_requeues(110.0)
    assert [h.obj.name for h in queues.heads()] == ["a"]
    assert queues.requeue_due() is None


def test_without_a_period_a_retry_runs_at_once() -> None:
    queues = paced(0.0)
    park_one(queues, "a")
    queues.requeue_inadmissible(["cq"])
    assert queues.requeue_due() is None
    assert [h.obj.name for h in queues.heads()] == ["a"]


def test_a_deleted_cluster_queue_leaves_no_retry_waiting() -> None:
    queues = paced(10.0)
    queues.requeue_inadmissible(["cq"])
    queues.take_requeues(0.0)
    queues.requeue_inadmissible(["cq", "gone"])
    queues.delete_cluster_queue("cq")
    assert queues.requeue_due() == float("-inf")  # "gone" was never retried: due now
    queues.take_requeues(0.0)
    assert queues.requeue_due() is None


@given(st.lists(st.tuples(st.integers(0, 400).map(lambda q: q / 4), st.sampled_from("abc"))))
def test_each_queue_is_retried_at_most_once_per_period_and_none_is_lost(
    asks: list[tuple[float, str]],
) -> None:
    pacer, period = RequeuePacer(1.0), 1.0
    retried: dict[str, list[float]] = {}
    for at, name in sorted(asks):
        for taken in pacer.take(at):
            retried.setdefault(taken, []).append(at)
        pacer.ask([name])
    while (due := pacer.next_due()) is not None:
        for taken in pacer.take(due):
            retried.setdefault(taken, []).append(due)
    for times in retried.values():
        assert all(b - a >= period for a, b in pairwise(times))
    assert set(retried) == {name for _, name in asks}
