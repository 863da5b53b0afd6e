"""Serving workloads in the in-memory world: a failed node pool under a Deployment, a
StatefulSet and a LeaderWorkerSet, on sandbox time."""

from __future__ import annotations

from typing import Any

from kq.sandbox.cluster.clock import ManualClock
from kq.sandbox.cluster.node_lifecycle import fail_node, pool_nodes
from kq.sandbox.cluster.nodes import POOL_LABEL, node_objects
from kq.sandbox.cluster.podinfo import labels_of
from kq.sandbox.cluster.profiles import load_profile
from tests.sandbox.world import World

TEMPLATE: dict[str, Any] = {"metadata": {"labels": {"app": "s"}},
            "spec": {"containers": [{"name": "c", "image": "nginx",
                                     "resources": {"requests": {"cpu": "100m"}}}]}}  # fmt: skip


def _world() -> World:
    w = World(ManualClock())
    for node in node_objects(load_profile("s1"), w.clock.now()):
        w.add(node)
    w.add({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "s"}},
                    "template": TEMPLATE}})  # fmt: skip
    sts_spec = {"replicas": 2, "podManagementPolicy": "Parallel", "template": TEMPLATE}
    w.add({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
           "spec": sts_spec})  # fmt: skip
    lws_spec = {"replicas": 2, "leaderWorkerTemplate": {"size": 2, "workerTemplate": TEMPLATE}}
    w.add({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "l"}, "spec": lws_spec})  # fmt: skip
    return w


def _ready(w: World) -> list[dict[str, Any]]:
    return [
        p for p in w.of_kind("Pod")
        if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"]["conditions"])
    ]  # fmt: skip


def _all_ready(w: World) -> bool:
    status = {k: (w.get(k, n).get("status") or {}) for k, n in
              (("Deployment", "d"), ("StatefulSet", "s"), ("LeaderWorkerSet", "l"))}  # fmt: skip
    return (len(_ready(w)) == 3 + 2 + 4 and status["Deployment"].get("availableReplicas") == 3
            and status["StatefulSet"].get("readyReplicas") == 2
            and status["LeaderWorkerSet"].get("readyReplicas") == 2)  # fmt: skip


def test_serving_pods_start_not_ready_then_turn_ready() -> None:
    w = _world()
    w.settle()
    running = [p for p in w.of_kind("Pod") if p["status"].get("phase") == "Running"]
    assert len(running) == 9
    assert not _ready(w)  # still inside their ready delay
    w.run(_all_ready, max_seconds=60)


def test_a_failed_pool_moves_every_serving_pod_to_healthy_nodes() -> None:
    w = _world()
    w.run(_all_ready, max_seconds=60)
    pools = {labels_of(w.get("Node", p["spec"]["nodeName"]))[POOL_LABEL] for p in _ready(w)}
    failed = sorted(pools)[0]
    w.apply(fail_node(n) for n in pool_nodes(w.of_kind("Node"), failed))

    def recovered(w: World) -> bool:
        nodes = {labels_of(w.get("Node", p["spec"]["nodeName"]))[POOL_LABEL] for p in _ready(w)}
        return _all_ready(w) and failed not in nodes

    w.run(recovered, max_seconds=3600)
    assert {p["metadata"]["name"] for p in w.of_kind("Pod") if "s-" in p["metadata"]["name"]
            and p["metadata"]["name"].count("-") == 1} == {"s-0", "s-1"}  # fmt: skip


def test_exclusive_placement_puts_each_group_alone_in_a_pool() -> None:
    """Upstream's leaderworkerset_exclusiveplacement.yaml sample, on the s1 node pools."""
    w = World(ManualClock())
    for node in node_objects(load_profile("s1"), w.clock.now()):
        w.add(node)
    lws_spec = {"replicas": 3, "leaderWorkerTemplate": {"size": 2, "workerTemplate": TEMPLATE}}
    notes = {"leaderworkerset.sigs.k8s.io/exclusive-topology": POOL_LABEL}
    w.add({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "l", "annotations": notes}, "spec": lws_spec})  # fmt: skip
    w.run(lambda w: len(_ready(w)) == 6, max_seconds=60)
    pools: dict[str, set[str]] = {}
    for pod in _ready(w):
        pool = labels_of(w.get("Node", pod["spec"]["nodeName"]))[POOL_LABEL]
        pools.setdefault(labels_of(pod)["leaderworkerset.sigs.k8s.io/group-index"], set()).add(pool)
    assert sorted(pools) == ["0", "1", "2"]
    assert all(len(p) == 1 for p in pools.values()), pools
    assert len({next(iter(p)) for p in pools.values()}) == 3, pools
    workers = w.get("StatefulSet", "l-0")
    assert POOL_LABEL in workers["spec"]["template"]["spec"]["nodeSelector"]


