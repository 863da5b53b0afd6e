"""Quota a holder gives up without leaving the cache reaches the workloads parked behind it.

Kueue's workload controller requeues a ClusterQueue's cohort tree when an admitted Workload
reports reclaimable pods, or when a quota holder's WorkloadPriorityClass priority changes;
nothing else would wake the parked workloads.
"""

from __future__ import annotations

from typing import Any

from kq.api.priority import POD_PRIORITY_CLASS_SOURCE, WORKLOAD_PRIORITY_CLASS_SOURCE
from kq.api.workload import Workload, parse_workload
from kq.scheduler.decisions import Admit, Pending, Preempt
from kq.workload.status import admitted_status
from tests.core.world import World

NOW = 1767225600.0


def workload(
    name: str,
    count: int,
    priority: int = 0,
    status: dict[str, Any] | None = None,
    **spec: Any,
) -> Workload:
    """``count`` pods of one CPU each."""
    template = {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}}
    obj = {
        "metadata": {"namespace": "ns", "name": name, "uid": name},
        "spec": {
            "queueName": "lq",
            "priority": priority,
            "podSets": [{"name": "main", "count": count, "template": template}],
            **spec,
        },
        "status": status or {},
    }
    parsed = parse_workload(obj)
    assert isinstance(parsed, Workload)
    return parsed


def world() -> World:
    w = World()
    w.flavor("f")
    w.cluster_queue("cq", [{"f": {"cpu": 4}}], preemption={"withinClusterQueue": "LowerPriority"})
    w.local_queue("ns", "lq", "cq")
    return w


def holding_all_quota(w: World, **spec: Any) -> dict[str, Any]:
    """Admit ``holder`` (4 pods, the whole quota); returns its written status."""
    w.scheduler.workload_changed(workload("holder", 4, **spec))
    decision = w.scheduler.run_cycle(NOW).by_key["ns/holder"]
    assert isinstance(decision, Admit)
    status = admitted_status(decision.admission, (), NOW)
    w.scheduler.workload_changed(workload("holder", 4, status=status, **spec))
    return status


def parked(w: World, name: str, count: int, **spec: Any) -> None:
    """``name`` is tried once, does not fit, and is parked: later cycles do not see it."""
    w.scheduler.workload_changed(workload(name, count, **spec))
    assert isinstance(w.scheduler.run_cycle(NOW + 1).by_key[f"ns/{name}"], Pending)
    assert w.scheduler.run_cycle(NOW + 2).decisions == ()


def test_reclaimable_pods_of_an_admitted_workload_let_a_parked_one_in() -> None:
    w = world()
    status = holding_all_quota(w)
    parked(w, "waiting", 2)
    reclaimed = {**status, "reclaimablePods": [{"name": "main", "count": 2}]}
    w.scheduler.workload_changed(workload("holder", 4, status=reclaimed))
    assert isinstance(w.scheduler.run_cycle(NOW + 3).by_key["ns/waiting"], Admit)


def test_a_lowered_workload_priority_class_lets_a_parked_workload_preempt() -> None:
    w = world()
    high = {"priorityClassName": "high", "priorityClassSource": WORKLOAD_PRIORITY_CLASS_SOURCE}
    status = holding_all_quota(w, priority=100, **high)
    mid = {"priorityClassName": "mid", "priorityClassSource": WORKLOAD_PRIORITY_CLASS_SOURCE}
    parked(w, "waiting", 2, priority=50, **mid)
    # The class's value went down; the Workload's priority follows it.
    w.scheduler.workload_changed(workload("holder", 4, priority=10, status=status, **high))
    decision = w.scheduler.run_cycle(NOW + 3).by_key["ns/waiting"]
    assert isinstance(decision, Preempt)
    assert [v.key for v in decision.victims] == ["ns/holder"]


def test_a_pod_priority_class_change_wakes_nobody_as_upstream() -> None:
    """Kueue follows only WorkloadPriorityClass priorities; a pod PriorityClass's is fixed."""
    w = world()
    pod_class = {"priorityClassName": "pods", "priorityClassSource": POD_PRIORITY_CLASS_SOURCE}
    status = holding_all_quota(w, priority=100, **pod_class)
    parked(w, "waiting", 2, priority=50)
    w.scheduler.workload_changed(workload("holder", 4, priority=10, status=status, **pod_class))
    assert w.scheduler.run_cycle(NOW + 3).decisions == ()


def test_an_update_that_frees_nothing_leaves_the_parked_workloads_parked() -> None:
    w = world()
    status = holding_all_quota(w)
    parked(w, "waiting", 2)
    relabelled = {**status, "reclaimablePods": []}
    w.scheduler.workload_changed(workload("holder", 4, status=relabelled))
    assert w.scheduler.run_cycle(NOW + 3).decisions == ()
