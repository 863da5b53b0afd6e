"""RayJob (ray.io/v1) under kq on the simulated cluster, through the API only.

A RayJob naming a LocalQueue is suspended by kq's webhook and gets a Workload with Kueue's
PodSets: ``head`` (1), one per worker group (replicas), ``submitter`` (1, K8sJobMode). Admission
unsuspends it with the flavor's node labels in every template (the submitter's written into
``submitterPodTemplate``, as Kueue does), KubeRay (simulated) builds the cluster on that pool
and the job finishes; a higher-priority job preempts it, which suspends it, deletes its
cluster and restores its templates, and it runs again once the quota is free.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import pytest

from kq.api.quantity import parse_quantity
from kq.jobframework import GroupVersionKind
from kq.jobframework.naming import workload_name
from kq.runtime.errors import ApiError
from kq.runtime.resources import JOBS
from kq.sandbox.cluster.driver import RAYCLUSTERS, RAYJOBS
from tests.controllers.helpers import condition, is_true
from tests.integrations_io.conftest import (
    FLAVOR_LABELS,
    PODSET_LABEL,
    POOL,
    QUEUE,
    Stack,
    eventually,
    urgent_job,
)
from tests.sandbox.manifests import rayjob

GVK = GroupVersionKind("ray.io", "v1", "RayJob")
GROUP = "small-group"
CLUSTER_LABEL = "ray.io/cluster"
# head and two workers of 1 CPU / 1Gi each, and KubeRay's default submitter (500m / 200Mi).
USAGE = {"cpu": Fraction(7, 2), "memory": 3 * parse_quantity("1Gi") + parse_quantity("200Mi")}


def templates(job: dict[str, Any]) -> dict[str, dict[str, Any] | None]:
    """The pod templates by the PodSet they belong to."""
    cluster = job["spec"]["rayClusterSpec"]
    out: dict[str, dict[str, Any] | None] = {"head": cluster["headGroupSpec"]["template"]}
    for group in cluster["workerGroupSpecs"]:
        out[group["groupName"].lower()] = group["template"]
    out["submitter"] = job["spec"].get("submitterPodTemplate")
    return out


def selector(template: dict[str, Any] | None) -> dict[str, str]:
    return dict(((template or {}).get("spec") or {}).get("nodeSelector") or {})


def without_admission(template: dict[str, Any] | None) -> dict[str, Any]:
    """``template`` without what admission adds: the flavor's node labels, and the PodSet,
    LocalQueue and ClusterQueue labels (Kueue's reconciler: podset info, assignQueueLabels)."""
    out = copy.deepcopy(template or {})
    spec, meta = out.get("spec") or {}, out.get("metadata") or {}
    selector_ = {k: v for k, v in (spec.get("nodeSelector") or {}).items() if k != POOL}
    added = (PODSET_LABEL, "kueue.x-k8s.io/local-queue-name", "kueue.x-k8s.io/cluster-queue-name")
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in added}
    for part, key, value in ((spec, "nodeSelector", selector_), (meta, "labels", labels)):
        if value:
            part[key] = value
        else:
            part.pop(key, None)
    if not meta:
        out.pop("metadata", None)
    return out


