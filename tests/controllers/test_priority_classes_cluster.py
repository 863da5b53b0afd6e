"""A WorkloadPriorityClass's new value reaches the Workloads that name it, bare ones included.

As Kueue's WorkloadPriorityClass controller: ``spec.priority`` of every Workload whose
priority came from the class follows its value, pending or admitted; one whose priority came
from a pod PriorityClass of the same name does not. The admission core then acts on the new
priority: a lowered holder is preempted by a workload that waited behind it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kq.api.priority import POD_PRIORITY_CLASS_SOURCE
from kq.controllers.admission import AdmissionController
from kq.controllers.priority_classes import PriorityClassController
from kq.runtime.client import KubeClient
from kq.runtime.resources import WORKLOAD_PRIORITY_CLASSES
from tests.controllers.helpers import (
    WPC_SOURCE,
    admitted,
    apply,
    cluster_queue,
    condition,
    eventually,
    flavor,
    get_workload,
    kubectl_json,
    local_queue,
    namespace,
    priority_class,
    suffix,
    workload,
)
from tests.harness import Cluster


@pytest.fixture
async def follower(
    client: KubeClient, controller: AdmissionController
) -> AsyncIterator[PriorityClassController]:
    """The class controller on the admission controller's informers (both watch the kinds)."""
    running = PriorityClassController(client, controller.informers)
    task = asyncio.create_task(running.run())
    yield running
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def of_class(ns: str, name: str, queue: str, wpc: str, value: int, cpu: int) -> dict[str, Any]:
    return workload(
        ns,
        name,
        queue,
        {"cpu": cpu},
        priorityClassName=wpc,
        priorityClassSource=WPC_SOURCE,
        priority=value,
    )


async def test_bare_workloads_follow_their_class_value(
    cluster: Cluster,
    kubectl_cache: Path,
    client: KubeClient,
    controller: AdmissionController,
    follower: PriorityClassController,
) -> None:
    s = suffix()
    ns, rf, cq, team = f"wpc-{s}", f"rf-{s}", f"cq-{s}", f"team-{s}"
    apply(
        cluster,
        kubectl_cache,
        namespace(ns),
        flavor(rf),
        priority_class(team, 100),
        cluster_queue(cq, rf, "cpu", 2),
        local_queue(ns, "lq", cq),
    )
    same_name_pod_class = workload(
        ns,
        "pods",
        "nowhere",
        {"cpu": 1},
        priorityClassName=team,
        priorityClassSource=POD_PRIORITY_CLASS_SOURCE,
        priority=7,
    )
    apply(
        cluster,
        kubectl_cache,
        of_class(ns, "running", "lq", team, 100, 2),
        of_class(ns, "waiting", "nowhere", team, 100, 1),  # its LocalQueue does not exist
        same_name_pod_class,
    )
    await eventually(lambda: admitted(client, ns, "running"), "running admitted")

    await client.merge_patch(WORKLOAD_PRIORITY_CLASSES, team, {"value": 300})

    async def followed() -> dict[str, int] | None:
        listed = kubectl_json(cluster, kubectl_cache, "get", "workloads", "-n", ns)["items"]
        got = {wl["metadata"]["name"]: wl["spec"]["priority"] for wl in listed}
        return got if got == {"running": 300, "waiting": 300, "pods": 7} else None

    await eventually(followed, "the class's Workloads at 300, the pod-class one at 7")
    running = await get_workload(client, ns, "running")
    assert condition(running, "Evicted") is None, "a new priority does not evict"


async def test_a_lowered_class_lets_a_waiting_workload_preempt(
    cluster: Cluster,
    kubectl_cache: Path,
    client: KubeClient,
    controller: AdmissionController,
    follower: PriorityClassController,
) -> None:
    s = suffix()
    ns, rf, cq = f"wpcp-{s}", f"rf-{s}", f"cq-{s}"
    team, urgent = f"team-{s}", f"urgent-{s}"
    apply(
        cluster,
        kubectl_cache,
        namespace(ns),
        flavor(rf),
        priority_class(team, 100),
        priority_class(urgent, 50),
        cluster_queue(cq, rf, "cpu", 2, preemption={"withinClusterQueue": "LowerPriority"}),
        local_queue(ns, "lq", cq),
    )
    apply(cluster, kubectl_cache, of_class(ns, "holder", "lq", team, 100, 2))
    await eventually(lambda: admitted(client, ns, "holder"), "holder admitted")
    apply(cluster, kubectl_cache, of_class(ns, "waiting", "lq", urgent, 50, 2))

    async def tried() -> bool:
        reserved = condition(await get_workload(client, ns, "waiting"), "QuotaReserved")
        return reserved is not None and reserved["status"] == "False"

    await eventually(tried, "waiting tried and pending")

    await client.merge_patch(WORKLOAD_PRIORITY_CLASSES, team, {"value": 10})
    await eventually(lambda: admitted(client, ns, "waiting"), "waiting admitted")
    holder = await get_workload(client, ns, "holder")
    assert holder["spec"]["priority"] == 10
    preempted = condition(holder, "Preempted")
    assert preempted is not None
    assert (preempted["status"], preempted["reason"]) == ("True", "InClusterQueue")
