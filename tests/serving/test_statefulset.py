"""StatefulSets under kq (framework ``statefulset``): the set's pods are one pod group with fast
admission, so one Workload per set, its pods ungated one by one once admitted (OrderedReady),
preempted as a whole (the Workload, owned by the set, kept), scaled only through 0, deleted."""

from __future__ import annotations

from typing import Any

import pytest

from kq.runtime.errors import ApiError
from kq.runtime.resources import JOBS, WORKLOADS
from kq.sandbox.cluster.serving import STATEFULSETS
from tests.integrations_io.conftest import QUEUE, QUEUE_LABEL, Stack, eventually, urgent_job
from tests.serving.conftest import (
    GATE,
    PARENT,
    PRIORITY_LABEL,
    app_pods,
    condition,
    gates,
    server_template,
)
from tests.serving.conftest import scale as scale_owner

MIB = 2**20
GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"


def statefulset(name: str, replicas: int, *, cpu: str = "1", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "labels": {QUEUE_LABEL: QUEUE, **labels}},
        "spec": {"replicas": replicas, "serviceName": name,
                 "selector": {"matchLabels": {"app": name}},
                 "template": server_template(name, cpu)},
    }  # fmt: skip


async def the_workload(stack: Stack, name: str) -> dict[str, Any]:
    return await eventually(lambda: stack.workload("StatefulSet", name), f"{name}'s Workload")


async def running(stack: Stack, app: str, count: int) -> list[dict[str, Any]]:
    async def probe() -> list[dict[str, Any]]:
        pods = await app_pods(stack, app)
        up = [p for p in pods if not gates(p) and p["status"].get("phase") == "Running"]
        assert (len(up), len(pods)) == (count, count), [
            (p["metadata"]["name"], gates(p), p["status"].get("phase")) for p in pods
        ]
        return up

    return await eventually(probe, f"{count} pods of {app} running", within=90)


async def scale(stack: Stack, name: str, replicas: int) -> None:
    await scale_owner(stack, name, replicas, STATEFULSETS)


async def test_one_workload_for_the_set_and_its_pods_ungated_in_order(stack: Stack) -> None:
    created = await stack.create(STATEFULSETS, statefulset("db", 3))
    assert created["spec"]["template"]["metadata"]["annotations"][PARENT] == "statefulset"
    workload = await the_workload(stack, "db")
    assert workload["metadata"]["name"].startswith("statefulset-db-")
    assert [(ps["name"], ps["count"]) for ps in workload["spec"]["podSets"]] == [("main", 3)]
    # Built with pod 0 (fast admission), for every replica, named as upstream's, the set
    # among its owners.
    await stack.announced("Pod", "db-0", "CreatedWorkload")
    pods = await running(stack, "db", 3)
    for pod in pods:
        assert pod["metadata"]["labels"][GROUP_LABEL] == workload["metadata"]["name"]
        notes = pod["metadata"]["annotations"]
        assert notes["kueue.x-k8s.io/pod-group-total-count"] == "3"
        assert notes["kueue.x-k8s.io/pod-group-fast-admission"] == "true"
        assert notes["kueue.x-k8s.io/pod-group-serving"] == "true"
    assert sorted(p["metadata"]["name"] for p in pods) == ["db-0", "db-1", "db-2"]
    await stack.assert_running_on_the_flavor(pods)
    # No pod of the set has a Workload of its own.
    listing = await stack.client.list(WORKLOADS, namespace=stack.ns)
    assert len(listing["items"]) == 1
    await stack.using({"cpu": 3, "memory": 300 * MIB})


async def test_a_set_that_does_not_fit_waits_with_pod_0_gated(stack: Stack) -> None:
    await stack.create(STATEFULSETS, statefulset("db", 3))
    await running(stack, "db", 3)
    await stack.create(STATEFULSETS, statefulset("big", 2))  # 2 CPUs; 1 is left
    workload = await the_workload(stack, "big")

    async def pending() -> None:
        current = await stack.client.get(WORKLOADS, workload["metadata"]["name"], stack.ns)
        quota = condition(current, "QuotaReserved")
        assert quota is not None
        assert (quota["status"], quota["reason"]) == ("False", "WaitingForQuota")
        pods = await app_pods(stack, "big")
        # OrderedReady: a gated pod 0 holds back pod 1.
        assert [(p["metadata"]["name"], gates(p)) for p in pods] == [("big-0", [GATE])]

    await eventually(pending, "the set pending, pod 0 gated")


