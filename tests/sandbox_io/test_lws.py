"""The simulated LeaderWorkerSet controller over HTTP (embedded or real server)."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kq.runtime.client import KubeClient
from kq.runtime.resources import PODS
from kq.sandbox.cluster.serving import LEADERWORKERSETS, SERVICES, STATEFULSETS
from tests.harness import Cluster
from tests.sandbox_io.serving import (
    condition,
    events_until,
    live,
    pod_template,
    pods,
    ready,
    scale,
    simulated,
    wait_for,
)

LWS = "leaderworkerset.sigs.k8s.io/"


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(cluster.kubeconfig) as kube:
        yield kube


def _lws(name: str, ns: str, replicas: int, size: int) -> dict[str, Any]:
    """Shaped like upstream's config/samples/leaderworkerset_v1_leaderworkerset.yaml."""
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "rolloutStrategy": {"type": "RollingUpdate",
                                "rollingUpdateConfiguration": {"maxUnavailable": 1}},
            "leaderWorkerTemplate": {"size": size, "restartPolicy": "RecreateGroupOnPodRestart",
                                     "workerTemplate": pod_template(name)},
        },
    }  # fmt: skip


async def _available(client: KubeClient, name: str, ns: str, groups: int) -> dict[str, Any]:
    async def done() -> dict[str, Any] | None:
        lws = await client.get(LEADERWORKERSETS, name, ns)
        status = lws.get("status") or {}
        counts = [status.get(k, 0) for k in ("replicas", "readyReplicas", "updatedReplicas")]
        available = any(c["type"] == "Available" and c["status"] == "True"
                        for c in status.get("conditions") or ())  # fmt: skip
        observed = status.get("observedGeneration") == lws["metadata"]["generation"]
        return lws if counts == [groups] * 3 and available and observed else None

    return await wait_for(done, f"{name} available with {groups} groups")


async def test_groups_of_a_leader_and_workers(client: KubeClient, cluster: Cluster) -> None:
    async with simulated(client, cluster.backend) as ns:
        await client.create(LEADERWORKERSETS, _lws("llm", ns, 2, 3))
        lws = await _available(client, "llm", ns, 2)
        assert lws["status"]["hpaPodSelector"] == f"{LWS}name=llm,{LWS}worker-index=0"
        progressing = condition(lws, "Progressing")
        assert progressing["status"] == "False"
        available = condition(lws, "Available")
        assert (available["reason"], available["message"]) == (
            "AllGroupsReady", "All replicas are ready")  # fmt: skip
        found = live(await pods(client, ns))
        assert [p["metadata"]["name"] for p in found] == [
            "llm-0", "llm-0-1", "llm-0-2", "llm-1", "llm-1-1", "llm-1-2"]  # fmt: skip
        assert all(ready(p) for p in found)
        by_name = {p["metadata"]["name"]: p for p in found}
        for group in (0, 1):
            leader = by_name[f"llm-{group}"]
            key = hashlib.sha1(f"{ns}/llm-{group}".encode()).hexdigest()
            for worker in range(3):
                pod = by_name[f"llm-{group}" + (f"-{worker}" if worker else "")]
                labels = pod["metadata"]["labels"]
                assert labels[LWS + "name"] == "llm"
                assert labels[LWS + "group-index"] == str(group)
                assert labels[LWS + "worker-index"] == str(worker)
                assert labels[LWS + "group-key"] == key
                assert pod["metadata"]["annotations"][LWS + "size"] == "3"
                env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
                assert env["LWS_LEADER_ADDRESS"] == f"llm-{group}.llm.{ns}"
                assert env["LWS_WORKER_INDEX"] == str(worker)
            workers = await client.get(STATEFULSETS, f"llm-{group}", ns)
            owner = workers["metadata"]["ownerReferences"][0]
            assert (owner["kind"], owner["uid"]) == ("Pod", leader["metadata"]["uid"])
            assert workers["spec"]["replicas"] == 2
            assert by_name[f"llm-{group}-1"]["metadata"]["annotations"][
                LWS + "leader-name"] == f"llm-{group}"  # fmt: skip
        service = await client.get(SERVICES, "llm", ns)
        assert service["spec"]["clusterIP"] == "None"
        assert service["spec"]["selector"] == {LWS + "name": "llm"}
        leaders = await client.get(STATEFULSETS, "llm", ns)
        assert leaders["metadata"]["ownerReferences"][0]["uid"] == lws["metadata"]["uid"]
        assert leaders["metadata"]["annotations"][LWS + "replicas"] == "2"

        await scale(client, LEADERWORKERSETS, "llm", ns, 1)
        await _available(client, "llm", ns, 1)

        async def one_group() -> bool:
            names = [p["metadata"]["name"] for p in await pods(client, ns)]
            return names == ["llm-0", "llm-0-1", "llm-0-2"]

        await wait_for(one_group, "group 1 gone with its leader")
        await client.delete(LEADERWORKERSETS, "llm", ns)

        async def collected() -> bool:
            sets = (await client.list(STATEFULSETS, namespace=ns))["items"]
            services = (await client.list(SERVICES, namespace=ns))["items"]
            return not sets and not services and not await pods(client, ns)

        await wait_for(collected, "the set's StatefulSets and pods garbage-collected")


