"""kq on a simulated cluster, through the API: what ``kq dev`` runs, scoped to one test.

Each test gets a namespace of its own, the simulated cluster (profile s4, on accelerated time)
playing scheduler, kubelet and the Job, RayJob, RayCluster and MPIJob controllers, and kq's
admission controller, job integrations and webhooks running in the test's loop. The webhooks
are registered by URL as ``kq dev`` registers them, but under names of the test's own and with
a namespaceSelector for its namespace, and kq manages jobs in that namespace only: nothing
reaches other tests' objects, and nothing outlives the test.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kq.api.quantity import parse_quantity
from kq.app import install_controllers
from kq.config import KqConfig, PodOptions
from kq.runtime.certs import generate, service_dns_names
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.manager import Manager
from kq.runtime.resources import (
    CLUSTER_QUEUES,
    EVENTS,
    JOBS,
    KUEUE_KINDS,
    LOCAL_QUEUES,
    NAMESPACES,
    PODS,
    RESOURCE_FLAVORS,
    WORKLOAD_PRIORITY_CLASSES,
    WORKLOADS,
    Resource,
)
from kq.runtime.webhook import WebhookServer
from kq.sandbox.cluster.clock import SandboxClock
from kq.sandbox.cluster.driver import NODES, Settings, run_simulated_cluster
from kq.sandbox.cluster.profiles import load_profile
from kq.sandbox.dev import SANDBOX_FRAMEWORKS
from kq.sandbox.webhooks import free_loopback_port, webhook_configurations
from tests.controllers.helpers import flavor, local_queue, namespace, priority_class
from tests.harness import Cluster, not_found, until_passes

T = TypeVar("T")
SPEED = 60.0
"""Sandbox seconds per wall second: a ``sleep 60`` lasts one second."""
TIMEOUT_S = 60.0
POOL = "cloud.google.com/gke-nodepool"
FLAVOR_LABELS = {POOL: "on-demand-pool"}
"""The flavor's nodeLabels: one of profile s4's pools (three 16-CPU nodes)."""
OTHER_POOLS = ("spot-pool", "a100-pool", "h100-pool")
QUEUE = "user-queue"
"""The LocalQueue the sandbox manifests name (``tests/sandbox/manifests.py``)."""
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
PODSET_LABEL = "kueue.x-k8s.io/podset"
NAME_LABEL = "kubernetes.io/metadata.name"
STARTUP_S = 30.0
SERVING_FRAMEWORKS = ("deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset")


async def eventually(probe: Callable[[], Awaitable[T]], what: str, within: float = TIMEOUT_S) -> T:
    """``probe``'s value once it stops failing (an assertion, or a 404 from the API server);
    after ``within`` seconds its last failure is raised."""
    return await until_passes(probe, what, within=within, retry=not_found)


@dataclass
class Stack:
    """One test's namespace on the simulated cluster with kq running, and its queue objects."""

    client: KubeClient
    backend: str
    ns: str
    suffix: str

    @property
    def flavor(self) -> str:
        return f"rf-{self.suffix}"

    @property
    def cluster_queue(self) -> str:
        return f"cq-{self.suffix}"

    async def create(self, resource: Resource, body: dict[str, Any]) -> dict[str, Any]:
        if resource.namespaced:
            body = {**body, "metadata": {**body["metadata"], "namespace": self.ns}}
        return await self.client.create(resource, body)

    async def local_queue(self) -> None:
        """The LocalQueue, before its ClusterQueue exists: workloads wait in it."""
        await self.create(LOCAL_QUEUES, local_queue(self.ns, QUEUE, self.cluster_queue))

    async def cluster_queue_with_flavor(self, cpu: str, memory: str) -> None:
        """The flavor (pinned to one pool) and a ClusterQueue for this namespace only, whose
        lower-priority workloads are preempted within it."""
        await self.create(RESOURCE_FLAVORS, flavor(self.flavor, FLAVOR_LABELS))
        quota = [{"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": memory}]
        await self.create(CLUSTER_QUEUES, {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": self.cluster_queue},
            "spec": {
                "namespaceSelector": {"matchLabels": {NAME_LABEL: self.ns}},
                "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [{"coveredResources": ["cpu", "memory"],
                                    "flavors": [{"name": self.flavor, "resources": quota}]}],
            },
        })  # fmt: skip

    async def priority_class(self, name: str, value: int) -> None:
        await self.create(WORKLOAD_PRIORITY_CLASSES, priority_class(name, value))

    async def workload(self, kind: str, name: str) -> dict[str, Any]:
        """The one Workload owned by job ``kind``/``name``; fails (to be retried) until then."""
        listing = await self.client.list(WORKLOADS, namespace=self.ns)
        owned: list[dict[str, Any]] = [
            wl
            for wl in listing.get("items") or ()
            if any(
                (r.get("kind"), r.get("name")) == (kind, name)
                for r in wl["metadata"].get("ownerReferences") or ()
            )
        ]
        assert len(owned) == 1, f"Workloads of {kind} {name}: {len(owned)}"
        return owned[0]

    async def usage(self, field: str = "flavorsReservation") -> dict[str, Any]:
        """The ClusterQueue's reserved (or, with ``flavorsUsage``, admitted) quota by resource,
        as numbers; resources not in use are left out."""
        cq = await self.client.get(CLUSTER_QUEUES, self.cluster_queue)
        totals: dict[str, Any] = {}
        for used in (cq.get("status") or {}).get(field) or ():
            for resource in used.get("resources") or ():
                name = str(resource["name"])
                totals[name] = totals.get(name, 0) + parse_quantity(resource.get("total", "0"))
        return {name: total for name, total in totals.items() if total}

    async def using(self, expected: Mapping[str, Any]) -> None:
        """Until the ClusterQueue reports ``expected`` as both reserved and admitted usage."""

        async def probe() -> None:
            assert await self.usage() == expected
            assert await self.usage("flavorsUsage") == expected

        await eventually(probe, f"ClusterQueue usage {dict(expected)}")

    async def workload_succeeded(self, name: str) -> None:
        """Until the Workload is Finished (Succeeded), out of use, and its quota is free."""

        async def probe() -> None:
            workload = await self.client.get(WORKLOADS, name, self.ns)
            done = [c for c in workload["status"]["conditions"] if c["type"] == "Finished"]
            assert [(c["status"], c["reason"]) for c in done] == [("True", "Succeeded")]
            assert "kueue.x-k8s.io/resource-in-use" not in (
                workload["metadata"].get("finalizers") or ()
            )

        await eventually(probe, "the Workload finished")
        await self.using({})

    async def assert_running_on_the_flavor(self, pods: list[dict[str, Any]]) -> None:
        """Every pod Running, on a node of the flavor's pool, selecting the flavor's labels."""
        pools = await self.pools()
        for pod in pods:
            assert pod["status"].get("phase") == "Running", pod["metadata"]["name"]
            assert pools[pod["spec"]["nodeName"]] == FLAVOR_LABELS[POOL]
            assert FLAVOR_LABELS.items() <= pod["spec"]["nodeSelector"].items()

    async def pods(self, selector: str = "") -> list[dict[str, Any]]:
        query = [("labelSelector", selector)] if selector else []
        listing = await self.client.list(PODS, namespace=self.ns, query=query)
        return list(listing.get("items") or ())

    async def pools(self) -> dict[str, str]:
        """Node name → node pool."""
        nodes = (await self.client.list(NODES)).get("items") or ()
        return {n["metadata"]["name"]: n["metadata"]["labels"].get(POOL, "") for n in nodes}

    async def announced(self, kind: str, name: str, reason: str) -> None:
        """Until an Event with ``reason`` about ``kind``/``name`` exists in the namespace."""

        async def probe() -> None:
            listing = await self.client.list(EVENTS, namespace=self.ns)
            reasons = [
                e.get("reason")
                for e in listing.get("items") or ()
                if (e["involvedObject"].get("kind"), e["involvedObject"].get("name"))
                == (kind, name)
            ]
            assert reason in reasons, reasons

        await eventually(probe, f"a {reason} Event about {kind} {name}")


