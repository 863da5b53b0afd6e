"""The queue manager: heap order, parking, requeue events and LocalQueue routing."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from kq.api.conditions import Condition
from kq.api.localqueue import LocalQueue
from kq.api.workload import PodSet, Workload
from kq.queue.manager import QueueManager
from kq.queue.requeue import RequeueReason
from tests.core.world import World, plugins


def workload(name: str, priority: int = 0, created: float = 0.0, queue: str = "lq") -> Workload:
    pod_set = PodSet("main", 1, {"cpu": 1000})
    return Workload("ns", name, f"uid-{name}", (pod_set,), queue, priority, creation_time=created)


def manager(strategy: str = "BestEffortFIFO") -> QueueManager:
    queues = QueueManager(plugins().strategies)
    queues.set_cluster_queue("cq", strategy)
    queues.set_local_queue(LocalQueue("ns", "lq", "cq"))
    return queues


def drain(queues: QueueManager) -> list[str]:
    order = []
    while heads := queues.heads():
        for head in heads:
            order.append(head.obj.name)
            queues.admitted(head.key)
    return order


def test_heap_orders_by_priority_then_queue_time_then_uid() -> None:
    queues = manager()
    for wl in (
        workload("late-high", priority=5, created=30),
        workload("early-low", priority=1, created=10),
        workload("b-tie", priority=1, created=20),
        workload("a-tie", priority=1, created=20),
    ):
        assert queues.add_workload(wl) is None
    assert drain(queues) == ["late-high", "early-low", "a-tie", "b-tie"]


def test_missing_local_queue_is_reported_with_kueue_wording() -> None:
    queues = manager()
    assert queues.add_workload(workload("w", queue="nope")) == "LocalQueue nope doesn't exist"
    queues.set_local_queue(LocalQueue("ns", "orphan", "ghost-cq"))
    assert (
        queues.add_workload(workload("w", queue="orphan")) == "ClusterQueue ghost-cq doesn't exist"
    )


def test_best_effort_parks_until_an_event_and_strict_fifo_retries() -> None:
    for strategy, parked in (("BestEffortFIFO", True), ("StrictFIFO", False)):
        queues = manager(strategy)
        queues.add_workload(workload("head"))
        (head,) = queues.heads()
        queues.requeue(head, RequeueReason.NO_FIT)
        assert (queues.heads() == []) is parked
        assert queues.pending_count("cq") == 1


def test_event_while_in_flight_is_not_lost() -> None:
    queues = manager()
    queues.add_workload(workload("head"))
    (head,) = queues.heads()
    queues.requeue_inadmissible(["cq"])  # quota freed while the head was being decided
    queues.requeue(head, RequeueReason.NO_FIT)
    assert [h.obj.name for h in queues.heads()] == ["head"]


def test_failed_after_nomination_goes_straight_back_under_best_effort() -> None:
    queues = manager()
    queues.add_workload(workload("head"))
    (head,) = queues.heads()
    queues.requeue(head, RequeueReason.FAILED_AFTER_NOMINATION)
    assert [h.obj.name for h in queues.heads()] == ["head"]


def test_update_replaces_and_delete_removes_everywhere() -> None:
    queues = manager()
    queues.add_workload(workload("w", priority=1))
    queues.add_workload(workload("w", priority=9))
    assert queues.pending_count("cq") == 1
    assert queues.pending_in_local_queue("ns/lq") == 1
    (head,) = queues.heads()
    assert head.priority == 9
    queues.delete_workload(head.key)
    queues.requeue(head, RequeueReason.NO_FIT)  # a late requeue of a deleted head is dropped
    assert queues.pending_count("cq") == 0
    assert queues.pending_in_local_queue("ns/lq") == 0
    assert queues.heads() == []


def test_inactive_queues_yield_no_heads() -> None:
    queues = manager()
    queues.add_workload(workload("w"))
    assert queues.heads(active=()) == []
    assert len(queues.heads(active={"cq"})) == 1


def test_a_workload_backing_off_stays_out_of_the_heap() -> None:
    queues = manager()
    backing_off = replace(
        workload("evicted"), conditions=(Condition("Requeued", "False", "PodsReadyTimeout"),)
    )
    queues.add_workload(backing_off)
    queues.requeue_inadmissible(["cq"])
    assert queues.heads() == []
    assert queues.pending_count("cq") == 1
    ready = replace(backing_off, conditions=(Condition("Requeued", "True", "BackoffFinished"),))
    queues.add_workload(ready)
    assert [h.obj.name for h in queues.heads()] == ["evicted"]


def test_best_effort_keeps_the_preemptor_first_until_it_is_admitted() -> None:
    queues = manager()
    queues.add_workload(workload("preemptor", priority=1))
    (head,) = queues.heads()
    queues.requeue(head, RequeueReason.PENDING_PREEMPTION)
    queues.add_workload(workload("urgent", priority=100))
    (again,) = queues.heads()
    assert again.obj.name == "preemptor"
    queues.admitted(again.key)
    assert [h.obj.name for h in queues.heads()] == ["urgent"]


def test_either_strategy_names_its_preemptor_until_it_leaves() -> None:
    """The cycle puts a preemptor's entry first (Kueue's PrioritizePreemptorWorkloads) under
    both strategies; only BestEffortFIFO also keeps it first in its queue (sticky)."""
    for strategy, sticky in (("BestEffortFIFO", True), ("StrictFIFO", False)):
        queues = manager(strategy)
        queues.add_workload(workload("preemptor", priority=1))
        queues.add_workload(workload("other"))
        (head,) = queues.heads()
        assert queues.preemptors([head]) == frozenset()
        queues.requeue(head, RequeueReason.PENDING_PREEMPTION)
        queue = queues.queues["cq"]
        assert (queue.preemptor, queue.sticky) == (head.key, head.key if sticky else None)
        (again,) = queues.heads()
        assert queues.preemptors([again]) == {head.key}
        queues.admitted(again.key)
        assert (queue.preemptor, queue.sticky) == (None, None)
        (other,) = queues.heads()
        assert queues.preemptors([other]) == frozenset()


def test_events_requeue_the_right_trees() -> None:
    world = World()
    world.flavor("f")
    for name, cohort in (("a", "left"), ("b", "left"), ("c", "right")):
        world.cluster_queue(name, [{"f": {"cpu": 1}}], cohort=cohort)
        world.local_queue("ns", name, name)
    world.cohort("left")
    keys = {n: world.submit(f"too-big-{n}", n, {"cpu": 3}, namespace="ns") for n in "abc"}
    world.cycle()
    assert world.cycle().decisions == ()  # all three parked

    def retried() -> set[str]:
        return {d.key for d in world.cycle().decisions}

    world.scheduler.cluster_queue_changed("a")
    assert retried() == {keys["a"], keys["b"]}
    world.scheduler.cohort_changed("right")
    assert retried() == {keys["c"]}
    world.scheduler.flavors_or_checks_changed()
    assert retried() == set(keys.values())


def test_finishing_in_one_queue_wakes_its_cohort_only() -> None:
    world = World()
    world.flavor("f")
    for name, cohort in (("a", "x"), ("b", "x"), ("c", "y")):
        world.cluster_queue(name, [{"f": {"cpu": 2}}], cohort=cohort)
        world.local_queue("ns", name, name)
    holder = world.submit("holder", "a", {"cpu": 4}, namespace="ns")
    world.cycle()
    borrower = world.submit("borrower", "b", {"cpu": 2}, namespace="ns")
    stranger = world.submit("stranger", "c", {"cpu": 3}, namespace="ns")
    world.run(2)
    world.finish(holder)
    result = world.cycle()
    assert set(result.by_key) == {borrower}
    assert stranger not in world.admitted()


def sized(name: str, cpu: int, priority: int = 0, created: float = 0.0) -> Workload:
    pod_set = PodSet("main", 1, {"cpu": cpu})
    return Workload("ns", name, f"uid-{name}", (pod_set,), "lq", priority, creation_time=created)


def test_a_shape_that_fails_parks_its_equals_but_not_other_shapes() -> None:
    queues = manager()
    for i, cpu in enumerate((4000, 4000, 1000, 4000)):
        queues.add_workload(sized(f"w{i}", cpu, created=i))
    (head,) = queues.heads()
    assert head.obj.name == "w0"
    queues.requeue(head, RequeueReason.NO_FIT)
    # w1 and w3 share w0's shape: they are skipped without a try, and so is a new arrival.
    queues.add_workload(sized("late", 4000, created=9))
    assert [h.obj.name for h in queues.heads()] == ["w2"]
    queue = queues.queues["cq"]
    assert queue.parked_count() == 4
    assert queue.untried_count() == 0
    assert queues.pending_count("cq") == 5
    queues.requeue_inadmissible(["cq"])
    assert queue.parked_count() == 0
    assert drain(queues) == ["w0", "w1", "w3", "late"]


def test_strict_fifo_parks_no_shape() -> None:
    queues = manager("StrictFIFO")
    queues.add_workload(sized("a", 4000))
    queues.add_workload(sized("b", 4000, created=1))
    (head,) = queues.heads()
    queues.requeue(head, RequeueReason.NO_FIT)
    assert queues.queues["cq"].parked_shapes == set()
    assert [h.obj.name for h in queues.heads()] == ["a"]


def test_only_shape_failures_park_the_shape() -> None:
    queues = manager()
    queues.add_workload(sized("a", 4000))
    queues.add_workload(sized("b", 4000, created=1))
    (head,) = queues.heads()
    queues.requeue(head, RequeueReason.INACTIVE)
    assert [h.obj.name for h in queues.heads()] == ["b"]


def test_an_unchanged_update_leaves_a_parked_workload_parked() -> None:
    queues = manager()
    queues.add_workload(sized("w", 4000))
    (head,) = queues.heads()
    queues.requeue(head, RequeueReason.INACTIVE)
    pending = Condition("QuotaReserved", "False", "Pending", "couldn't assign flavors")
    queues.add_workload(replace(sized("w", 4000), conditions=(pending,)))
    assert queues.heads() == []
    queues.add_workload(sized("w", 2000))  # smaller now: it may fit, so it is tried again
    assert [h.obj.name for h in queues.heads()] == ["w"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "pop-fit", "pop-nofit", "requeue", "delete"]),
            st.integers(0, 7),
            st.sampled_from([1000, 2000]),
            st.integers(0, 2),
        ),
        max_size=60,
    )
)
def test_heads_follow_heap_order_among_shapes_not_parked(
    steps: list[tuple[str, int, int, int]],
) -> None:
    """Against a plain model: the head is always the first queued workload, in heap order,
    whose shape is not parked; parked shapes come back whole on a requeue."""
    queues = manager()
    queue = queues.queues["cq"]
    model: dict[str, Workload] = {}
    parked: set[tuple[int, int]] = set()
    clock = 0.0
    for op, n, cpu, priority in steps:
        name = f"w{n}"
        if op == "add":
            clock += 1
            wl = sized(name, cpu, priority, created=clock)
            queues.add_workload(wl)
            model[name] = wl
        elif op == "delete":
            queues.delete_workload(f"ns/{name}")
            model.pop(name, None)
        elif op == "requeue":
            queues.requeue_inadmissible(["cq"])
            parked.clear()
        else:
            ready = sorted(
                (
                    w
                    for w in model.values()
                    if (w.priority, w.pod_sets[0].requests["cpu"]) not in parked
                ),
                key=lambda w: (-w.priority, w.creation_time, w.uid),
            )
            heads = queues.heads()
            assert [h.obj.name for h in heads] == [w.name for w in ready[:1]]
            if heads and op == "pop-fit":
                queues.admitted(heads[0].key)
                del model[heads[0].obj.name]
            elif heads:
                queues.requeue(heads[0], RequeueReason.NO_FIT)
                parked.add((heads[0].priority, heads[0].obj.pod_sets[0].requests["cpu"]))
        assert len(queue) == len(model)


def test_pending_total_counts_every_cluster_queue_in_every_state() -> None:
    queues = manager()
    queues.set_cluster_queue("other", "StrictFIFO")
    queues.set_local_queue(LocalQueue("ns", "lq2", "other"))
    for i in range(3):
        queues.add_workload(workload(f"w{i}", created=i))
        queues.add_workload(workload(f"x{i}", created=i, queue="lq2"))
    queues.add_workload(workload("lost", queue="nope"))  # not queued: not pending
    heads = {h.obj.name: h for h in queues.heads()}  # in flight: still pending
    assert queues.pending_total() == 6
    queues.requeue(heads["w0"], RequeueReason.NO_FIT)  # parked: still pending
    queues.admitted(heads["x0"].key)
    queues.delete_workload("ns/w1")
    assert queues.pending_total() == 4 == sum(map(queues.pending_count, ("cq", "other")))
    queues.delete_cluster_queue("other")
    assert queues.pending_total() == 2 == queues.pending_count("cq")
