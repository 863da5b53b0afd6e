"""Paced retries of parked workloads (``kq.queue.pacing``): a retry waits a period, and the
requests made meanwhile fold into it."""

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


def test_a_retry_waits_for_the_period_and_requests_meanwhile_fold_into_it() -> None:
    queues = paced(10.0)
    park_one(queues, "a")
    queues.requeue_inadmissible(["cq"])
    assert queues.requeue_due() == float("-inf")  # its period starts at the next cycle
    queues.take_requeues(100.0)
    assert queues.heads() == []
    queues.requeue_inadmissible(["cq"])  # folded into the same retry
    assert queues.requeue_due() == 110.0
    queues.take_requeues(109.9)
    assert queues.heads() == []
    queues.take_requeues(110.0)
    assert [h.obj.name for h in queues.heads()] == ["a"]
    assert queues.requeue_due() is None


def test_a_queue_with_nothing_parked_asks_for_no_retry() -> None:
    queues = paced(10.0)
    queues.requeue_inadmissible(["cq", "gone"])
    assert queues.requeue_due() is None


def test_without_a_period_a_retry_runs_at_once() -> None:
    queues = paced(0.0)
    park_one(queues, "a")
    queues.requeue_inadmissible(["cq"])
    assert queues.requeue_due() is None
    assert [h.obj.name for h in queues.heads()] == ["a"]


def test_a_deleted_cluster_queue_leaves_no_retry_waiting() -> None:
    queues = paced(10.0)
    park_one(queues, "a")
    queues.requeue_inadmissible(["cq"])
    queues.take_requeues(0.0)
    assert queues.requeue_due() == 10.0
    queues.delete_cluster_queue("cq")
    assert queues.requeue_due() is None


@given(st.lists(st.tuples(st.integers(0, 400).map(lambda q: q / 4), st.sampled_from("abc"))))
def test_each_retry_waits_a_period_after_its_request_and_none_is_lost(
    asks: list[tuple[float, str]],
) -> None:
    """Cycles every quarter second; requests arrive between them."""
    pacer, period = RequeuePacer(1.0), 1.0
    arriving: dict[float, list[str]] = {}
    for at, name in asks:
        arriving.setdefault(at, []).append(name)
    waiting: dict[str, list[float]] = {}  # per queue, requests its next retry will serve
    retried: dict[str, list[float]] = {}
    for now in (step / 4 for step in range(410)):
        for name in pacer.take(now):
            assert waiting.get(name), f"{name} retried without a request"
            assert now >= waiting[name][0] + period  # the oldest request waited a period
            waiting[name] = []
            retried.setdefault(name, []).append(now)
        for name in arriving.get(now, ()):
            pacer.ask([name])
            waiting.setdefault(name, []).append(now)
    assert not any(waiting.values())  # every request served
    assert pacer.next_due() is None
    for times in retried.values():
        assert all(b - a >= period for a, b in pairwise(times))