async def test_a_deleted_worker_recreates_its_group(client: KubeClient, cluster: Cluster) -> None:
    async with simulated(client, cluster.backend) as ns:
        await client.create(LEADERWORKERSETS, _lws("infer", ns, 1, 2))
        await _available(client, "infer", ns, 1)
        leader = await client.get(PODS, "infer-0", ns)
        await client.delete(PODS, "infer-0-1", ns)

        async def recreated() -> bool:
            found = live(await pods(client, ns))
            uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in found}
            return (sorted(uids) == ["infer-0", "infer-0-1"]
                    and uids["infer-0"] != leader["metadata"]["uid"]
                    and all(ready(p) for p in found))  # fmt: skip

        await wait_for(recreated, "the whole group recreated")
        await _available(client, "infer", ns, 1)
        message = "Worker pod infer-0-1 failed, deleted leader pod infer-0 to recreate group 0"
        await events_until(
            client, ns,
            lambda events: any(e["reason"] == "RecreateGroup" and e["message"] == message
                               for e in events),
            "the RecreateGroup Event",
        )  # fmt: skip


async def test_a_template_change_replaces_every_group(client: KubeClient, cluster: Cluster) -> None:
    async with simulated(client, cluster.backend) as ns:
        await client.create(LEADERWORKERSETS, _lws("chat", ns, 2, 2))
        await _available(client, "chat", ns, 2)
        before = {p["metadata"]["name"]: p["metadata"]["labels"][LWS + "template-revision-hash"]
                  for p in live(await pods(client, ns))}  # fmt: skip
        assert len(set(before.values())) == 1
        patch = {"spec": {"leaderWorkerTemplate": {"workerTemplate": {
            "metadata": {"labels": {"app": "chat", "model": "v2"}}}}}}  # fmt: skip
        await client.merge_patch(LEADERWORKERSETS, "chat", patch, namespace=ns)

        async def replaced() -> bool:
            found = live(await pods(client, ns))
            keys = {p["metadata"]["labels"][LWS + "template-revision-hash"] for p in found}
            return (len(found) == 4 and not keys & set(before.values())
                    and all(p["metadata"]["labels"].get("model") == "v2" for p in found)
                    and all(ready(p) for p in found))  # fmt: skip

        await wait_for(replaced, "every group on the new template")
        lws = await _available(client, "chat", ns, 2)
        assert condition(lws, "UpdateInProgress")["status"] == "False"
        wanted = {"CreatingRevision", "GroupsProgressing", "AllGroupsReady"}
        await events_until(
            client, ns, lambda events: wanted <= {e["reason"] for e in events}, f"{wanted} Events"
        )
