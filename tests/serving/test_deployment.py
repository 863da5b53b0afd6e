"""Deployments under kq (framework ``deployment``): each replica pod gated and queued as a
plain pod; scaling reflected in quota; preemption both ways; queue-name rules; deletion."""

from __future__ import annotations

import pytest

from kq.runtime.errors import ApiError
from kq.runtime.resources import JOBS, WORKLOADS
from kq.sandbox.cluster.serving import DEPLOYMENTS
from tests.integrations_io.conftest import QUEUE, QUEUE_LABEL, Stack, eventually, urgent_job
from tests.serving.conftest import (
    GATE,
    MANAGED,
    PARENT,
    PRIORITY_LABEL,
    app_pods,
    condition,
    deployment,
    gates,
    is_ready,
    pod_workloads,
    scale,
    settled,
)

GIB = 2**30
MIB = 2**20


async def test_replicas_are_gated_queued_one_workload_each_and_run(stack: Stack) -> None:
    created = await stack.create(DEPLOYMENTS, deployment("web", 2))
    template = created["spec"]["template"]["metadata"]
    assert template["annotations"][PARENT] == "deployment"
    assert template["labels"][MANAGED] == "true"
    assert template["labels"][QUEUE_LABEL] == QUEUE

    pods = await settled(stack, "web", running=2)
    await stack.assert_running_on_the_flavor(pods)
    for pod in pods:
        # A serving owner's pods get no finalizer (upstream): the ReplicaSet replaces them.
        assert "kueue.x-k8s.io/managed" not in (pod["metadata"].get("finalizers") or ())
        assert pod["metadata"]["labels"][QUEUE_LABEL] == QUEUE
    workloads = await pod_workloads(stack, "web")
    for pod_name, workload in workloads.items():
        assert workload["metadata"]["name"].startswith(f"pod-{pod_name}-")
        assert [(ps["name"], ps["count"]) for ps in workload["spec"]["podSets"]] == [("main", 1)]
        assert workload["spec"]["queueName"] == QUEUE
    await stack.using({"cpu": 2, "memory": 200 * MIB})


async def test_scaling_up_queues_new_pods_and_scaling_down_releases_quota(stack: Stack) -> None:
    await stack.create(DEPLOYMENTS, deployment("web", 2))
    await settled(stack, "web", running=2)
    await scale(stack, "web", 5)  # 4 CPUs of quota: the fifth replica waits, gated
    pods = await settled(stack, "web", running=4, gated=1)
    await stack.using({"cpu": 4, "memory": 400 * MIB})
    waiting = (await pod_workloads(stack, "web"))[
        next(p["metadata"]["name"] for p in pods if gates(p))
    ]

    async def pending() -> None:
        current = await stack.client.get(WORKLOADS, waiting["metadata"]["name"], stack.ns)
        quota = condition(current, "QuotaReserved")
        assert quota is not None
        assert quota["status"] == "False", quota
        assert quota["reason"] == "WaitingForQuota"
        assert "insufficient unused quota for cpu in flavor" in quota["message"], quota

    await eventually(pending, "the fifth replica's Workload pending for quota")

    await scale(stack, "web", 1)
    await settled(stack, "web", running=1)
    await stack.using({"cpu": 1, "memory": 100 * MIB})

    async def gone() -> None:
        workload_names = {w["metadata"]["name"] for w in (await stack.client.list(
            WORKLOADS, namespace=stack.ns))["items"]}  # fmt: skip
        assert waiting["metadata"]["name"] not in workload_names

    await eventually(gone, "the removed replicas' Workloads deleted")


async def priorities(stack: Stack) -> tuple[str, str]:
    """WorkloadPriorityClasses of this test's own (they are cluster-wide): low, high."""
    low, high = f"low-{stack.suffix}", f"high-{stack.suffix}"
    await stack.priority_class(low, 10)
    await stack.priority_class(high, 1000)
    return low, high