async def test_preemption_stops_the_whole_set_and_it_comes_back_gated(stack: Stack) -> None:
    low, high = f"low-{stack.suffix}", f"high-{stack.suffix}"
    await stack.priority_class(low, 10)
    await stack.priority_class(high, 1000)
    await stack.create(STATEFULSETS, statefulset("db", 3, **{PRIORITY_LABEL: low}))
    workload = await the_workload(stack, "db")
    await running(stack, "db", 3)

    urgent = urgent_job(high, cpu="2")
    # It must outlast the test: once it ends the set is admitted again.
    urgent["spec"]["template"]["spec"]["containers"][0]["command"] = ["sh", "-c", "sleep 100000"]
    await stack.create(JOBS, urgent)

    async def preempted() -> None:
        current = await stack.client.get(WORKLOADS, workload["metadata"]["name"], stack.ns)
        # The same Workload: the set owns it, so it outlived the deleted pods.
        assert current["metadata"]["uid"] == workload["metadata"]["uid"]
        evicted = condition(current, "Evicted")
        assert evicted is not None
        assert evicted["reason"] == "Preempted"
        preempted = condition(current, "Preempted") or {}
        assert (preempted.get("status"), preempted.get("reason")) == ("True", "InClusterQueue")
        quota = condition(current, "QuotaReserved")
        assert quota is not None
        assert quota["status"] == "False"
        pods = await app_pods(stack, "db")
        assert [(p["metadata"]["name"], gates(p)) for p in pods] == [("db-0", [GATE])]

    await eventually(preempted, "the set stopped, pod 0 back and gated", 90)
    urgent = await stack.workload("Job", "urgent")
    admitted = condition(urgent, "Admitted")
    assert admitted is not None
    assert admitted["status"] == "True"


async def test_replicas_change_only_through_zero(stack: Stack) -> None:
    await stack.create(STATEFULSETS, statefulset("db", 2))
    first = await the_workload(stack, "db")
    await running(stack, "db", 2)
    with pytest.raises(ApiError) as refused:
        await scale(stack, "db", 3)
    assert "spec.replicas: Invalid value: 3: field is immutable" in str(refused.value)

    await scale(stack, "db", 0)

    async def released() -> None:
        assert await app_pods(stack, "db") == []
        names = [w["metadata"]["name"] for w in (await stack.client.list(
            WORKLOADS, namespace=stack.ns))["items"]]  # fmt: skip
        assert names == []
        # The scale up is refused while the set's status still counts replicas (upstream's
        # "scaling down is still in progress"), which the set's controller writes after the
        # pods are gone.
        status = (await stack.client.get(STATEFULSETS, "db", stack.ns)).get("status") or {}
        assert not status.get("replicas"), status

    await eventually(released, "the pods, the Workload and the set's replicas gone", 90)
    await stack.using({})
    await scale(stack, "db", 3)
    second = await the_workload(stack, "db")
    assert [(ps["name"], ps["count"]) for ps in second["spec"]["podSets"]] == [("main", 3)]
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    await running(stack, "db", 3)
    await stack.using({"cpu": 3, "memory": 300 * MIB})


async def test_deleting_the_set_releases_its_quota(stack: Stack) -> None:
    await stack.create(STATEFULSETS, statefulset("db", 2))
    await the_workload(stack, "db")
    await running(stack, "db", 2)
    await stack.client.delete(STATEFULSETS, "db", stack.ns)

    async def gone() -> None:
        assert await app_pods(stack, "db") == []
        assert (await stack.client.list(WORKLOADS, namespace=stack.ns))["items"] == []

    await eventually(gone, "the pods and the Workload gone", 90)
    await stack.using({})
