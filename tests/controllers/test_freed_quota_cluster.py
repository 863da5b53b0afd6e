"""Quota a holder gives up in place reaches the workloads parked behind it, through the API.

An admitted Workload that reports reclaimable pods, or whose WorkloadPriorityClass priority
drops, stays admitted: no admission, eviction or deletion event frees its quota. Kueue's
workload controller requeues the parked workloads of its cohort tree on such an update; so
does kq's core, and the waiting workload gets in at once.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

from kq.api.quantity import parse_quantity
from kq.controllers.admission import AdmissionController
from kq.runtime.client import KubeClient
from kq.runtime.resources import WORKLOADS
from tests.controllers.helpers import (
    WPC_SOURCE,
    admitted,
    apply,
    cluster_queue,
    condition,
    cq_status,
    eventually,
    flavor,
    get_workload,
    local_queue,
    namespace,
    priority_class,
    suffix,
    workload,
)
from tests.harness import Cluster


async def parked(client: KubeClient, ns: str, name: str) -> dict[str, Any] | None:
    """The Workload once the scheduler has tried it and left it pending."""
    obj = await get_workload(client, ns, name)
    reserved = condition(obj, "QuotaReserved")
    return obj if reserved is not None and reserved["status"] == "False" else None


async def reserved_cpu(client: KubeClient, cq: str) -> Fraction:
    status = await cq_status(client, cq)
    return sum(
        (
            parse_quantity(r["total"])
            for used in status.get("flavorsReservation") or ()
            for r in used["resources"]
            if r["name"] == "cpu"
        ),
        Fraction(0),
    )


async def test_reclaimable_pods_let_a_parked_workload_in(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, controller: AdmissionController
) -> None:
    s = suffix()
    ns, rf, cq = f"rcl-{s}", f"rf-{s}", f"cq-{s}"
    apply(
        cluster,
        kubectl_cache,
        namespace(ns),
        flavor(rf),
        cluster_queue(cq, rf, "cpu", 4),
        local_queue(ns, "lq", cq),
    )
    apply(cluster, kubectl_cache, workload(ns, "holder", "lq", {"cpu": 1}, count=4))
    await eventually(lambda: admitted(client, ns, "holder"), "holder admitted")
    apply(cluster, kubectl_cache, workload(ns, "waiting", "lq", {"cpu": 1}, count=2))
    await eventually(lambda: parked(client, ns, "waiting"), "waiting tried and pending")

    # Two of the holder's pods are done for good (what a Job reports as its pods succeed).
    reclaimable = {"reclaimablePods": [{"name": "main", "count": 2}]}
    await client.merge_patch(
        WORKLOADS, "holder", {"status": reclaimable}, namespace=ns, subresource="status"
    )
    await eventually(lambda: admitted(client, ns, "waiting"), "waiting admitted")
    holder = await get_workload(client, ns, "holder")
    assert condition(holder, "Evicted") is None, "the holder keeps running"

    async def both_counted() -> bool:
        return await reserved_cpu(client, cq) == 4

    await eventually(both_counted, "2 CPUs of the holder and 2 of the newcomer reserved")


async def test_a_lowered_priority_class_lets_a_parked_workload_preempt(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, controller: AdmissionController
) -> None:
    s = suffix()
    ns, rf, cq = f"prio-{s}", f"rf-{s}", f"cq-{s}"
    low, mid, high = f"low-{s}", f"mid-{s}", f"high-{s}"
    apply(
        cluster,
        kubectl_cache,
        namespace(ns),
        flavor(rf),
        priority_class(low, 10),
        priority_class(mid, 50),
        priority_class(high, 100),
        cluster_queue(cq, rf, "cpu", 4, preemption={"withinClusterQueue": "LowerPriority"}),
        local_queue(ns, "lq", cq),
    )

    def at(name: str, wpc: str, value: int) -> dict[str, Any]:
        return workload(
            ns,
            name,
            "lq",
            {"cpu": 4},
            priorityClassName=wpc,
            priorityClassSource=WPC_SOURCE,
            priority=value,
        )

    apply(cluster, kubectl_cache, at("holder", high, 100))
    await eventually(lambda: admitted(client, ns, "holder"), "holder admitted")
    apply(cluster, kubectl_cache, at("waiting", mid, 50))
    await eventually(lambda: parked(client, ns, "waiting"), "waiting unable to preempt")

    # The holder moves to a class below the waiting workload's: it may be preempted now.
    moved = {"spec": {"priorityClassName": low, "priority": 10}}
    await client.merge_patch(WORKLOADS, "holder", moved, namespace=ns)
    await eventually(lambda: admitted(client, ns, "waiting"), "waiting admitted")
    holder = await get_workload(client, ns, "holder")
    preempted = condition(holder, "Preempted")
    assert preempted is not None
    assert (preempted["status"], preempted["reason"]) == ("True", "InClusterQueue")
