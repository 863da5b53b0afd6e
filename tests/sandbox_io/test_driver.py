"""run_simulated_cluster in-process against a real HTTP API server (embedded or real)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from kq.runtime.client import KubeClient
from kq.runtime.resources import EVENTS, JOBS, NAMESPACES, PODS, Resource
from kq.sandbox.cluster.clock import SandboxClock
from kq.sandbox.cluster.driver import (
    JOBSETS,
    NODES,
    POD_TEMPLATES,
    Settings,
    run_simulated_cluster,
    set_failure,
)
from kq.sandbox.cluster.nodes import PROVISIONING_REQUEST_ANNOTATION
from kq.sandbox.cluster.profiles import load_profile
from tests.harness import Cluster
from tests.sandbox.manifests import s1_jobset

SPEED = 60.0
POOL = "cloud.google.com/gke-nodepool"
ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(cluster.kubeconfig) as kube:
        yield kube


@asynccontextmanager
async def simulated(
    client: KubeClient, backend: str, profile: str = "s1", *, binding: bool | None = None
) -> AsyncIterator[str]:
    """A namespace of its own on a simulated cluster; a bare kube-apiserver needs our GC."""
    ns = f"driver-{uuid.uuid4().hex[:6]}"
    await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": ns}})  # fmt: skip
    ready = asyncio.Event()
    settings = Settings(collect_garbage=backend == "real", binding=binding)
    sandbox = asyncio.create_task(
        run_simulated_cluster(client, load_profile(profile), SandboxClock(SPEED), ready=ready,
                              settings=settings)
    )  # fmt: skip
    try:
        await asyncio.wait_for(ready.wait(), 20)
        yield ns
    finally:
        sandbox.cancel()
        with pytest.raises(asyncio.CancelledError):
            await sandbox


def _job(name: str) -> dict[str, object]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "suspend": False,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "main", "image": "busybox", "command": ["sh", "-c", "sleep 60"],
                         "resources": {"requests": {"cpu": "1"}}}
                    ],
                }
            },
        },
    }  # fmt: skip


async def test_batch_job_runs_to_completion(client: KubeClient, cluster: Cluster) -> None:
    await _run_batch_job(client, cluster.backend, binding=None)


async def test_binding_by_patch_where_there_is_no_binding_subresource(
    client: KubeClient, cluster: Cluster
) -> None:
    if cluster.backend == "real":
        pytest.skip("kube-apiserver only sets spec.nodeName through pods/binding")
    await _run_batch_job(client, cluster.backend, binding=False)


async def _run_batch_job(client: KubeClient, backend: str, *, binding: bool | None) -> None:
    """A Job of two pods: bound, Running, Succeeded, counted; the Job completes."""
    async with simulated(client, backend, binding=binding) as ns:
        await client.create(JOBS, {**_job("pi"), "metadata": {"name": "pi", "namespace": ns}})
        phases: dict[str, set[str]] = {}
        async with asyncio.timeout(30):
            while True:
                for pod in (await client.list(PODS, namespace=ns))["items"]:
                    name = pod["metadata"]["name"]
                    phases.setdefault(name, set()).add(pod["status"].get("phase", ""))
                job = await client.get(JOBS, "pi", ns)
                if _true(job, "Complete"):
                    break
                await asyncio.sleep(0.05)

    assert len(phases) == 2
    assert all({"Running", "Succeeded"} <= seen for seen in phases.values()), phases
    assert job["status"]["succeeded"] == 2
    pods = (await client.list(PODS, namespace=ns))["items"]
    nodes = {n["metadata"]["name"] for n in (await client.list(NODES))["items"]}
    assert all(p["spec"]["nodeName"] in nodes for p in pods)
    assert all(p["status"]["phase"] == "Succeeded" for p in pods)
    assert all(not p["metadata"].get("finalizers") for p in pods)  # counted and released
    events = (await client.list(EVENTS, namespace=ns))["items"]
    reasons = {(e["involvedObject"]["kind"], e["reason"]) for e in events}
    assert {("Job", "SuccessfulCreate"), ("Job", "Completed"), ("Pod", "Scheduled"),
            ("Pod", "Started")} <= reasons  # fmt: skip


async def _eventually(probe: Callable[[], Awaitable[bool]]) -> None:
    async with asyncio.timeout(30):
        while True:
            if await probe():
                return
            await asyncio.sleep(0.05)


async def _condition(
    client: KubeClient, resource: Resource, name: str, ns: str, type_: str
) -> bool:
    return _true(await client.get(resource, name, ns), type_)


async def _phase(client: KubeClient, name: str, ns: str, phase: str) -> bool:
    pod = await client.get(PODS, name, ns)
    return bool(pod["status"].get("phase") == phase)


def _true(obj: dict[str, Any], type_: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or ()
    return any(c["type"] == type_ and c["status"] == "True" for c in conditions)


async def _running_pools(client: KubeClient, ns: str, attempt: str) -> dict[str, str]:
    """Child Job → the one pool all its pods of ``attempt`` run on, once both slices run."""
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"][POOL]
             for n in (await client.list(NODES))["items"]}  # fmt: skip
    async with asyncio.timeout(30):
        while True:
            pools: dict[str, set[str]] = {}
            for pod in (await client.list(PODS, namespace=ns))["items"]:
                labels = pod["metadata"]["labels"]
                if labels.get(ATTEMPT) == attempt and pod["status"].get("phase") == "Running":
                    job = labels["batch.kubernetes.io/job-name"]
                    pools.setdefault(job, set()).add(nodes[pod["spec"]["nodeName"]])
            if len(pools) == 2 and all(len(p) == 1 for p in pools.values()):
                return {job: next(iter(p)) for job, p in pools.items()}
            await asyncio.sleep(0.05)


async def test_jobset_restarts_off_a_failed_pool(client: KubeClient, cluster: Cluster) -> None:
    jobset = s1_jobset("two-slices", 2)
    pod_template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod_template["metadata"] = {"annotations": {"kq.dev/run-seconds": "600"}}
    async with simulated(client, cluster.backend) as ns:
        await client.create(JOBSETS, {**jobset, "metadata": {**jobset["metadata"],
                                                             "namespace": ns}})  # fmt: skip
        pools = await _running_pools(client, ns, "0")
        assert len(set(pools.values())) == 2
        failed = pools["two-slices-slice-0"]
        assert len(await set_failure(client, pool=failed)) == 2
        try:
            restarted = await _running_pools(client, ns, "1")
        finally:
            await set_failure(client, pool=failed, failed=False)
        assert failed not in restarted.values()
        assert len(set(restarted.values())) == 2
        await _eventually(lambda: _condition(client, JOBSETS, "two-slices", ns, "Completed"))
        js = await client.get(JOBSETS, "two-slices", ns)
    assert js["status"]["restarts"] == 1
    events = (await client.list(EVENTS, namespace=ns))["items"]
    reasons = {e["reason"] for e in events}
    assert {"TaintManagerEviction", "BackoffLimitExceeded",
            "RestartJobSetFailurePolicyAction", "AllJobsCompleted"} <= reasons  # fmt: skip


async def test_queued_provisioning_books_nodes_for_the_request(
    client: KubeClient, cluster: Cluster
) -> None:
    requests = Resource("autoscaling.x-k8s.io", "v1", "provisioningrequests",
                        "ProvisioningRequest", namespaced=True)  # fmt: skip
    pod_spec = {
        "nodeSelector": {POOL: "dws-pool"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "restartPolicy": "Never",
        "containers": [{"name": "train", "image": "perl", "command": ["sleep", "30"],
                        "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
    }  # fmt: skip
    async with simulated(client, cluster.backend, "s3") as ns:
        await client.create(POD_TEMPLATES, {"apiVersion": "v1", "kind": "PodTemplate",
                                            "metadata": {"name": "gpu", "namespace": ns},
                                            "template": {"spec": pod_spec}})  # fmt: skip
        await client.create(requests, {
            "apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
            "metadata": {"name": "req", "namespace": ns},
            "spec": {"provisioningClassName": "queued-provisioning.gke.io",
                     "podSets": [{"count": 1, "podTemplateRef": {"name": "gpu"}}]},
        })  # fmt: skip
        await _eventually(lambda: _condition(client, requests, "req", ns, "Provisioned"))
        booked = [n for n in (await client.list(NODES))["items"]
                  if n["metadata"].get("annotations", {}).get(PROVISIONING_REQUEST_ANNOTATION)
                  == f"{ns}/req"]  # fmt: skip
        assert len(booked) == 1
        assert booked[0]["metadata"]["labels"][POOL] == "dws-pool"
        consumer = {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "train", "namespace": ns, "annotations": {
                        "autoscaling.x-k8s.io/consume-provisioning-request": "req"}},
                    "spec": pod_spec}  # fmt: skip
        await client.create(PODS, consumer)
        await _eventually(lambda: _phase(client, "train", ns, "Succeeded"))
        await _eventually(lambda: _condition(client, requests, "req", ns, "BookingExpired"))
    pod = await client.get(PODS, "train", ns)
    assert pod["spec"]["nodeName"] == booked[0]["metadata"]["name"]
