"""run_simulated_cluster in-process against a real HTTP API server (embedded or real)."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kq.runtime.client import KubeClient
from kq.runtime.resources import EVENTS, JOBS, NAMESPACES, PODS, Resource
from kq.sandbox.cluster.clock import SandboxClock, parse_rfc3339
from kq.sandbox.cluster.driver import (
    CONFIGMAPS,
    JOBSETS,
    MPIJOBS,
    NODES,
    POD_TEMPLATES,
    RAYCLUSTERS,
    RAYJOBS,
    Settings,
    run_simulated_cluster,
    set_failure,
)
from kq.sandbox.cluster.nodes import PROVISIONING_REQUEST_ANNOTATION
from kq.sandbox.cluster.profiles import load_profile
from tests.harness import Cluster, eventually
from tests.sandbox.manifests import mpijob, rayjob, s1_jobset
from tests.sandbox_io.serving import events_until

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


def _job(name: str) -> dict[str, Any]:
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

        async def complete() -> dict[str, Any] | None:
            """The Job once Complete; each poll notes every pod's phase, so Running is seen."""
            for pod in (await client.list(PODS, namespace=ns))["items"]:
                name = pod["metadata"]["name"]
                phases.setdefault(name, set()).add(pod["status"].get("phase", ""))
            job = await client.get(JOBS, "pi", ns)
            return job if _true(job, "Complete") else None

        job = await eventually(complete, "the Job Complete", within=30, interval=0.05)
        wanted = {("Job", "SuccessfulCreate"), ("Job", "Completed"), ("Pod", "Scheduled"),
                  ("Pod", "Started")}  # fmt: skip

        async def recorded() -> set[tuple[str, str]] | None:
            """Events are posted in the background, as kube's recorder does: the Job's Completed
            event may land just after its condition."""
            events = (await client.list(EVENTS, namespace=ns))["items"]
            reasons = {(e["involvedObject"]["kind"], e["reason"]) for e in events}
            return reasons if wanted <= reasons else None

        await eventually(recorded, "the Job's and its pods' events")

    assert len(phases) == 2
    assert all({"Running", "Succeeded"} <= seen for seen in phases.values()), phases
    assert job["status"]["succeeded"] == 2
    pods = (await client.list(PODS, namespace=ns))["items"]
    nodes = {n["metadata"]["name"] for n in (await client.list(NODES))["items"]}
    assert all(p["spec"]["nodeName"] in nodes for p in pods)
    assert all(p["status"]["phase"] == "Succeeded" for p in pods)
    assert all(not p["metadata"].get("finalizers") for p in pods)  # counted and released


async def _eventually(probe: Callable[[], Awaitable[bool]]) -> None:
    await eventually(probe, "the simulated cluster", within=30, interval=0.05)


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

    async def placed() -> dict[str, str] | None:
        pools: dict[str, set[str]] = {}
        for pod in (await client.list(PODS, namespace=ns))["items"]:
            labels = pod["metadata"]["labels"]
            if labels.get(ATTEMPT) == attempt and pod["status"].get("phase") == "Running":
                job = labels["batch.kubernetes.io/job-name"]
                pools.setdefault(job, set()).add(nodes[pod["spec"]["nodeName"]])
        if len(pools) == 2 and all(len(p) == 1 for p in pools.values()):
            return {job: next(iter(p)) for job, p in pools.items()}
        return None

    return await eventually(placed, f"attempt {attempt} running", within=30, interval=0.05)


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
    wanted = {"TaintManagerEviction", "BackoffLimitExceeded",
              "RestartJobSetFailurePolicyAction", "AllJobsCompleted"}  # fmt: skip
    await events_until(
        client, ns, lambda events: wanted <= {e["reason"] for e in events}, f"{wanted} Events"
    )


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
        booked: list[dict[str, Any]] = []

        async def booked_for_the_request() -> bool:
            booked[:] = [n for n in (await client.list(NODES))["items"]
                         if n["metadata"].get("annotations", {})
                         .get(PROVISIONING_REQUEST_ANNOTATION) == f"{ns}/req"]  # fmt: skip
            return bool(booked)

        await _eventually(booked_for_the_request)
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


