"""Serving owners under kq on the simulated cluster, over HTTP (both backends).

The stack is ``tests.integrations_io``'s with the serving frameworks on; ``pod`` is not listed
(upstream enables it implicitly, for the serving owners' pods only).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kq.runtime.errors import ApiError
from kq.runtime.resources import JOBS, WORKLOADS, Resource
from kq.sandbox.cluster.serving import (
    DEPLOYMENTS,
    LEADERWORKERSETS,
    REPLICASETS,
    STATEFULSETS,
)
from kq.sandbox.dev import SANDBOX_FRAMEWORKS
from tests.harness import Cluster
from tests.integrations_io.conftest import QUEUE, QUEUE_LABEL, Stack, eventually, kq_stack
from tests.pods.leftovers import remove_leftovers

GATE = "kueue.x-k8s.io/admission"
PARENT = "kueue.x-k8s.io/pod-suspending-parent"
MANAGED = "kueue.x-k8s.io/managed"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
LWS = "leaderworkerset.x-k8s.io/leaderworkerset"


@pytest.fixture
async def stack(cluster: Cluster, tmp_path: Path) -> AsyncIterator[Stack]:
    frameworks = (*SANDBOX_FRAMEWORKS, "deployment", "statefulset", LWS)
    async with kq_stack(cluster, tmp_path, frameworks=frameworks) as s:
        await s.local_queue()
        await s.cluster_queue_with_flavor(cpu="4", memory="8Gi")
        yield s
        # Serving pods run until deleted: left behind they would fill the shared nodes.
        await remove_leftovers(s, (LEADERWORKERSETS, DEPLOYMENTS, STATEFULSETS, REPLICASETS, JOBS))


def server_template(app: str, cpu: str = "1") -> dict[str, Any]:
    container = {"name": "server", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                 "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}  # fmt: skip
    return {"metadata": {"labels": {"app": app}}, "spec": {"containers": [container]}}


def deployment(name: str, replicas: int, *, cpu: str = "1", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {QUEUE_LABEL: QUEUE, **labels}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": server_template(name, cpu)},
    }  # fmt: skip


def gates(pod: dict[str, Any]) -> list[str]:
    return [g["name"] for g in pod["spec"].get("schedulingGates") or ()]


def live(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def is_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    found = [c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == type_]
    return found[0] if found else None


async def app_pods(stack: Stack, app: str) -> list[dict[str, Any]]:
    return live(await stack.pods(f"app={app}"))


async def pod_workloads(stack: Stack, app: str) -> dict[str, dict[str, Any]]:
    """Pod name -> its Workload, for the live pods of ``app`` that have one."""
    names = {p["metadata"]["name"] for p in await app_pods(stack, app)}
    listing = await stack.client.list(WORKLOADS, namespace=stack.ns)
    out = {}
    for wl in listing.get("items") or ():
        for owner in wl["metadata"].get("ownerReferences") or ():
            if owner.get("kind") == "Pod" and owner.get("name") in names:
                out[owner["name"]] = wl
    return out


async def settled(stack: Stack, app: str, running: int, gated: int = 0) -> list[dict[str, Any]]:
    """Until ``app`` has ``running`` ungated running pods and ``gated`` gated ones, each with
    its own Workload (admitted for the running ones)."""

    async def probe() -> list[dict[str, Any]]:
        pods = await app_pods(stack, app)
        up = [p for p in pods if not gates(p) and p["status"].get("phase") == "Running"]
        held = [p for p in pods if gates(p) == [GATE]]
        assert (len(up), len(held), len(pods)) == (running, gated, running + gated), [
            (p["metadata"]["name"], gates(p), p["status"].get("phase")) for p in pods
        ]
        workloads = await pod_workloads(stack, app)
        assert len(workloads) == len(pods), sorted(workloads)
        for pod in up:
            admitted = condition(workloads[pod["metadata"]["name"]], "Admitted")
            assert admitted is not None
            assert admitted["status"] == "True"
        return pods

    return await eventually(probe, f"{app}: {running} running, {gated} gated", within=90)


async def patched(stack: Stack, resource: Resource, name: str, patch: dict[str, Any]) -> None:
    """A merge patch, tried again on a 409: the embedded server may answer a contended patch
    with one (kubectl tries again too); any other refusal is raised."""

    async def attempt() -> None:
        try:
            await stack.client.merge_patch(resource, name, patch, namespace=stack.ns)
        except ApiError as error:
            if error.conflict:
                raise AssertionError(str(error)) from error
            raise

    await eventually(attempt, f"{resource.kind} {name} patched")


async def scale(stack: Stack, name: str, replicas: int, resource: Resource = DEPLOYMENTS) -> None:
    await patched(stack, resource, name, {"spec": {"replicas": replicas}})
