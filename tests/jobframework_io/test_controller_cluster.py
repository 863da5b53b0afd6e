"""The job controllers against an API server: Workload creation, start, eviction, finish.

No scheduler runs: the test plays it by writing the Workload's status as Kueue's scheduler
does, and plays the Job controller by writing the job's status.
"""

from __future__ import annotations

import asyncio
import copy
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from kq.app import install_controllers
from kq.config import KqConfig
from kq.jobframework import GenericJob, GroupVersionKind
from kq.jobframework.controller import (
    JobControllers,
    run_job_integrations,
)
from kq.jobframework.io_resources import discover
from kq.jobframework.naming import workload_name
from kq.plugins import build_plugin_manager
from kq.runtime.client import KubeClient
from kq.runtime.manager import Manager
from kq.runtime.resources import EVENTS, JOBS, NAMESPACES, WORKLOADS, Resource
from kq.runtime.webhook import WebhookServer
from kq.webhooks import JobWebhooks
from tests.harness import Cluster, not_found, until_passes
from tests.jobframework_io.patching import apply_patch, decoded_patch

T = TypeVar("T")
JOBSETS = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", namespaced=True)
TIMEOUT = 20.0
FLAVOR_LABELS = {"cloud.google.com/gke-nodepool": "pool-a", "example.com/zone": "z1"}
CONTAINER = {
    "name": "work",
    "image": "registry.k8s.io/pause:3.9",
    "resources": {"requests": {"cpu": "100m"}},
}


async def eventually(check: Callable[[], Awaitable[T]]) -> T:
    """``check``'s value once it stops failing (an assertion, or a 404 from the API server).

    After ``TIMEOUT`` seconds the last failure is raised.
    """
    return await until_passes(check, repr(check), within=TIMEOUT, retry=not_found)


def batch_job(ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "sample",
            "namespace": ns,
            "labels": {"kueue.x-k8s.io/queue-name": "lq"},
        },
        "spec": {
            "suspend": True,
            "parallelism": 2,
            "completions": 2,
            "template": {
                "metadata": {"labels": {"app": "sample"}},
                "spec": {
                    "nodeSelector": {"example.com/arch": "amd64"},
                    "containers": [CONTAINER],
                    "restartPolicy": "Never",
                },
            },
        },
    }


def jobset(ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": "sample",
            "namespace": ns,
            "labels": {"kueue.x-k8s.io/queue-name": "lq"},
        },
        "spec": {
            "suspend": True,
            "replicatedJobs": [
                {
                    "name": "workers",
                    "replicas": 2,
                    "template": {
                        "spec": {
                            "parallelism": 2,
                            "completions": 2,
                            "template": {
                                "spec": {"containers": [CONTAINER], "restartPolicy": "Never"}
                            },
                        }
                    },
                }
            ],
        },
    }


@dataclass
class Scenario:
    cluster: Cluster
    client: KubeClient
    cache: Path
    ns: str
    flavor: str
    cluster_queue: str

    def kubectl_apply(self, *docs: dict[str, Any]) -> None:
        result = self.cluster.kubectl(
            "apply", "-f", "-", input=yaml.safe_dump_all(docs), cache_dir=self.cache
        )
        assert result.returncode == 0, result.stderr

    async def events(self, kind: str, name: str) -> list[tuple[str, str]]:
        listing = await self.client.list(EVENTS, namespace=self.ns)
        return [
            (e["reason"], e["message"])
            for e in listing.get("items") or ()
            if (e["involvedObject"]["kind"], e["involvedObject"]["name"]) == (kind, name)
        ]

    async def workload(self, name: str) -> dict[str, Any]:
        return await self.client.get(WORKLOADS, name, self.ns)

    async def patch_workload_status(self, name: str, status: dict[str, Any]) -> None:
        await self.client.merge_patch(
            WORKLOADS, name, {"status": status}, namespace=self.ns, subresource="status"
        )

    async def admit(self, workload: dict[str, Any], resource: str) -> None:
        """What the scheduler writes: the admission and QuotaReserved, Admitted, not Evicted."""
        assignments = [
            {"name": ps["name"], "flavors": {resource: self.flavor}, "count": ps["count"]}
            for ps in workload["spec"]["podSets"]
        ]
        conditions = keep_other_conditions(workload, "QuotaReserved", "Admitted", "Evicted")
        conditions += [
            condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved"),
            condition("Admitted", "True", "Admitted", "The workload is admitted"),
        ]
        if find(workload, "Evicted") is not None:
            conditions.append(condition("Evicted", "False", "QuotaReserved", "Readmitted"))
        admission = {"clusterQueue": self.cluster_queue, "podSetAssignments": assignments}
        await self.patch_workload_status(
            workload["metadata"]["name"], {"admission": admission, "conditions": conditions}
        )


