"""Preemption within a ClusterQueue, and S1's queueing with JobSet-shaped bare Workloads."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from kq.controllers.admission import AdmissionController
from kq.observability.metrics import REGISTRY
from kq.runtime.client import KubeClient
from tests.controllers.helpers import (
    WPC_SOURCE,
    admitted,
    apply,
    cluster_queue,
    condition,
    cq_status,
    eventually,
    finish,
    flavor,
    get_workload,
    is_true,
    kubectl_json,
    local_queue,
    namespace,
    priority_class,
    suffix,
    workload,
)
from tests.harness import Cluster


async def test_higher_priority_preempts_lower_in_cluster_queue(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, controller: AdmissionController
) -> None:
    s = suffix()
    ns, rf, cq = f"pre-{s}", f"rf-{s}", f"cq-{s}"
    low, high = f"low-{s}", f"high-{s}"
    preemption = {"withinClusterQueue": "LowerPriority"}
    apply(
        cluster,
        kubectl_cache,
        namespace(ns),
        flavor(rf),
        priority_class(low, 10),
        priority_class(high, 100),
        cluster_queue(cq, rf, "cpu", 4, preemption=preemption),
        local_queue(ns, "lq", cq),
    )
    apply(
        cluster,
        kubectl_cache,
        workload(
            ns,
            "victim",
            "lq",
            {"cpu": 4},
            priorityClassName=low,
            priorityClassSource=WPC_SOURCE,
            priority=10,
        ),
    )
    victim_uid = (await eventually(lambda: admitted(client, ns, "victim"), "victim admitted"))[
        "metadata"
    ]["uid"]
    apply(
        cluster,
        kubectl_cache,
        workload(
            ns,
            "preemptor",
            "lq",
            {"cpu": 4},
            priorityClassName=high,
            priorityClassSource=WPC_SOURCE,
            priority=100,
        ),
    )
    obj = await eventually(lambda: admitted(client, ns, "preemptor"), "preemptor admitted")
    assert obj["status"]["admission"]["podSetAssignments"][0]["flavors"] == {"cpu": rf}

    victim = await get_workload(client, ns, "victim")
    assert victim["metadata"]["uid"] == victim_uid
    evicted, preempted = condition(victim, "Evicted"), condition(victim, "Preempted")
    assert evicted is not None
    assert preempted is not None
    assert (evicted["status"], evicted["reason"]) == ("True", "Preempted")
    assert (preempted["status"], preempted["reason"]) == ("True", "InClusterQueue")
    assert "due to prioritization in the ClusterQueue" in preempted["message"]
    role = {"replica_role": "standalone"}
    labels = {"preempting_cluster_queue": cq, "reason": "InClusterQueue", **role}
    assert REGISTRY.get_sample_value("kueue_preempted_workloads_total", labels) == 1
    labels = {"cluster_queue": cq, "reason": "Preempted", "underlying_cause": "", **role}
    for name in ("kueue_evicted_workloads_total", "kueue_evicted_workloads_once_total"):
        pc = victim["spec"].get("priorityClassName", "")
        assert REGISTRY.get_sample_value(name, {**labels, "priority_class": pc}) == 1
    # Released as a job integration would: no reservation, requeued, and pending again.
    assert "admission" not in victim["status"]
    assert not is_true(victim, "QuotaReserved")
    requeued = condition(victim, "Requeued")
    assert requeued is not None
    assert (requeued["status"], requeued["reason"]) == (
        "True",
        "Preempted",
    )

    async def counts() -> dict[str, Any] | None:
        status = await cq_status(client, cq)
        wanted = {"pendingWorkloads": 1, "reservingWorkloads": 1, "admittedWorkloads": 1}
        return status if all(status.get(k) == v for k, v in wanted.items()) else None

    await eventually(counts, "victim pending, preemptor reserving")

    async def preempted_event() -> list[dict[str, Any]] | None:
        events = kubectl_json(cluster, kubectl_cache, "get", "events", "-n", ns)["items"]
        hits = [
            e
            for e in events
            if e["reason"] == "Preempted" and e["involvedObject"]["name"] == "victim"
        ]
        return hits or None

    (event,) = await eventually(preempted_event, "Preempted event")
    assert event["message"] == preempted["message"]


async def test_s1_multislice_queueing(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, controller: AdmissionController
) -> None:
    """24 chips: the 3-slice job (6 pods x 4 chips) first, then the 1- and 2-slice together."""
    s = suffix()
    ns, rf, cq = f"s1-{s}", f"vlp-24-{s}", f"cq-{s}"
    labels = {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x4",
    }
    apply(
        cluster,
        kubectl_cache,
        namespace(ns),
        flavor(rf, labels),
        cluster_queue(cq, rf, "google.com/tpu", 24, queueingStrategy="BestEffortFIFO"),
        local_queue(ns, "multislice-queue", cq),
    )

    def slices(name: str, pods: int) -> dict[str, Any]:
        return workload(
            ns,
            name,
            "multislice-queue",
            {"google.com/tpu": 4},
            pod_set="slice",
            count=pods,
            node_selector=labels,
        )

    apply(cluster, kubectl_cache, slices("multislice-3", 6))
    await eventually(lambda: admitted(client, ns, "multislice-3"), "3-slice admitted")
    apply(cluster, kubectl_cache, slices("multislice-1", 2), slices("multislice-2", 4))

    async def both_pending() -> bool:
        for name in ("multislice-1", "multislice-2"):
            reserved = condition(await get_workload(client, ns, name), "QuotaReserved")
            if reserved is None or reserved["status"] != "False":
                return False
        return True

    await eventually(both_pending, "1- and 2-slice pending")
    await finish(client, ns, "multislice-3")
    for name in ("multislice-1", "multislice-2"):
        obj = await eventually(partial(admitted, client, ns, name), f"{name} admitted")
        assert obj["status"]["admission"]["podSetAssignments"][0]["flavors"] == {
            "google.com/tpu": rf
        }

    async def full() -> dict[str, Any] | None:
        status = await cq_status(client, cq)
        return status if status.get("admittedWorkloads") == 2 else None

    status = await eventually(full, "two workloads admitted")
    assert status["flavorsUsage"][0]["resources"][0]["total"] == "24"