async def created_suspended(stack: Stack, sleep: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Create the RayJob unsuspended; kq's webhook suspends it and kq makes its Workload."""
    body = rayjob("train", sleep=sleep)
    assert body["spec"]["suspend"] is False
    created = await stack.create(RAYJOBS, body)
    assert created["spec"]["suspend"] is True, "the mutating webhook did not suspend the RayJob"
    workload = await eventually(lambda: stack.workload("RayJob", "train"), "the Workload")
    assert workload["metadata"]["name"] == workload_name("train", created["metadata"]["uid"], GVK)
    assert workload["metadata"]["name"].startswith("rayjob-train-")
    assert workload["spec"]["queueName"] == QUEUE
    pod_sets = workload["spec"]["podSets"]
    assert [(p["name"], p["count"]) for p in pod_sets] == [
        ("head", 1),
        (GROUP, 2),
        ("submitter", 1),
    ]
    (submitter,) = pod_sets[2]["template"]["spec"]["containers"]
    assert submitter["name"] == "ray-job-submitter"
    assert submitter["image"] == "rayproject/ray:2.9.0"  # the head's
    assert submitter["resources"]["requests"] == {"cpu": "500m", "memory": "200Mi"}
    return created, workload


async def running(stack: Stack) -> dict[str, Any]:
    """The RayJob once admitted and running: flavor in every template, every pod on the pool."""

    async def probe() -> dict[str, Any]:
        job = await stack.client.get(RAYJOBS, "train", stack.ns)
        assert job["spec"]["suspend"] is False
        assert job["status"]["jobDeploymentStatus"] == "Running"
        assert job["status"]["jobStatus"] == "RUNNING"
        for name, template in templates(job).items():
            assert template is not None, f"no {name} template"
            assert FLAVOR_LABELS.items() <= selector(template).items(), name
            assert template["metadata"]["labels"][PODSET_LABEL] == name
        pods = await stack.pods()
        cluster = job["status"]["rayClusterName"]
        ray_pods = [p for p in pods if p["metadata"]["labels"].get(CLUSTER_LABEL) == cluster]
        roles = sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in ray_pods)
        assert roles == ["head", "worker", "worker"]
        submitters = [p for p in pods if p["metadata"]["labels"].get("job-name") == "train"]
        assert len(submitters) == 1
        await stack.assert_running_on_the_flavor([*ray_pods, *submitters])
        return job

    return await eventually(probe, "the RayJob running on the flavor's pool")


async def finished(stack: Stack, workload_name_: str) -> None:
    """The RayJob completes, its cluster goes, its Workload finishes and frees the quota."""

    async def complete() -> None:
        job = await stack.client.get(RAYJOBS, "train", stack.ns)
        assert job["status"]["jobDeploymentStatus"] == "Complete"
        assert job["status"]["jobStatus"] == "SUCCEEDED"

    await eventually(complete, "the RayJob complete")

    await stack.workload_succeeded(workload_name_)

    async def cluster_gone() -> None:  # shutdownAfterJobFinishes
        assert (await stack.client.list(RAYCLUSTERS, namespace=stack.ns))["items"] == []
        assert await stack.pods(CLUSTER_LABEL) == []

    await eventually(cluster_gone, "the RayCluster and its pods deleted")


async def test_rayjob_is_queued_admitted_run_and_finished(stack: Stack) -> None:
    await stack.local_queue()
    created, workload = await created_suspended(stack, sleep=240)

    # Without a ClusterQueue the Workload waits and the RayJob stays suspended, with no cluster.
    pending = await stack.workload("RayJob", "train")
    assert not is_true(pending, "QuotaReserved")
    job = await stack.client.get(RAYJOBS, "train", stack.ns)
    assert job["spec"]["suspend"] is True
    assert (await stack.client.list(RAYCLUSTERS, namespace=stack.ns))["items"] == []

    # 2. Admission: unsuspended with the flavor's labels; the cluster runs on the flavor's pool.
    await stack.cluster_queue_with_flavor(cpu="4", memory="8Gi")
    job = await running(stack)
    admitted = await stack.workload("RayJob", "train")
    assert is_true(admitted, "QuotaReserved")
    assert is_true(admitted, "Admitted")
    assignments = admitted["status"]["admission"]["podSetAssignments"]
    assert [(a["name"], a["count"], a["flavors"]) for a in assignments] == [
        (name, count, {"cpu": stack.flavor, "memory": stack.flavor})
        for name, count in (("head", 1), (GROUP, 2), ("submitter", 1))
    ]
    await stack.using(USAGE)
    # kq edited the templates only: the admission's selector and labels came in.
    now, before = templates(job), templates(created)
    for name in ("head", GROUP):
        assert without_admission(now[name]) == before[name], name
    assert {k: v for k, v in job["spec"].items() if k not in ("suspend", "rayClusterSpec",
            "submitterPodTemplate")} == {k: v for k, v in created["spec"].items()
                                         if k not in ("suspend", "rayClusterSpec")}  # fmt: skip
    await stack.announced("RayJob", "train", "Started")

    # 3. The job finishes: Finished, quota released, cluster shut down.
    await finished(stack, workload["metadata"]["name"])