SPOT = {"cloud.google.com/gke-spot": "true"}
SPOT_TOLERATION = {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


async def _deployment(client: KubeClient, name: str, ns: str, state: str) -> bool:
    rayjob = await client.get(RAYJOBS, name, ns)
    return bool((rayjob.get("status") or {}).get("jobDeploymentStatus") == state)


async def _pods(client: KubeClient, ns: str) -> list[dict[str, Any]]:
    return list((await client.list(PODS, namespace=ns))["items"])


async def test_rayjob_runs_to_completion_and_shuts_its_cluster_down(
    client: KubeClient, cluster: Cluster
) -> None:
    async with simulated(client, cluster.backend, "s4") as ns:
        body = rayjob("train")
        await client.create(RAYJOBS, {**body, "metadata": {**body["metadata"], "namespace": ns}})
        await _eventually(lambda: _deployment(client, "train", ns, "Running"))
        status = (await client.get(RAYJOBS, "train", ns))["status"]
        ray_cluster = await client.get(RAYCLUSTERS, status["rayClusterName"], ns)
        assert ray_cluster["status"]["state"] == "ready"
        types = sorted(p["metadata"]["labels"].get("ray.io/node-type", "submitter")
                       for p in await _pods(client, ns))  # fmt: skip
        assert types[:1] + types[-2:] == ["head", "worker", "worker"]
        await _eventually(lambda: _deployment(client, "train", ns, "Complete"))

        async def cluster_gone() -> bool:
            names = [c["metadata"]["name"] for c in
                     (await client.list(RAYCLUSTERS, namespace=ns))["items"]]  # fmt: skip
            ray_pods = [p for p in await _pods(client, ns)
                        if "ray.io/cluster" in p["metadata"]["labels"]]  # fmt: skip
            return not names and not ray_pods

        await _eventually(cluster_gone)
        status = (await client.get(RAYJOBS, "train", ns))["status"]
    assert status["jobStatus"] == "SUCCEEDED"
    assert status["startTime"] <= status["endTime"]
    submitter = await client.get(JOBS, "train", ns)
    assert _true(submitter, "Complete")


async def test_rayjob_suspend_and_resume_follow_the_edited_templates(
    client: KubeClient, cluster: Cluster
) -> None:
    async with simulated(client, cluster.backend, "s4") as ns:
        body = rayjob("train", suspend=True, sleep=600)
        await client.create(RAYJOBS, {**body, "metadata": {**body["metadata"], "namespace": ns}})
        await _eventually(lambda: _deployment(client, "train", ns, "Suspended"))
        spec = (await client.get(RAYJOBS, "train", ns))["spec"]
        cluster_spec = spec["rayClusterSpec"]
        for template in [cluster_spec["headGroupSpec"]["template"],
                         *(g["template"] for g in cluster_spec["workerGroupSpecs"])]:  # fmt: skip
            template["spec"].update(nodeSelector=SPOT, tolerations=[SPOT_TOLERATION])
        await client.merge_patch(RAYJOBS, "train", {"spec": {
            "suspend": False, "rayClusterSpec": cluster_spec}}, namespace=ns)  # fmt: skip
        await _eventually(lambda: _deployment(client, "train", ns, "Running"))
        pods = await _pods(client, ns)
        nodes = {n["metadata"]["name"]: n["metadata"]["labels"][POOL]
                 for n in (await client.list(NODES))["items"]}  # fmt: skip
        ray_pods = [p for p in pods if "ray.io/cluster" in p["metadata"]["labels"]]
        assert len(ray_pods) == 3
        assert {nodes[p["spec"]["nodeName"]] for p in ray_pods} == {"spot-pool"}

        await client.merge_patch(RAYJOBS, "train", {"spec": {"suspend": True}}, namespace=ns)
        await _eventually(lambda: _deployment(client, "train", ns, "Suspended"))
        assert (await client.list(RAYCLUSTERS, namespace=ns))["items"] == []

        async def no_pods() -> bool:
            return not await _pods(client, ns)

        await _eventually(no_pods)


async def test_mpijob_runs_to_completion(client: KubeClient, cluster: Cluster) -> None:
    async with simulated(client, cluster.backend, "s4") as ns:
        body = mpijob("pi", workers=2)
        await client.create(MPIJOBS, {**body, "metadata": {**body["metadata"], "namespace": ns}})
        await _eventually(lambda: _condition(client, MPIJOBS, "pi", ns, "Running"))
        config = await client.get(CONFIGMAPS, "pi-config", ns)
        assert config["data"]["hostfile"].count("slots=1") == 2
        await _eventually(lambda: _condition(client, MPIJOBS, "pi", ns, "Succeeded"))

        async def workers_gone() -> bool:
            return all(p["metadata"]["labels"].get("training.kubeflow.org/job-role") != "worker"
                       for p in await _pods(client, ns))  # fmt: skip

        await _eventually(workers_gone)
        job = await client.get(MPIJOBS, "pi", ns)
    assert job["status"]["replicaStatuses"]["Launcher"]["succeeded"] == 1
    assert job["status"]["completionTime"]
    wanted = {"MPIJobCreated", "MPIJobRunning", "MPIJobSucceeded"}
    await events_until(
        client, ns,
        lambda events: wanted <= {e["reason"] for e in events
                                  if e["involvedObject"]["kind"] == "MPIJob"},
        f"{wanted} Events",
    )  # fmt: skip


async def test_mpijob_suspend_and_resume_follow_the_edited_templates(
    client: KubeClient, cluster: Cluster
) -> None:
    async with simulated(client, cluster.backend, "s4") as ns:
        body = mpijob("pi", workers=2, suspend=True)
        await client.create(MPIJOBS, {**body, "metadata": {**body["metadata"], "namespace": ns}})
        await _eventually(lambda: _condition(client, MPIJOBS, "pi", ns, "Suspended"))
        assert await _pods(client, ns) == []
        specs = (await client.get(MPIJOBS, "pi", ns))["spec"]["mpiReplicaSpecs"]
        for role in ("Launcher", "Worker"):
            specs[role]["template"]["spec"].update(nodeSelector=SPOT, tolerations=[SPOT_TOLERATION])
            specs[role]["template"]["metadata"] = {"annotations": {"kq.dev/run-seconds": "600"}}
        await client.merge_patch(MPIJOBS, "pi", {"spec": {
            "mpiReplicaSpecs": specs, "runPolicy": {"suspend": False}}}, namespace=ns)  # fmt: skip
        await _eventually(lambda: _condition(client, MPIJOBS, "pi", ns, "Running"))
        nodes = {n["metadata"]["name"]: n["metadata"]["labels"][POOL]
                 for n in (await client.list(NODES))["items"]}  # fmt: skip
        pods = [p for p in await _pods(client, ns) if p["status"].get("phase") == "Running"]
        assert len(pods) == 3
        assert {nodes[p["spec"]["nodeName"]] for p in pods} == {"spot-pool"}

        patch = {"spec": {"runPolicy": {"suspend": True}}}
        await client.merge_patch(MPIJOBS, "pi", patch, namespace=ns)

        async def stopped() -> bool:
            job = await client.get(MPIJOBS, "pi", ns)
            return _true(job, "Suspended") and not await _pods(client, ns)

        await _eventually(stopped)
        assert (await client.list(JOBS, namespace=ns))["items"] == []


async def test_timestamps_never_run_ahead_of_wall_time(
    client: KubeClient, cluster: Cluster, kubectl_cache: Path
) -> None:
    """At speed 60 sandbox time runs a minute ahead per second; the API must not show it."""
    long_job = _job("long")
    long_job["spec"]["template"]["spec"]["containers"][0]["command"] = ["sh", "-c", "sleep 6000"]
    async with simulated(client, cluster.backend) as ns:
        await client.create(JOBS, {**long_job, "metadata": {"name": "long", "namespace": ns}})

        async def running() -> bool:
            job = await client.get(JOBS, "long", ns)
            return int((job.get("status") or {}).get("ready") or 0) == 2

        await _eventually(running)
        # Not a wait for an event: wall time itself must pass, for sandbox time (at SPEED) to
        # run minutes ahead of it; that lead is what the API must never show.
        await asyncio.sleep(2.5)
        job = await client.get(JOBS, "long", ns)
        pods = await _pods(client, ns)
        env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig),
               "KUBECACHEDIR": str(kubectl_cache)}  # fmt: skip
        kubectl = await asyncio.create_subprocess_exec(
            "kubectl", "get", "jobs", "-n", ns, "--no-headers", env=env,
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        async with asyncio.timeout(60):
            out, _ = await kubectl.communicate()
        now = datetime.now(UTC)
    assert kubectl.returncode == 0
    table = out.decode()
    stamps = [job["status"]["startTime"], *(c["lastTransitionTime"]
              for c in job["status"].get("conditions") or ())]  # fmt: skip
    for pod in pods:
        stamps.append(pod["status"]["startTime"])
        stamps += [c["lastTransitionTime"] for c in pod["status"]["conditions"]]
        stamps += [s["state"]["running"]["startedAt"] for s in pod["status"]["containerStatuses"]]
    assert stamps
    assert all(parse_rfc3339(s) <= now for s in stamps), (stamps, now)
    name, status, completions, duration, *_ = table.split()
    assert (name, status, completions) == ("long", "Running", "0/2")
    assert duration != "<invalid>"
    assert duration.endswith("s"), table
    assert 1 <= int(duration[:-1]) <= 30, table
