"""kq's client speaks v1beta2, the storage version, for Kueue's converted kinds and hands kq
its v1beta1-shaped model (``kq.runtime.storage_version``): over HTTP on both backends, what
kq writes is stored as the server's own conversion would store it, and it reads v1beta1."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from kq.crds.conversion import V1BETA1, V1BETA2
from kq.runtime.client import KubeClient
from kq.runtime.informer import Informer
from kq.runtime.resources import NAMESPACES, WORKLOADS
from tests.harness import Cluster, eventually

SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
POD_SETS = [{"name": "main", "count": 1, "template": {"spec": {"containers": [
    {"name": "c", "image": "busybox"}]}}}]  # fmt: skip


@asynccontextmanager
async def namespace(cluster: Cluster) -> AsyncIterator[tuple[KubeClient, str]]:
    name = f"wire-{uuid.uuid4().hex[:8]}"
    async with await KubeClient.connect(cluster.kubeconfig) as client:
        await client.create(NAMESPACES, {"metadata": {"name": name}})
        try:
            yield client, name
        finally:
            await client.delete(NAMESPACES, name)


def _workload(ns: str, priority_class: str) -> dict[str, Any]:
    spec = {"queueName": "q", "podSets": POD_SETS, "priorityClassName": priority_class,
            "priorityClassSource": SOURCE}  # fmt: skip
    return {"apiVersion": V1BETA1, "kind": "Workload",
            "metadata": {"name": "w", "namespace": ns}, "spec": spec}  # fmt: skip


async def _stored(client: KubeClient, ns: str) -> dict[str, Any]:
    """The Workload as a v1beta2 client reads it (a path kq's client leaves alone)."""
    path = f"/apis/{V1BETA2}/namespaces/{ns}/workloads/w"
    return await client.request("GET", path)


def _ref(name: str) -> dict[str, str]:
    return {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": name}


async def test_kq_writes_and_reads_its_model_through_the_storage_version(
    cluster: Cluster,
) -> None:
    async with namespace(cluster) as (client, ns):
        created = await client.create(WORKLOADS, _workload(ns, "high"))
        assert created["apiVersion"] == V1BETA1
        assert created["spec"]["priorityClassName"] == "high"
        assert (await _stored(client, ns))["spec"]["priorityClassRef"] == _ref("high")

        # A status patch is the same in both versions: it goes out in v1beta2.
        condition = {"type": "Probe", "status": "True", "reason": "Probe", "message": "m",
                     "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
        patched = await client.merge_patch(
            WORKLOADS, "w", {"status": {"conditions": [condition]}}, namespace=ns,
            subresource="status",
        )  # fmt: skip
        assert patched["apiVersion"] == V1BETA1
        assert patched["status"]["conditions"] == [condition]

        # One of the two fields v1beta2 merges into priorityClassRef: not exact in v1beta2,
        # so it goes out in v1beta1 and the server converts it.
        renamed = await client.merge_patch(
            WORKLOADS, "w", {"spec": {"priorityClassName": "low"}}, namespace=ns
        )
        assert renamed["spec"]["priorityClassName"] == "low"
        assert renamed["spec"]["priorityClassSource"] == SOURCE
        assert (await _stored(client, ns))["spec"]["priorityClassRef"] == _ref("low")

        got = await client.get(WORKLOADS, "w", ns)
        assert got["spec"] == renamed["spec"]
        listed = await client.list(WORKLOADS, namespace=ns)
        assert [w["spec"]["priorityClassName"] for w in listed["items"]] == ["low"]
        assert listed["items"][0]["apiVersion"] == V1BETA1


async def test_the_informer_caches_v1beta1(cluster: Cluster) -> None:
    async with namespace(cluster) as (client, ns):
        await client.create(WORKLOADS, _workload(ns, "high"))
        informer = Informer(client, WORKLOADS, namespace=ns)
        task = asyncio.create_task(informer.run())
        try:
            await informer.wait_synced()
            await client.merge_patch(
                WORKLOADS, "w", {"spec": {"priorityClassName": "low"}}, namespace=ns
            )

            def cached() -> dict[str, Any] | None:
                return informer.store.get(f"{ns}/w")

            async def renamed() -> bool:
                obj = cached()
                return obj is not None and obj["spec"].get("priorityClassName") == "low"

            await eventually(renamed, "the watched rename")
            obj = cached()
            assert obj is not None
            assert obj["apiVersion"] == V1BETA1
            assert "priorityClassRef" not in obj["spec"]
        finally:
            task.cancel()