async def test_a_preempted_rayjob_is_restored_requeued_and_finishes_later(stack: Stack) -> None:
    high = f"high-{stack.suffix}"
    await stack.priority_class(high, 1000)
    await stack.local_queue()
    await stack.cluster_queue_with_flavor(cpu="4", memory="8Gi")
    created, workload = await created_suspended(stack, sleep=300)
    original = templates(created)
    assert original["submitter"] is None
    first = (await running(stack))["status"]["rayClusterName"]
    await stack.using(USAGE)

    # A higher-priority Job needing 2 of the 4 CPUs preempts the RayJob (3.5 CPUs).
    await stack.create(JOBS, urgent_job(high))

    async def evicted() -> dict[str, Any]:
        job = await stack.client.get(RAYJOBS, "train", stack.ns)
        assert job["spec"]["suspend"] is True
        assert job["status"]["jobDeploymentStatus"] == "Suspended"
        now = templates(job)
        for name in ("head", GROUP):
            assert now[name] == original[name], name
        # Kueue keeps the submitter template it wrote, with the admission's edits undone.
        submitter = now["submitter"]
        assert submitter is not None
        assert POOL not in selector(submitter)
        assert PODSET_LABEL not in ((submitter.get("metadata") or {}).get("labels") or {})
        assert await stack.pods(CLUSTER_LABEL) == []
        assert await stack.pods("job-name=train") == []
        assert (await stack.client.list(RAYCLUSTERS, namespace=stack.ns))["items"] == []
        wl = await stack.workload("RayJob", "train")
        assert "admission" not in wl["status"]
        assert not is_true(wl, "QuotaReserved")
        evicted_ = condition(wl, "Evicted")
        assert evicted_ is not None, "no Evicted condition yet"
        assert (evicted_["status"], evicted_["reason"]) == ("True", "Preempted")
        requeued = condition(wl, "Requeued")
        assert requeued is not None, "no Requeued condition yet"
        assert (requeued["status"], requeued["reason"]) == ("True", "Preempted")
        return job

    await eventually(evicted, "the RayJob preempted, suspended, restored and requeued")
    await stack.announced("Workload", workload["metadata"]["name"], "Preempted")

    async def urgent_done() -> None:
        assert is_true(await stack.client.get(JOBS, "urgent", stack.ns), "Complete")

    await eventually(urgent_done, "the preempting Job complete")

    # Readmitted once the CPUs are free: a fresh cluster on the flavor's pool, then finished.
    second = (await running(stack))["status"]["rayClusterName"]
    assert second != first
    readmitted = await stack.workload("RayJob", "train")
    assert readmitted["metadata"]["uid"] == workload["metadata"]["uid"]
    await finished(stack, workload["metadata"]["name"])


async def test_the_webhook_refuses_a_rayjob_that_keeps_its_cluster(stack: Stack) -> None:
    body = rayjob("keeps")
    body["spec"]["shutdownAfterJobFinishes"] = False
    with pytest.raises(ApiError) as info:
        await stack.create(RAYJOBS, body)
    assert "a kueue managed job should delete the cluster after finishing" in str(info.value.body)
    # Without the queue label kq neither suspends nor validates it, as Kueue (a dry run).
    del body["metadata"]["labels"]
    body["metadata"]["namespace"] = stack.ns
    unmanaged = await stack.client.request(
        "POST", RAYJOBS.path(stack.ns), body=body, query=[("dryRun", "All")]
    )
    assert unmanaged["spec"]["suspend"] is False


async def test_gcs_fault_tolerance_raises_the_heads_requests_for_redis_cleanup(
    stack: Stack,
) -> None:
    """KubeRay's Redis cleanup Job (200m / 256Mi) runs in the head's quota, as Kueue counts."""
    body = rayjob("ft")
    body["metadata"]["annotations"] = {"ray.io/ft-enabled": "true"}
    head = body["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["resources"] = {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "1"}}
    created = await stack.create(RAYJOBS, body)
    assert created["spec"]["suspend"] is True
    workload = await eventually(lambda: stack.workload("RayJob", "ft"), "the Workload")
    resources = workload["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]
    assert resources == {"requests": {"cpu": "200m", "memory": "1Gi"}, "limits": {"cpu": "1"}}