def urgent_job(priority_class: str, cpu: str = "2") -> dict[str, Any]:
    """A batch Job ``urgent`` of the queue at ``priority_class``: one pod for 300 s (5 s)."""
    container = {"name": "main", "image": "busybox", "command": ["sh", "-c", "sleep 300"],
                 "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}  # fmt: skip
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "urgent",
            "labels": {QUEUE_LABEL: QUEUE, PRIORITY_LABEL: priority_class},
        },
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }


async def _serve(manager: Manager) -> None:
    """What ``kq run`` runs, minus signals and the election: this replica always leads."""
    async with asyncio.TaskGroup() as group:
        for informer in manager.informers:
            group.create_task(informer.run(), name=f"informer/{informer.resource.kind}")
        for runnable in manager.runnables:
            group.create_task(runnable.start(), name=runnable.name)
        group.create_task(manager.webhook.run(), name="webhook-server")


async def _started(
    task: asyncio.Task[Any], ready: Callable[[], Coroutine[Any, Any, object]]
) -> None:
    """Wait for ``ready``; fail at once with the task's error if the task ends first."""
    waiting: asyncio.Task[object] = asyncio.create_task(ready())
    try:
        async with asyncio.timeout(STARTUP_S):
            await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not waiting.done():
            waiting.cancel()
    if task.done():
        task.result()
        raise AssertionError(f"{task.get_name()} ended before it was ready")
    await waiting


