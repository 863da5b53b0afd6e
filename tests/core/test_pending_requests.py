"""The queue manager's running totals of what each ClusterQueue's pending workloads request."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from kq.api.localqueue import LocalQueue
from kq.api.workload import PodSet, Workload
from kq.queue.manager import QueueManager
from tests.core.world import plugins

QUEUES = ("a", "b")


def workload(name: str, queue: str, cpu: int, count: int) -> Workload:
    # cpu 0 too: a resource requested keeps its (zero) total while a workload requests it.
    pod_sets = (PodSet("main", count, {"cpu": cpu}), PodSet("side", 1, {"memory": 1 + cpu}))
    return Workload("ns", name, f"uid-{name}", pod_sets, f"lq-{queue}")


def walked(queues: QueueManager, cq: str) -> Counter[str]:
    """The totals by a walk over every pending workload, as the metric was computed."""
    out: Counter[str] = Counter()
    for info in queues.queues[cq].unordered():
        for ps in info.obj.pod_sets:
            for resource, amount in ps.requests.items():
                out[resource] += amount * ps.count
    return out


OPS = st.lists(
    st.tuples(
        st.sampled_from(("add", "delete", "admit", "pop")),
        st.integers(0, 7),
        st.sampled_from(QUEUES),
        st.integers(0, 4000),
        st.integers(1, 3),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_totals_match_a_walk_over_the_pending(ops: list[tuple[str, int, str, int, int]]) -> None:
    queues = QueueManager(plugins().strategies)
    for cq in QUEUES:
        queues.set_cluster_queue(cq, "BestEffortFIFO")
        queues.set_local_queue(LocalQueue("ns", f"lq-{cq}", cq))
    popped: list[str] = []
    for op, n, cq, cpu, count in ops:
        if op in ("add", "delete") and f"ns/w{n}" in popped:
            popped.remove(f"ns/w{n}")  # no longer the head a cycle holds
        if op == "add":  # new, or an update that may move it to the other queue
            queues.add_workload(workload(f"w{n}", cq, cpu, count))
        elif op == "delete":
            queues.delete_workload(f"ns/w{n}")
        elif op == "admit" and popped:  # a cycle admits a head it holds
            queues.admitted(popped.pop(n % len(popped)))
        elif op == "pop":
            popped += [head.key for head in queues.heads()]  # in flight: still pending
        for name in QUEUES:
            assert Counter(queues.pending_requests(name)) == walked(queues, name)


def test_a_deleted_cluster_queue_takes_its_totals() -> None:
    queues = QueueManager(plugins().strategies)
    queues.set_cluster_queue("a", "BestEffortFIFO")
    queues.set_local_queue(LocalQueue("ns", "lq-a", "a"))
    queues.add_workload(workload("w", "a", 500, 2))
    assert queues.pending_requests("a") == {"cpu": 1000, "memory": 501}
    queues.delete_cluster_queue("a")
    assert not queues.pending_requests("a")
