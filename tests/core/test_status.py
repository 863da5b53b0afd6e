"""Decisions rendered as Workload status in the API's shape."""

from __future__ import annotations

from dataclasses import replace

from kq.api.workload import Admission, PodSetAssignment
from kq.scheduler.status import (
    cluster_queue_status,
    local_queue_active_condition,
    local_queue_status,
)
from kq.workload.status import admitted_status, pending_status, preempted_status
from tests.core.world import World

NOW = 1767225600.0  # 2026-01-01T00:00:00Z


def test_admitted_status_has_the_admission_shape_and_both_conditions() -> None:
    admission = Admission(
        "cluster-queue",
        (
            PodSetAssignment(
                "main",
                {"google.com/tpu": "vlp-24", "cpu": "vlp-24"},
                {"google.com/tpu": 24, "cpu": 1500},
                6,
            ),
        ),
    )
    status = admitted_status(admission, (), NOW)
    assert status["admission"] == {
        "clusterQueue": "cluster-queue",
        "podSetAssignments": [
            {
                "name": "main",
                "flavors": {"google.com/tpu": "vlp-24", "cpu": "vlp-24"},
                "resourceUsage": {"google.com/tpu": "24", "cpu": "1500m"},
                "count": 6,
            }
        ],
    }
    assert [(c["type"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("QuotaReserved", "QuotaReserved", "Quota reserved in ClusterQueue cluster-queue"),
        ("Admitted", "Admitted", "The workload is admitted"),
    ]
    assert status["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    with_checks = admitted_status(admission, ("prov",), NOW)
    assert [(c["type"], c["status"]) for c in with_checks["conditions"]] == [
        ("QuotaReserved", "True"),
        ("Admitted", "False"),
    ]


def test_pending_and_preempted_conditions() -> None:
    assert pending_status("WaitingForQuota", "msg", NOW)["conditions"][0] == {
        "type": "QuotaReserved",
        "status": "False",
        "reason": "WaitingForQuota",
        "message": "msg",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    evicted, preempted = preempted_status("InClusterQueue", "why", NOW)["conditions"]
    assert (evicted["type"], evicted["reason"], evicted["status"]) == (
        "Evicted",
        "Preempted",
        "True",
    )
    assert (preempted["type"], preempted["reason"]) == ("Preempted", "InClusterQueue")


def test_queue_status_numbers() -> None:
    world = World()
    world.flavor("f")
    world.cluster_queue("cq", [{"f": {"cpu": 4, "memory": "8Gi"}}], cohort="c")
    world.cluster_queue("lender", [{"f": {"cpu": 4, "memory": "8Gi"}}], cohort="c")
    world.local_queue("ns", "lq", "cq")
    admitted = world.submit("a", "lq", {"cpu": 3, "memory": "4Gi"}, namespace="ns")
    world.cycle()
    world.cache.mark_admitted(admitted)
    world.submit("b", "lq", {"cpu": 3, "memory": "1Gi"}, namespace="ns")
    world.cycle()  # b borrows: reserved but not yet Admitted
    world.submit("c", "lq", {"cpu": 3}, namespace="ns")
    world.cycle()
    world.cache.mark_admitted("ns/b", admitted=False)
    status = cluster_queue_status(world.cache, world.queues, "cq")
    assert (
        status["pendingWorkloads"],
        status["reservingWorkloads"],
        status["admittedWorkloads"],
    ) == (1, 2, 1)
    assert status["flavorsReservation"] == [
        {
            "name": "f",
            "resources": [
                {"name": "cpu", "total": "6", "borrowed": "2"},
                {"name": "memory", "total": "5Gi", "borrowed": "0"},
            ],
        }
    ]
    assert status["flavorsUsage"][0]["resources"][0] == {
        "name": "cpu",
        "total": "3",
        "borrowed": "0",
    }
    lq = world.queues.local_queues["ns/lq"]
    assert local_queue_status(world.cache, world.queues, lq) == {
        "pendingWorkloads": 1,
        "reservingWorkloads": 2,
        "admittedWorkloads": 1,
        "flavorsReservation": [
            {
                "name": "f",
                "resources": [{"name": "cpu", "total": "6"}, {"name": "memory", "total": "5Gi"}],
            }
        ],
        "flavorUsage": [
            {
                "name": "f",
                "resources": [{"name": "cpu", "total": "3"}, {"name": "memory", "total": "4Gi"}],
            }
        ],
    }


def test_local_queue_active_condition() -> None:
    world = World()
    world.flavor("f")
    world.local_queue("ns", "lq", "cq")
    lq = world.queues.local_queues["ns/lq"]
    assert local_queue_active_condition(world.cache, lq)["reason"] == "ClusterQueueDoesNotExist"
    world.cluster_queue("cq", [{"f": {"cpu": 1}}], stopPolicy="Hold")
    assert local_queue_active_condition(world.cache, lq) == {
        "type": "Active",
        "status": "False",
        "reason": "ClusterQueueIsInactive",
        "message": "Can't submit new workloads to clusterQueue",
    }
    world.cluster_queue("cq", [{"f": {"cpu": 1}}])
    assert local_queue_active_condition(world.cache, lq)["message"] == (
        "Can submit new workloads to localQueue"
    )
    stopped = replace(lq, stop_policy="Hold")
    assert local_queue_active_condition(world.cache, stopped)["message"] == "LocalQueue is stopped"
