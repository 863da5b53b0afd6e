"""A Workload's life through informer events: pending, admitted, evicted, finished."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kq.api.workload import Workload, parse_workload
from kq.scheduler.decisions import Admit, Pending, Preempt
from kq.workload.status import admitted_status, preempted_status
from tests.core.world import World

NOW = 1767225600.0


def workload(
    name: str, cpu: int, priority: int = 0, status: dict[str, Any] | None = None
) -> Workload:
    obj = {
        "metadata": {
            "namespace": "ns",
            "name": name,
            "uid": name,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {
            "queueName": "lq",
            "priority": priority,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {"containers": [{"resources": {"requests": {"cpu": str(cpu)}}}]}
                    },
                }
            ],
        },
        "status": status or {},
    }
    parsed = parse_workload(obj)
    assert isinstance(parsed, Workload)
    return parsed


def world() -> World:
    w = World()
    w.flavor("f")
    w.cluster_queue("cq", [{"f": {"cpu": 2}}], preemption={"withinClusterQueue": "LowerPriority"})
    w.local_queue("ns", "lq", "cq")
    return w


def test_pending_admitted_finished() -> None:
    w = world()
    scheduler = w.scheduler
    assert scheduler.workload_changed(workload("a", 2)) is None
    assert scheduler.workload_changed(workload("b", 2)) is None
    decision = scheduler.run_cycle(NOW).by_key["ns/a"]
    assert isinstance(decision, Admit)
    # An informer event older than our write must not undo the assumption.
    scheduler.workload_changed(workload("a", 2))
    assert w.cache.holds_quota("ns/a")
    written = admitted_status(decision.admission, decision.admission_checks, NOW)
    scheduler.workload_changed(workload("a", 2, status=written))
    cached = w.cache.workload("ns/a")
    assert cached is not None
    assert (cached.assumed, cached.admitted) == (False, True)
    assert isinstance(scheduler.run_cycle(NOW + 1).by_key["ns/b"], Pending)
    assert scheduler.run_cycle(NOW + 1).decisions == ()  # parked until quota frees up
    finished = dict(written)
    finished["conditions"] = [
        *written["conditions"],
        {"type": "Finished", "status": "True", "reason": "Succeeded"},
    ]
    scheduler.workload_changed(workload("a", 2, status=finished))
    assert not w.cache.holds_quota("ns/a")
    assert isinstance(scheduler.run_cycle(NOW + 2).by_key["ns/b"], Admit)


def test_preempted_victim_requeues_after_its_quota_is_released() -> None:
    w = world()
    scheduler = w.scheduler
    scheduler.workload_changed(workload("low", 2))
    low = scheduler.run_cycle(NOW).by_key["ns/low"]
    assert isinstance(low, Admit)
    admitted = admitted_status(low.admission, (), NOW)
    scheduler.workload_changed(workload("low", 2, status=admitted))
    scheduler.workload_changed(workload("high", 2, priority=10))
    preempt = scheduler.run_cycle(NOW + 1).by_key["ns/high"]
    assert isinstance(preempt, Preempt)
    (victim,) = preempt.victims
    evicted = {
        **admitted,
        "conditions": admitted["conditions"]
        + preempted_status(victim.reason, victim.message, NOW)["conditions"],
    }
    scheduler.workload_changed(workload("low", 2, status=evicted))
    assert w.cache.holds_quota("ns/low")  # Evicted alone does not release quota
    released = {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending"}]}
    scheduler.workload_changed(workload("low", 2, status=released))
    assert not w.cache.holds_quota("ns/low")
    result = scheduler.run_cycle(NOW + 2)
    assert isinstance(result.by_key["ns/high"], Admit)
    assert w.queues.pending_count("cq") == 1  # the victim waits in its queue again


def test_deleted_and_deactivated_workloads_leave_everything() -> None:
    w = world()
    scheduler = w.scheduler
    scheduler.workload_changed(workload("gone", 1))
    scheduler.workload_deleted("ns/gone")
    scheduler.workload_changed(replace(workload("off", 1), active=False))
    assert w.queues.pending_count("cq") == 0
    lost = replace(workload("lost", 1), queue_name="nope")
    assert scheduler.workload_changed(lost) == "LocalQueue nope doesn't exist"
