"""The simulated Deployment and ReplicaSet controllers over HTTP (embedded or real server)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kq.runtime.client import KubeClient
from kq.runtime.resources import EVENTS, PODS
from kq.sandbox.cluster.serving import DEPLOYMENTS, REPLICASETS
from tests.harness import Cluster
from tests.sandbox_io.serving import (
    condition,
    live,
    pod_template,
    pods,
    ready,
    scale,
    simulated,
    wait_for,
)

HASH = "pod-template-hash"


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(cluster.kubeconfig) as kube:
        yield kube


def _deployment(name: str, ns: str, replicas: int, **template: Any) -> dict[str, Any]:
    body = pod_template(name)
    body["spec"].update(template)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": body},
    }  # fmt: skip


async def _settled(client: KubeClient, name: str, ns: str, replicas: int) -> dict[str, Any]:
    """The Deployment once its status reports ``replicas`` pods, all ready and up to date."""

    async def done() -> dict[str, Any] | None:
        deployment = await client.get(DEPLOYMENTS, name, ns)
        status = deployment.get("status") or {}
        counts = [status.get(k, 0) for k in ("replicas", "readyReplicas", "availableReplicas",
                                            "updatedReplicas")]  # fmt: skip
        progressed = any(c["type"] == "Progressing" and c["reason"] == "NewReplicaSetAvailable"
                         for c in status.get("conditions") or ())  # fmt: skip
        running = [p for p in live(await pods(client, ns, f"app={name}")) if ready(p)]
        observed = status.get("observedGeneration") == deployment["metadata"]["generation"]
        fine = counts == [replicas] * 4 and progressed and observed and len(running) == replicas
        return deployment if fine else None

    return await wait_for(done, f"deployment {name} at {replicas} ready replicas")


async def test_deployment_runs_scales_and_replaces_pods(
    client: KubeClient, cluster: Cluster
) -> None:
    async with simulated(client, cluster.backend) as ns:
        await client.create(DEPLOYMENTS, _deployment("web", ns, 3))
        deployment = await _settled(client, "web", ns, 3)
        assert deployment["status"]["observedGeneration"] == deployment["metadata"]["generation"]
        available = condition(deployment, "Available")
        assert (available["status"], available["reason"]) == ("True", "MinimumReplicasAvailable")
        assert available["message"] == "Deployment has minimum availability."
        (rs,) = (await client.list(REPLICASETS, namespace=ns))["items"]
        pod_hash = rs["metadata"]["labels"][HASH]
        assert rs["metadata"]["name"] == f"web-{pod_hash}"
        assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", HASH: pod_hash}
        assert rs["metadata"]["ownerReferences"][0]["uid"] == deployment["metadata"]["uid"]
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
        assert deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
        first = live(await pods(client, ns, "app=web"))
        for pod in first:
            assert pod["metadata"]["name"].startswith(f"web-{pod_hash}-")
            assert len(pod["metadata"]["name"]) == len(f"web-{pod_hash}-") + 5
            assert pod["metadata"]["labels"][HASH] == pod_hash
            assert pod["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
            assert pod["spec"]["nodeName"]

        await scale(client, DEPLOYMENTS, "web", ns, 5)
        await _settled(client, "web", ns, 5)
        await scale(client, DEPLOYMENTS, "web", ns, 2)
        await _settled(client, "web", ns, 2)

        victim = live(await pods(client, ns, "app=web"))[0]
        await client.delete(PODS, victim["metadata"]["name"], ns)

        async def replaced() -> bool:
            now = [p for p in live(await pods(client, ns, "app=web")) if ready(p)]
            names = {p["metadata"]["name"] for p in now}
            return len(now) == 2 and victim["metadata"]["name"] not in names

        await wait_for(replaced, "a replacement for the deleted pod")

        async def recorded() -> set[tuple[str, str, str]] | None:
            """Events are posted in the background: the last one may land a little later."""
            found = {(e["involvedObject"]["kind"], e["reason"], e["message"])
                     for e in (await client.list(EVENTS, namespace=ns))["items"]}  # fmt: skip
            creates = sum(1 for r in found if r[:2] == ("ReplicaSet", "SuccessfulCreate"))
            return found if creates >= 6 else None

        reasons = await wait_for(recorded, "the ReplicaSet's events")
        assert ("Deployment", "ScalingReplicaSet",
                f"Scaled up replica set web-{pod_hash} from 3 to 5") in reasons  # fmt: skip
        assert ("Deployment", "ScalingReplicaSet",
                f"Scaled down replica set web-{pod_hash} from 5 to 2") in reasons  # fmt: skip
        by_rs = [r[1:] for r in reasons if r[0] == "ReplicaSet"]
        created = [m for why, m in by_rs if why == "SuccessfulCreate"]
        deleted = [m for why, m in by_rs if why == "SuccessfulDelete"]
        assert len(created) == 6  # 3, then 2 more, then the replacement
        assert len(deleted) == 3  # scaled from 5 to 2
        assert all(m.startswith(f"Created pod: web-{pod_hash}-") for m in created)
        assert all(m.startswith(f"Deleted pod: web-{pod_hash}-") for m in deleted)


async def test_template_change_rolls_to_a_new_replicaset(
    client: KubeClient, cluster: Cluster
) -> None:
    async with simulated(client, cluster.backend) as ns:
        await client.create(DEPLOYMENTS, _deployment("api", ns, 4))
        await _settled(client, "api", ns, 4)
        (old,) = (await client.list(REPLICASETS, namespace=ns))["items"]
        patch = {"spec": {"template": {"metadata": {"labels": {"app": "api", "track": "v2"}}}}}
        await client.merge_patch(DEPLOYMENTS, "api", patch, namespace=ns)
        deployment = await _settled(client, "api", ns, 4)

        async def old_gone() -> bool:
            return not [p for p in await pods(client, ns, "app=api")
                        if p["metadata"]["labels"].get("track") != "v2"]  # fmt: skip

        await wait_for(old_gone, "the old template's pods gone")
        sets = {
            rs["metadata"]["name"]: rs
            for rs in (await client.list(REPLICASETS, namespace=ns))["items"]
        }
        assert len(sets) == 2
        new = next(rs for name, rs in sets.items() if name != old["metadata"]["name"])
        assert sets[old["metadata"]["name"]]["spec"]["replicas"] == 0
        assert new["spec"]["replicas"] == 4
        assert new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
        assert deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
        progressing = condition(deployment, "Progressing")
        assert (
            progressing["message"]
            == f'ReplicaSet "{new["metadata"]["name"]}" has successfully progressed.'
        )
        current = live(await pods(client, ns, "app=api"))
        assert {p["metadata"]["labels"][HASH] for p in current} == {new["metadata"]["labels"][HASH]}
        await client.delete(DEPLOYMENTS, "api", ns)

        async def collected() -> bool:
            sets = (await client.list(REPLICASETS, namespace=ns))["items"]
            return not sets and not await pods(client, ns)

        await wait_for(collected, "the ReplicaSets and pods garbage-collected")


async def test_gated_pods_are_never_bound(client: KubeClient, cluster: Cluster) -> None:
    async with simulated(client, cluster.backend) as ns:
        gates = [{"name": "example.com/admission"}]
        body = _deployment("gated", ns, 2, schedulingGates=gates)
        body["spec"]["progressDeadlineSeconds"] = 120  # two sandbox minutes: 2 s here
        await client.create(DEPLOYMENTS, body)

        async def reported() -> list[dict[str, Any]] | None:
            found = await pods(client, ns, "app=gated")
            scheduled = [
                condition(p, "PodScheduled") for p in found if p.get("status", {}).get("conditions")
            ]
            fine = (
                len(found) == 2
                and len(scheduled) == 2
                and all(c["reason"] == "SchedulingGated" for c in scheduled)
            )
            return found if fine else None

        found = await wait_for(reported, "gated pods reported SchedulingGated")
        deployment = await wait_for(lambda: _available(client, "gated", ns, "False"),
                                    "Available False")  # fmt: skip
        assert all(not p["spec"].get("nodeName") for p in found)
        assert all(p["status"]["phase"] == "Pending" for p in found)
        assert deployment["status"].get("readyReplicas", 0) == 0
        assert condition(deployment, "Available")["reason"] == "MinimumReplicasUnavailable"

        async def timed_out() -> dict[str, Any] | None:
            deployment = await client.get(DEPLOYMENTS, "gated", ns)
            progressing = condition(deployment, "Progressing")
            return progressing if progressing["status"] == "False" else None

        progressing = await wait_for(timed_out, "Progressing False after the deadline")
        assert progressing["reason"] == "ProgressDeadlineExceeded"
        rs_name = (await client.list(REPLICASETS, namespace=ns))["items"][0]["metadata"]["name"]
        assert progressing["message"] == f'ReplicaSet "{rs_name}" has timed out progressing.'
        assert all(not p["spec"].get("nodeName") for p in await pods(client, ns, "app=gated"))


async def _available(client: KubeClient, name: str, ns: str, status: str) -> dict[str, Any] | None:
    deployment = await client.get(DEPLOYMENTS, name, ns)
    conditions = (deployment.get("status") or {}).get("conditions") or ()
    return (
        deployment
        if any(c["type"] == "Available" and c["status"] == status for c in conditions)
        else None
    )