def condition(type_: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def keep_other_conditions(obj: dict[str, Any], *types: str) -> list[dict[str, Any]]:
    return [c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] not in types]


def find(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next(
        (c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == type_), None
    )


@asynccontextmanager
async def scenario(
    cluster: Cluster,
    cache: Path,
    is_leader: Callable[[], bool] = lambda: True,
    config: KqConfig | None = None,
) -> AsyncIterator[Scenario]:
    """A namespace and a ResourceFlavor of its own, and the job controllers running."""
    suffix = uuid.uuid4().hex[:8]
    async with await KubeClient.connect(cluster.kubeconfig) as client:
        s = Scenario(cluster, client, cache, f"jf-{suffix}", f"flavor-{suffix}", f"cq-{suffix}")
        s.kubectl_apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": s.ns}},
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "ResourceFlavor",
                "metadata": {"name": s.flavor},
                "spec": {"nodeLabels": FLAVOR_LABELS},
            },
        )
        config = config or KqConfig(frameworks=("batch/job", "jobset.x-k8s.io/jobset"))
        task = asyncio.create_task(
            run_job_integrations(client, build_plugin_manager(), config=config, is_leader=is_leader)
        )
        try:
            yield s
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task


@pytest.mark.parametrize(
    ("framework", "resource", "manifest", "compute"),
    [
        ("batch/job", JOBS, batch_job, "cpu"),
        ("jobset.x-k8s.io/jobset", JOBSETS, jobset, "cpu"),
    ],
)
async def test_job_lifecycle_through_the_api(
    cluster: Cluster,
    kubectl_cache: Path,
    integrations: dict[str, GenericJob],
    framework: str,
    resource: Resource,
    manifest: Callable[[str], dict[str, Any]],
    compute: str,
) -> None:
    integration = integrations[framework]
    kind = integration.GVK.kind
    async with scenario(cluster, kubectl_cache) as s:
        s.kubectl_apply(manifest(s.ns))
        job = await s.client.get(resource, "sample", s.ns)
        original = copy.deepcopy(job["spec"])
        wl_name = workload_name("sample", job["metadata"]["uid"], integration.GVK)

        # 1. A Workload owned by the job, with the job's PodSets, and the event saying so.
        async def created() -> dict[str, Any]:
            workloads = await s.client.list(WORKLOADS, namespace=s.ns)
            names = [wl["metadata"]["name"] for wl in workloads.get("items") or ()]
            assert names == [wl_name]
            return await s.workload(wl_name)

        workload = await eventually(created)
        assert workload["metadata"]["ownerReferences"] == [
            {
                "apiVersion": integration.GVK.api_version,
                "kind": kind,
                "name": "sample",
                "uid": job["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert workload["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
        assert workload["spec"]["queueName"] == "lq"
        expected_sets = [ps.to_dict() for ps in integration.pod_sets(job)]
        assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [
            (p["name"], p["count"]) for p in expected_sets
        ]
        assert [(p["name"], p["count"]) for p in expected_sets] == (
            [("main", 2)] if kind == "Job" else [("workers", 4)]
        )

        async def event(reason: str, message: str) -> None:
            assert (reason, message) in await s.events(kind, "sample")

        await eventually(lambda: event("CreatedWorkload", f"Created Workload: {s.ns}/{wl_name}"))

        # 2. Admission starts the job with the flavor's node labels in its template.
        await s.admit(workload, compute)

        async def started() -> dict[str, Any]:
            current = await s.client.get(resource, "sample", s.ns)
            assert integration.is_suspended(current) is False
            return current

        running = await eventually(started)
        for template in templates(running):
            selector = template["spec"]["nodeSelector"]
            assert {k: selector[k] for k in FLAVOR_LABELS} == FLAVOR_LABELS
            assert template["metadata"]["labels"]["kueue.x-k8s.io/podset"] in ("main", "workers")
        if kind == "Job":
            assert running["spec"]["template"]["spec"]["nodeSelector"] == {
                "example.com/arch": "amd64",
                **FLAVOR_LABELS,
            }
        await eventually(lambda: event("Started", f"Admitted by clusterQueue {s.cluster_queue}"))
        if kind == "Job":
            # The Job controller records when the Job started; a stop must clear it, because
            # Kubernetes lets the template change only while a suspended Job has no startTime.
            start = {"status": {"startTime": "2026-01-01T00:00:00Z"}}
            await s.client.merge_patch(
                resource, "sample", start, namespace=s.ns, subresource="status"
            )

        # 3. Eviction (preemption) suspends the job, restores its templates, releases quota.
        workload = await s.workload(wl_name)
        evicted = condition("Evicted", "True", "Preempted", "Preempted to accommodate another")
        await s.patch_workload_status(
            wl_name, {"conditions": [*keep_other_conditions(workload, "Evicted"), evicted]}
        )

        async def stopped() -> None:
            current = await s.client.get(resource, "sample", s.ns)
            assert integration.is_suspended(current)
            assert current["spec"] == original
            assert "startTime" not in (current.get("status") or {})
            assert "kueue.x-k8s.io/stopping" not in (current["metadata"].get("annotations") or {})

        await eventually(stopped)

        async def released() -> dict[str, Any]:
            current = await s.workload(wl_name)
            assert "admission" not in current["status"]
            assert (find(current, "QuotaReserved") or {}).get("status") == "False"
            requeued = find(current, "Requeued") or {}
            assert (requeued.get("status"), requeued.get("reason")) == ("True", "Preempted")
            return current

        workload = await eventually(released)
        await eventually(lambda: event("Stopped", "Preempted to accommodate another"))

        # 4. Readmission starts it again.
        await s.admit(workload, compute)
        running = await eventually(started)
        assert all(
            FLAVOR_LABELS.items() <= t["spec"]["nodeSelector"].items() for t in templates(running)
        )

        # 5. A finished job finishes its Workload, which then loses its finalizer.
        await finish(s, resource, kind, running)

        async def finished() -> None:
            current = await s.workload(wl_name)
            done = find(current, "Finished") or {}
            assert (done.get("status"), done.get("reason")) == ("True", "Succeeded")
            assert "kueue.x-k8s.io/resource-in-use" not in (
                current["metadata"].get("finalizers") or ()
            )

        await eventually(finished)
        # Once, though the finish and the finalizer removal are two reconciles (and more run
        # while the job's and the Workload's new versions reach the caches).
        announced = [r for r, _ in await s.events(kind, "sample") if r == "FinishedWorkload"]
        assert announced == ["FinishedWorkload"]
        assert (
            "FinishedWorkload",
            f"Workload '{s.ns}/{wl_name}' is declared finished",
        ) in await s.events(kind, "sample")


def templates(job: dict[str, Any]) -> list[dict[str, Any]]:
    if job["kind"] == "Job":
        return [job["spec"]["template"]]
    return [r["template"]["spec"]["template"] for r in job["spec"]["replicatedJobs"]]


async def finish(s: Scenario, resource: Resource, kind: str, job: dict[str, Any]) -> None:
    """What the Job (or JobSet) controller writes when every pod succeeded."""
    now = "2026-01-01T00:00:10Z"
    if kind == "Job":
        status = {
            "startTime": "2026-01-01T00:00:00Z",
            "completionTime": now,
            "succeeded": 2,
            "conditions": [
                condition("SuccessCriteriaMet", "True", "CompletionsReached", "Reached"),
                condition("Complete", "True", "CompletionsReached", "Reached expected number"),
            ],
        }
    else:
        status = {"conditions": [condition("Completed", "True", "AllJobsCompleted", "done")]}
    body = {"status": status, "metadata": {"resourceVersion": job["metadata"]["resourceVersion"]}}
    await s.client.merge_patch(resource, "sample", body, namespace=s.ns, subresource="status")


async def test_deleting_a_job_releases_its_workload(
    cluster: Cluster, kubectl_cache: Path, integrations: dict[str, GenericJob]
) -> None:
    async with scenario(cluster, kubectl_cache) as s:
        s.kubectl_apply(jobset(s.ns))
        job = await s.client.get(JOBSETS, "sample", s.ns)
        gvk = integrations["jobset.x-k8s.io/jobset"].GVK
        wl_name = workload_name("sample", job["metadata"]["uid"], gvk)

        async def has_finalizer() -> None:
            current = await s.workload(wl_name)
            assert current["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]

        await eventually(has_finalizer)
        await s.client.delete(JOBSETS, "sample", s.ns)

        async def released() -> None:
            # Where a garbage collector runs (embedded), the Workload is then deleted.
            workloads = await s.client.list(WORKLOADS, namespace=s.ns)
            assert all(not wl["metadata"].get("finalizers") for wl in workloads["items"])

        await eventually(released)


async def test_a_new_leader_reconciles_what_it_saw_while_following(
    cluster: Cluster, kubectl_cache: Path, integrations: dict[str, GenericJob]
) -> None:
    leader = asyncio.Event()
    async with scenario(cluster, kubectl_cache, leader.is_set) as s:
        s.kubectl_apply(batch_job(s.ns))
        job = await s.client.get(JOBS, "sample", s.ns)
        wl_name = workload_name("sample", job["metadata"]["uid"], integrations["batch/job"].GVK)
        leader.set()
        await eventually(lambda: s.workload(wl_name))


async def test_only_served_kinds_are_discovered(cluster: Cluster) -> None:
    async with await KubeClient.connect(cluster.kubeconfig) as client:
        assert await discover(client, GroupVersionKind("example.com", "v1", "Nope")) is None
        assert await discover(client, GroupVersionKind("batch", "v1", "Nope")) is None
        assert await discover(client, GroupVersionKind("batch", "v1", "Job")) == JOBS
        served = await discover(client, GroupVersionKind("jobset.x-k8s.io", "v1alpha2", "JobSet"))
        assert served == JOBSETS
        assert json.dumps(served.path("ns", "x")).endswith('/namespaces/ns/jobsets/x"')


async def test_webhooks_answer_from_the_controllers_caches(
    cluster: Cluster, kubectl_cache: Path
) -> None:
    """A namespace with a LocalQueue ``default`` puts jobs naming no queue into it."""
    suffix = uuid.uuid4().hex[:8]
    ns = f"jf-wh-{suffix}"
    result = cluster.kubectl(
        "apply",
        "-f",
        "-",
        input=yaml.safe_dump_all(
            [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta1",
                    "kind": "LocalQueue",
                    "metadata": {"name": "default", "namespace": ns},
                    "spec": {"clusterQueue": "cq"},
                },
            ]
        ),
        cache_dir=kubectl_cache,
    )
    assert result.returncode == 0, result.stderr
    async with await KubeClient.connect(cluster.kubeconfig) as client:
        controllers = await JobControllers.create(
            client, build_plugin_manager(), config=KqConfig(), is_leader=lambda: False
        )
        assert controllers.frameworks == ["batch/job"]
        task = asyncio.create_task(controllers.run())
        try:
            async with asyncio.timeout(TIMEOUT):
                await controllers.synced()
            job = batch_job(ns)
            del job["metadata"]["labels"]
            job["spec"]["suspend"] = False
            review = {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "request": {
                    "uid": "u-1",
                    "kind": {"group": "batch", "version": "v1", "kind": "Job"},
                    "operation": "CREATE",
                    "namespace": ns,
                    "object": job,
                },
            }
            hooks = JobWebhooks(controllers.integrations, controllers.facts.webhook_facts)
            response = hooks.mutate(review)["response"]
            patched = apply_patch(job, decoded_patch(response))
            assert patched["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "default"}
            assert patched["spec"]["suspend"] is True
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task


async def test_registered_on_kq_runs_manager(
    cluster: Cluster, kubectl_cache: Path, tmp_path: Path, integrations: dict[str, GenericJob]
) -> None:
    """Shared informers, a leader-only runnable and the webhook paths, as ``kq run`` runs them
    (``kq.app`` puts the job controllers and the webhooks on the manager)."""
    async with await KubeClient.connect(cluster.kubeconfig) as client:
        manager = Manager(client, WebhookServer(0, tmp_path))
        await install_controllers(manager, KqConfig())
        assert sorted(manager.webhook.paths) == [
            "/convert", "/mutate/jobs", "/validate/jobs", "/validate/kueue",
        ]  # fmt: skip
        [runnable] = [r for r in manager.runnables if r.name == "job-controllers"]
        assert runnable.leader_only
        assert JOBS in {informer.resource for informer in manager.informers}
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(i.run()) for i in manager.informers]
            tasks.append(group.create_task(runnable.start()))
            try:
                ns = f"jf-mgr-{uuid.uuid4().hex[:8]}"
                await client.create(NAMESPACES, {"metadata": {"name": ns}})
                job = await client.create(JOBS, batch_job(ns))
                gvk = integrations["batch/job"].GVK
                wl_name = workload_name("sample", job["metadata"]["uid"], gvk)
                await eventually(lambda: client.get(WORKLOADS, wl_name, ns))
            finally:
                for task in tasks:
                    task.cancel()
