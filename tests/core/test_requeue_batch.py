"""Cluster events retry parked workloads a second after the first one, together (Kueue's
requeueBatchPeriod, ``kq.queue.batch``)."""

from __future__ import annotations

from kq.queue.batch import REQUEUE_BATCH_S, RequeueBatch
from kq.scheduler.decisions import Admit
from tests.core.world import World


def test_asks_are_timed_by_the_next_cycle_and_join_a_retry_already_timed() -> None:
    batch = RequeueBatch()
    batch.ask(["a", "b"])
    assert batch.waiting()
    assert batch.next_at(lambda name: True) is None
    assert batch.take_due(10.0) == []  # timed now, due a batch period later
    assert batch.next_at(lambda name: True) == 10.0 + REQUEUE_BATCH_S
    assert batch.next_at(lambda name: False) is None  # nothing parked: no instant needed
    batch.ask(["a"])  # joins the retry timed at 10
    assert not batch.waiting()
    assert batch.take_due(10.5) == []
    assert sorted(batch.take_due(11.0)) == ["a", "b"]
    assert batch.next_at(lambda name: True) is None
    assert not batch.waiting()


def test_a_burst_of_finishes_retries_the_parked_head_once_a_second_after_the_first() -> None:
    world = World()
    world.flavor("f")
    world.cluster_queue("cq", [{"f": {"cpu": 3}}])
    world.local_queue("ns", "lq", "cq")
    holders = [world.submit(f"holder-{i}", "lq", {"cpu": 1}, namespace="ns") for i in range(3)]
    world.run(3)
    waiting = world.submit("waiting", "lq", {"cpu": 2}, namespace="ns")
    assert waiting in world.cycle().by_key  # tried, does not fit: parked
    queues = world.scheduler.queues
    world.finish(holders[0])
    first = world.scheduler.run_cycle(100.0)
    assert waiting not in first.by_key  # the retry is timed, not yet due
    world.finish(holders[1])  # joins the retry the first finish asked for
    assert world.scheduler.run_cycle(100.5).decisions == ()
    assert queues.requeue_ready(100.0 + REQUEUE_BATCH_S)
    decided = world.scheduler.run_cycle(100.0 + REQUEUE_BATCH_S).by_key
    assert list(decided) == [waiting]  # one try for both finishes
    assert isinstance(decided[waiting], Admit)
    assert not queues.requeue_ready(200.0)
