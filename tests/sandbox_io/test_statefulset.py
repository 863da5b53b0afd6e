"""The simulated StatefulSet controller over HTTP (embedded or real server)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kq.runtime.client import KubeClient
from kq.runtime.resources import PODS
from kq.sandbox.cluster.readiness import READY_SECONDS_ANNOTATION
from kq.sandbox.cluster.serving import STATEFULSETS
from tests.harness import Cluster
from tests.sandbox_io.serving import (
    events_until,
    live,
    pod_template,
    pods,
    ready,
    scale,
    simulated,
    wait_for,
)


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(cluster.kubeconfig) as kube:
        yield kube


def _statefulset(name: str, ns: str, replicas: int, policy: str, **notes: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": replicas, "serviceName": name, "podManagementPolicy": policy,
                 "selector": {"matchLabels": {"app": name}},
                 "template": pod_template(name, **notes)},
    }  # fmt: skip


async def _names(client: KubeClient, ns: str, app: str, *, ready_only: bool = True) -> list[str]:
    found = live(await pods(client, ns, f"app={app}"))
    return [p["metadata"]["name"] for p in found if ready(p) or not ready_only]


async def _status(client: KubeClient, name: str, ns: str, replicas: int) -> dict[str, Any]:
    async def done() -> dict[str, Any] | None:
        sts = await client.get(STATEFULSETS, name, ns)
        status = sts.get("status") or {}
        counts = [status.get(k, 0) for k in ("replicas", "readyReplicas", "availableReplicas",
                                            "currentReplicas", "updatedReplicas")]  # fmt: skip
        observed = status.get("observedGeneration") == sts["metadata"]["generation"]
        return sts if counts == [replicas] * 5 and observed else None

    return await wait_for(done, f"statefulset {name} status at {replicas} ready replicas")


async def test_parallel_pods_scale_and_come_back_under_their_names(
    client: KubeClient, cluster: Cluster
) -> None:
    async with simulated(client, cluster.backend) as ns:
        await client.create(STATEFULSETS, _statefulset("db", ns, 3, "Parallel"))
        sts = await _status(client, "db", ns, 3)
        assert sts["status"]["currentRevision"] == sts["status"]["updateRevision"]
        assert sts["status"]["updateRevision"].startswith("db-")
        for index, pod in enumerate(live(await pods(client, ns, "app=db"))):
            name = f"db-{index}"
            assert pod["metadata"]["name"] == name
            labels = pod["metadata"]["labels"]
            assert labels["statefulset.kubernetes.io/pod-name"] == name
            assert labels["apps.kubernetes.io/pod-index"] == str(index)
            assert labels["controller-revision-hash"] == sts["status"]["updateRevision"]
            assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == (name, "db")
            assert pod["metadata"]["ownerReferences"][0]["uid"] == sts["metadata"]["uid"]

        await scale(client, STATEFULSETS, "db", ns, 1)
        await _status(client, "db", ns, 1)

        async def one_left() -> bool:
            return await _names(client, ns, "db", ready_only=False) == ["db-0"]

        await wait_for(one_left, "db-1 and db-2 deleted")
        first = await client.get(PODS, "db-0", ns)
        await client.delete(PODS, "db-0", ns)

        async def recreated() -> bool:
            pod = await client.get(PODS, "db-0", ns)
            return pod["metadata"]["uid"] != first["metadata"]["uid"] and ready(pod)

        await wait_for(recreated, "db-0 recreated under its name")
        await _status(client, "db", ns, 1)
        wanted = {f"{verb} Pod db-2 in StatefulSet db successful" for verb in ("create", "delete")}
        await events_until(
            client, ns, lambda events: wanted <= {e["message"] for e in events
                                                  if e["involvedObject"]["kind"] == "StatefulSet"},
            "db-2's create and delete Events",
        )  # fmt: skip


async def test_ordered_ready_waits_for_each_pod_to_be_ready(
    client: KubeClient, cluster: Cluster
) -> None:
    """Pods that take an hour to turn ready hold the next ordinal back until they are."""
    async with simulated(client, cluster.backend) as ns:
        slow = {READY_SECONDS_ANNOTATION: "3600"}
        await client.create(STATEFULSETS, _statefulset("zk", ns, 3, "OrderedReady", **slow))

        async def first_running() -> bool:
            found = await pods(client, ns, "app=zk")
            return [p["metadata"]["name"] for p in found] == ["zk-0"] and (
                found[0]["status"].get("phase") == "Running"
            )

        await wait_for(first_running, "zk-0 running, not ready")
        pod = await client.get(PODS, "zk-0", ns)
        assert not ready(pod)
        sts = await client.get(STATEFULSETS, "zk", ns)
        assert sts["status"].get("readyReplicas", 0) == 0
        assert [p["metadata"]["name"] for p in await pods(client, ns, "app=zk")] == ["zk-0"]
        for index in range(3):  # each pod's check passes: the next one is created
            notes = {"metadata": {"annotations": {READY_SECONDS_ANNOTATION: "0"}}}

            async def created(index: int = index) -> bool:
                return f"zk-{index}" in await _names(client, ns, "zk", ready_only=False)

            await wait_for(created, f"zk-{index} created")
            await client.merge_patch(PODS, f"zk-{index}", notes, namespace=ns)
        await _status(client, "zk", ns, 3)
        assert await _names(client, ns, "zk") == ["zk-0", "zk-1", "zk-2"]
        await scale(client, STATEFULSETS, "zk", ns, 1)
        await _status(client, "zk", ns, 1)
        assert await _names(client, ns, "zk", ready_only=False) == ["zk-0"]


async def test_a_template_change_rolls_from_the_highest_ordinal(
    client: KubeClient, cluster: Cluster
) -> None:
    async with simulated(client, cluster.backend) as ns:
        await client.create(STATEFULSETS, _statefulset("kv", ns, 3, "OrderedReady"))
        old = (await _status(client, "kv", ns, 3))["status"]["updateRevision"]
        patch = {"spec": {"template": {"metadata": {"labels": {"app": "kv", "v": "2"}}}}}
        await client.merge_patch(STATEFULSETS, "kv", patch, namespace=ns)
        sts = await _status(client, "kv", ns, 3)
        new = sts["status"]["updateRevision"]
        assert new != old
        assert sts["status"]["currentRevision"] == new
        found = live(await pods(client, ns, "app=kv"))
        assert {p["metadata"]["labels"]["controller-revision-hash"] for p in found} == {new}
        assert all(p["metadata"]["labels"]["v"] == "2" for p in found)

        def deletes(events: list[dict[str, Any]]) -> list[str]:
            return [e["message"] for e in events if e["reason"] == "SuccessfulDelete"]

        events = await events_until(
            client, ns, lambda events: len(deletes(events)) >= 3, "three SuccessfulDelete Events"
        )
        assert deletes(events) == [
            f"delete Pod kv-{i} in StatefulSet kv successful" for i in (2, 1, 0)
        ]
