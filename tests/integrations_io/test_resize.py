"""A running job whose size changes gets a new Workload and runs again at the new size.

A JobSet's ``replicas`` (or a batch Job's ``parallelism``) no longer matches its admitted
Workload: as Kueue's reconciler, kq suspends the job, restores its pod templates and deletes
the stale Workload, finalizer first, so that it is really gone and its quota free; then a
Workload of the new size is created (under the same name), admitted, and the job resumes
with it. Before, the stale Workload stayed Terminating and held its quota for ever, and the
new one could never be created.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from kq.api.quantity import parse_quantity
from kq.runtime.resources import JOBS, WORKLOADS, Resource
from kq.sandbox.cluster.driver import JOBSETS
from tests.controllers.helpers import is_true
from tests.integrations_io.conftest import QUEUE, QUEUE_LABEL, Stack, eventually

GI = parse_quantity("1Gi")
CONTAINER = {
    "name": "main",
    "image": "busybox",
    "command": ["sh", "-c", "sleep 36000"],  # ten minutes at the sandbox's pace: still running
    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
}
POD_SPEC = {"restartPolicy": "Never", "containers": [CONTAINER]}


def jobset(size: int) -> dict[str, Any]:
    """``size`` replicas of a one-pod Job."""
    job = {"parallelism": 1, "completions": 1, "backoffLimit": 0, "template": {"spec": POD_SPEC}}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "resized", "labels": {QUEUE_LABEL: QUEUE}},
        "spec": {"replicatedJobs": [{"name": "w", "replicas": size, "template": {"spec": job}}]},
    }


def batch_job(size: int) -> dict[str, Any]:
    """``size`` pods working off a queue (no completions; not one pod, which the embedded
    API server wrongly gives ``completions: 1``)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "resized", "labels": {QUEUE_LABEL: QUEUE}},
        "spec": {"parallelism": size, "template": {"spec": POD_SPEC}},
    }


def jobset_resized(job: dict[str, Any], size: int) -> dict[str, Any]:
    """The whole list, as ``kubectl edit`` sends it."""
    replicated = job["spec"]["replicatedJobs"]
    return {"spec": {"replicatedJobs": [{**replicated[0], "replicas": size}]}}


def batch_job_resized(_job: dict[str, Any], size: int) -> dict[str, Any]:
    return {"spec": {"parallelism": size}}


@dataclass(frozen=True)
class Kind:
    resource: Resource
    manifest: Callable[[int], dict[str, Any]]
    resized: Callable[[dict[str, Any], int], dict[str, Any]]
    pods: str
    """The label selector of the job's pods."""


KINDS = {
    "JobSet": Kind(JOBSETS, jobset, jobset_resized, "jobset.sigs.k8s.io/jobset-name=resized"),
    "Job": Kind(JOBS, batch_job, batch_job_resized, "batch.kubernetes.io/job-name=resized"),
}


async def admitted_at(stack: Stack, kind: str, size: int) -> dict[str, Any]:
    """The job's one Workload, once it is admitted for ``size`` pods."""
    workload = await stack.workload(kind, "resized")
    assert [p["count"] for p in workload["spec"]["podSets"]] == [size]
    assert is_true(workload, "Admitted")
    assert not workload["metadata"].get("deletionTimestamp")
    return workload


async def running(stack: Stack, kind: Kind, size: int) -> None:
    """``size`` live pods, every one running on the flavor's pool."""
    pods = [
        p
        for p in await stack.pods(kind.pods)
        if not p["metadata"].get("deletionTimestamp")
        and p["status"].get("phase") not in ("Succeeded", "Failed")
    ]
    assert len(pods) == size, [p["metadata"]["name"] for p in pods]
    await stack.assert_running_on_the_flavor(pods)


@pytest.mark.parametrize("kind_name", list(KINDS))
async def test_a_resized_job_runs_again_under_a_new_workload(stack: Stack, kind_name: str) -> None:
    kind = KINDS[kind_name]
    await stack.local_queue()
    await stack.cluster_queue_with_flavor(cpu="4", memory="8Gi")
    await stack.create(kind.resource, kind.manifest(2))
    first = await eventually(lambda: admitted_at(stack, kind_name, 2), "admitted for two pods")
    await eventually(lambda: running(stack, kind, 2), "two pods running")
    await stack.using({"cpu": 2, "memory": 2 * GI})

    job = await stack.client.get(kind.resource, "resized", stack.ns)
    await stack.client.merge_patch(
        kind.resource, "resized", kind.resized(job, 3), namespace=stack.ns
    )

    second = await eventually(lambda: admitted_at(stack, kind_name, 3), "admitted for three")
    assert second["metadata"]["uid"] != first["metadata"]["uid"], "the stale Workload is gone"
    # Same name: the new Workload could only be created once the old one was really deleted.
    assert second["metadata"]["name"] == first["metadata"]["name"]
    await stack.announced(kind_name, "resized", "DeletedWorkload")
    await eventually(lambda: running(stack, kind, 3), "three pods running")
    await stack.using({"cpu": 3, "memory": 3 * GI})
    listing = await stack.client.list(WORKLOADS, namespace=stack.ns)
    assert [w["metadata"]["uid"] for w in listing["items"]] == [second["metadata"]["uid"]]