async def test_a_high_priority_deployment_preempts_a_low_priority_job(stack: Stack) -> None:
    low, high = await priorities(stack)
    job = urgent_job(low, cpu="4")
    job["metadata"]["name"] = "training"
    job["spec"]["template"]["spec"]["containers"][0]["command"] = ["sh", "-c", "sleep 100000"]
    await stack.create(JOBS, job)
    trained = await eventually(lambda: stack.workload("Job", "training"), "the Job's Workload")
    await stack.using({"cpu": 4, "memory": GIB})

    await stack.create(DEPLOYMENTS, deployment("web", 2, **{PRIORITY_LABEL: high}))
    pods = await settled(stack, "web", running=2)
    assert all(p["metadata"]["labels"][PRIORITY_LABEL] == high for p in pods)
    for workload in (await pod_workloads(stack, "web")).values():
        assert (workload["spec"]["priorityClassName"], workload["spec"]["priority"]) == (high, 1000)

    victim = await stack.client.get(WORKLOADS, trained["metadata"]["name"], stack.ns)
    evicted = condition(victim, "Evicted")
    assert evicted is not None
    assert evicted["reason"] == "Preempted", evicted
    preempted = condition(victim, "Preempted")
    assert preempted is not None
    assert preempted["reason"] == "InClusterQueue", preempted
    assert preempted["message"].startswith("Preempted to accommodate a workload (UID: ")
    await stack.using({"cpu": 2, "memory": 200 * MIB})


async def test_a_preempted_replica_is_replaced_by_a_gated_pod(stack: Stack) -> None:
    low, high = await priorities(stack)
    await stack.create(DEPLOYMENTS, deployment("web", 4, **{PRIORITY_LABEL: low}))
    before = {p["metadata"]["name"] for p in await settled(stack, "web", running=4)}

    urgent = urgent_job(high, cpu="1")
    # It must outlast the test: once it ends the replica is admitted again.
    urgent["spec"]["template"]["spec"]["containers"][0]["command"] = ["sh", "-c", "sleep 100000"]
    await stack.create(JOBS, urgent)

    async def replaced() -> None:
        pods = await app_pods(stack, "web")
        names = {p["metadata"]["name"] for p in pods}
        assert len(names - before) == 1, names
        new = next(p for p in pods if p["metadata"]["name"] not in before)
        assert gates(new) == [GATE]
        workload = (await pod_workloads(stack, "web"))[new["metadata"]["name"]]
        quota = condition(workload, "QuotaReserved")
        assert quota is not None
        assert (quota["status"], quota["reason"]) == (
            "False",
            "WaitingForQuota",
        )

    await eventually(replaced, "a preempted replica replaced by a gated, pending pod", 90)
    urgent = await stack.workload("Job", "urgent")
    assert condition(urgent, "Admitted")["status"] == "True"  # type: ignore[index]


async def test_the_queue_name_changes_only_while_no_replica_is_ready(stack: Stack) -> None:
    await stack.create(DEPLOYMENTS, deployment("idle", 0))
    moved = await stack.client.merge_patch(
        DEPLOYMENTS, "idle", {"metadata": {"labels": {QUEUE_LABEL: "other"}}}, namespace=stack.ns
    )
    # The webhook runs on update too: the pods to come name the new queue.
    assert moved["spec"]["template"]["metadata"]["labels"][QUEUE_LABEL] == "other"

    await stack.create(DEPLOYMENTS, deployment("web", 1))

    async def ready() -> None:
        pods = await app_pods(stack, "web")
        assert pods
        assert all(is_ready(p) for p in pods)
        got = await stack.client.get(DEPLOYMENTS, "web", stack.ns)
        assert (got.get("status") or {}).get("readyReplicas") == 1

    await eventually(ready, "the replica ready", 90)
    with pytest.raises(ApiError) as refused:
        await stack.client.merge_patch(
            DEPLOYMENTS, "web", {"metadata": {"labels": {QUEUE_LABEL: "other"}}},
            namespace=stack.ns,
        )  # fmt: skip
    assert refused.value.status in (400, 403, 422)
    assert (
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "other": field is immutable'
        in str(refused.value)
    )
    with pytest.raises(ApiError) as removed:
        await stack.client.merge_patch(
            DEPLOYMENTS, "idle", {"metadata": {"labels": {QUEUE_LABEL: None}}}, namespace=stack.ns
        )
    assert "field is immutable" in str(removed.value)


async def test_deleting_the_deployment_releases_its_quota(stack: Stack) -> None:
    await stack.create(DEPLOYMENTS, deployment("web", 3))
    await settled(stack, "web", running=3)
    await stack.using({"cpu": 3, "memory": 300 * MIB})
    await stack.client.delete(DEPLOYMENTS, "web", stack.ns)

    async def gone() -> None:
        assert await app_pods(stack, "web") == []
        assert await pod_workloads(stack, "web") == {}

    await eventually(gone, "the pods and their Workloads gone", 90)
    await stack.using({})