def test_gated_groups_are_created_but_never_bound() -> None:
    """Kueue gates serving pods until their Workload is admitted: the LWS still builds every
    group (LeaderCreated), nothing is scheduled, and the set reports Progressing."""
    w = World(ManualClock())
    for node in node_objects(load_profile("s1"), w.clock.now()):
        w.add(node)
    gated = {**TEMPLATE, "spec": {**TEMPLATE["spec"], "schedulingGates": [{"name": "g"}]}}
    lws_spec = {"replicas": 2, "leaderWorkerTemplate": {"size": 3, "workerTemplate": gated}}
    w.add({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "l"}, "spec": lws_spec})  # fmt: skip
    w.settle()
    w.clock.advance(600)
    w.settle()
    pods = w.of_kind("Pod")
    assert len(pods) == 6
    assert all(not p["spec"].get("nodeName") and p["status"].get("phase", "Pending") == "Pending"
               for p in pods)  # fmt: skip
    status = w.get("LeaderWorkerSet", "l")["status"]
    assert status.get("readyReplicas", 0) == 0
    progressing = [c for c in status["conditions"] if c["type"] == "Progressing"]
    assert progressing[0]["status"] == "True"


def test_unique_per_replica_gives_each_group_its_own_headless_service() -> None:
    w = World(ManualClock())
    for node in node_objects(load_profile("s1"), w.clock.now()):
        w.add(node)
    lws_spec = {"replicas": 2, "networkConfig": {"subdomainPolicy": "UniquePerReplica"},
                "leaderWorkerTemplate": {"size": 2, "workerTemplate": TEMPLATE}}  # fmt: skip
    w.add({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "l"}, "spec": lws_spec})  # fmt: skip
    w.run(lambda w: len(_ready(w)) == 4, max_seconds=60)
    services = {s["metadata"]["name"]: s for s in w.of_kind("Service")}
    assert sorted(services) == ["l", "l-0", "l-1"]
    assert all(s["spec"]["clusterIP"] == "None" for s in services.values())
    prefix = "leaderworkerset.sigs.k8s.io/"
    assert services["l-1"]["spec"]["selector"] == {
        prefix + "name": "l",
        prefix + "group-index": "1",
    }
    subdomains = {p["metadata"]["name"]: p["spec"]["subdomain"] for p in w.of_kind("Pod")}
    assert subdomains == {"l-0": "l-0", "l-0-1": "l-0", "l-1": "l-1", "l-1-1": "l-1"}


def test_a_partition_keeps_the_groups_below_it_on_their_revision() -> None:
    w = World(ManualClock())
    for node in node_objects(load_profile("s1"), w.clock.now()):
        w.add(node)
    rollout = {"type": "RollingUpdate", "rollingUpdateConfiguration": {"partition": 2}}
    lws_spec = {"replicas": 3, "rolloutStrategy": rollout,
                "leaderWorkerTemplate": {"size": 2, "workerTemplate": TEMPLATE}}  # fmt: skip
    w.add({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": "l", "generation": 1}, "spec": lws_spec})  # fmt: skip
    w.run(lambda w: len(_ready(w)) == 6, max_seconds=60)
    key = "leaderworkerset.sigs.k8s.io/template-revision-hash"
    before = labels_of(w.get("Pod", "l-0"))[key]
    lws = w.get("LeaderWorkerSet", "l")
    lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["labels"]["v"] = "2"

    def rolled(w: World) -> bool:
        keys = {labels_of(p)[key] for p in _ready(w) if p["metadata"]["name"].startswith("l-2")}
        return len(_ready(w)) == 6 and keys != {before} and len(keys) == 1

    w.run(rolled, max_seconds=600)
    assert {labels_of(w.get("Pod", n))[key] for n in ("l-0", "l-0-1", "l-1", "l-1-1")} == {before}
    conditions = {
        c["type"]: c["status"] for c in w.get("LeaderWorkerSet", "l")["status"]["conditions"]
    }
    assert conditions["Available"] == "True"
    assert conditions.get("UpdateInProgress", "False") == "False"
    assert w.get("LeaderWorkerSet", "l")["status"]["updatedReplicas"] == 1