async def _webhooks_called(client: KubeClient, ns: str) -> None:
    """Until the API server calls the registered webhooks: a real kube-apiserver picks
    configurations up from a watch. Probed with a dry-run create that the webhook suspends."""
    probe = urgent_job("none")
    probe["metadata"]["namespace"] = ns
    probe["spec"]["suspend"] = False

    async def suspended() -> None:
        created = await client.request("POST", JOBS.path(ns), body=probe, query=[("dryRun", "All")])
        assert created["spec"]["suspend"] is True

    await eventually(suspended, "the webhooks to be called", STARTUP_S)


def _webhooks(
    port: int, ns: str, suffix: str, ca: bytes, pods: bool, serving: bool = False
) -> list[tuple[Resource, dict[str, Any]]]:
    """``kq dev``'s job (pod, serving) webhooks, renamed for this test and limited to its
    namespace."""
    bundle = base64.b64encode(ca).decode()
    out = []
    for resource, body in webhook_configurations(port, pods=pods, serving=serving):
        hooks = [
            h
            for h in body["webhooks"]
            if h["name"].endswith(("jobs.kueue.x-k8s.io", "pod.kueue.x-k8s.io"))
        ]
        for hook in hooks:
            hook["clientConfig"]["caBundle"] = bundle
            hook["namespaceSelector"] = {"matchLabels": {NAME_LABEL: ns}}
        name = f"{body['metadata']['name']}-{suffix}"
        out.append((resource, {**body, "metadata": {"name": name}, "webhooks": hooks}))
    return out


@asynccontextmanager
async def kq_stack(
    cluster: Cluster,
    work: Path,
    *,
    manage_jobs_without_queue_name: bool = False,
    frameworks: tuple[str, ...] = SANDBOX_FRAMEWORKS,
    pod_options: PodOptions | None = None,
) -> AsyncIterator[Stack]:
    """``frameworks`` with ``pod`` also routes the namespace's pods through kq's webhooks."""
    suffix = uuid.uuid4().hex[:6]
    ns = f"int-{suffix}"
    async with await KubeClient.connect(cluster.kubeconfig) as client:
        await client.create(NAMESPACES, namespace(ns))
        tasks: list[asyncio.Task[Any]] = []
        registered: list[tuple[Resource, dict[str, Any]]] = []
        try:
            ready = asyncio.Event()
            # A bare kube-apiserver has no garbage collector: the sandbox stands in for it.
            settings = Settings(collect_garbage=cluster.backend == "real")
            sandbox = asyncio.create_task(
                run_simulated_cluster(client, load_profile("s4"), SandboxClock(SPEED),
                                      ready=ready, settings=settings),
                name="simulated-cluster",
            )  # fmt: skip
            tasks.append(sandbox)
            await _started(sandbox, ready.wait)

            cert_dir = work / "webhook-certs"
            await asyncio.to_thread(generate, cert_dir, service_dns_names("kq-test", ns))
            port = free_loopback_port()
            manager = Manager(client, WebhookServer(port, cert_dir, host="127.0.0.1"))
            for resource in (*KUEUE_KINDS, NAMESPACES):
                manager.informer(resource)
            config = KqConfig(
                namespace=ns,
                frameworks=frameworks,
                pod_options=pod_options or PodOptions(),
                managed_jobs_namespace_selector={"matchLabels": {NAME_LABEL: ns}},
                manage_jobs_without_queue_name=manage_jobs_without_queue_name,
            )
            await install_controllers(manager, config)
            controller = asyncio.create_task(_serve(manager), name="kq")
            tasks.append(controller)

            async def serving() -> None:
                await manager.webhook.listening.wait()
                for informer in manager.informers:
                    await informer.wait_synced()

            await _started(controller, serving)
            ca = (cert_dir / "ca.crt").read_bytes()
            owners = bool(set(frameworks) & set(SERVING_FRAMEWORKS))
            pods = "pod" in frameworks or owners
            for resource, body in _webhooks(port, ns, suffix, ca, pods, owners):
                await client.create(resource, body)
                registered.append((resource, body))
            await _webhooks_called(client, ns)
            yield Stack(client, cluster.backend, ns, suffix)
        finally:
            for resource, body in registered:
                with contextlib.suppress(ApiError):
                    await client.delete(resource, body["metadata"]["name"])
            for task in reversed(tasks):
                task.cancel()
            for task in reversed(tasks):
                with contextlib.suppress(asyncio.CancelledError):
                    await task


@pytest.fixture
async def stack(cluster: Cluster, tmp_path: Path) -> AsyncIterator[Stack]:
    async with kq_stack(cluster, tmp_path) as running:
        yield running
