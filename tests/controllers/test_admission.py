"""The admission controller through a real API: quota, pending messages, finishing, status."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from kq.controllers.admission import AdmissionController
from kq.runtime.client import KubeClient
from kq.runtime.resources import WORKLOADS
from tests.controllers.conftest import LeaderGate
from tests.controllers.helpers import (
    admitted,
    apply,
    cluster_queue,
    condition,
    cq_status,
    eventually,
    finish,
    flavor,
    get_workload,
    kubectl_json,
    local_queue,
    namespace,
    pending_with,
    suffix,
    workload,
)
from tests.harness import Cluster


async def test_admits_fitting_leaves_rest_pending_then_admits_after_finish(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, controller: AdmissionController
) -> None:
    s = suffix()
    ns, rf, cq = f"adm-{s}", f"rf-{s}", f"cq-{s}"
    apply(
        cluster,
        kubectl_cache,
        namespace(ns),
        flavor(rf),
        cluster_queue(cq, rf, "cpu", 4),
        local_queue(ns, "lq", cq),
    )
    apply(
        cluster,
        kubectl_cache,
        workload(ns, "a", "lq", {"cpu": 3}),
        workload(ns, "b", "lq", {"cpu": 1}),
    )
    for name in ("a", "b"):
        obj = await eventually(partial(admitted, client, ns, name), f"{name} admitted")
        assignment = obj["status"]["admission"]
        assert assignment["clusterQueue"] == cq
        assert assignment["podSetAssignments"][0]["flavors"] == {"cpu": rf}
        reserved = condition(obj, "QuotaReserved")
        assert reserved is not None
        assert reserved["message"] == f"Quota reserved in ClusterQueue {cq}"

    apply(cluster, kubectl_cache, workload(ns, "c", "lq", {"cpu": 2}))
    message = (
        f"couldn't assign flavors to pod set main: "
        f"insufficient unused quota for cpu in flavor {rf}, 2 more needed"
    )
    await eventually(lambda: pending_with(client, ns, "c", message), "c pending")

    async def counts(expected: dict[str, Any]) -> dict[str, Any] | None:
        status = await cq_status(client, cq)
        got = {k: status.get(k) for k in expected}
        return status if got == expected else None

    status = await eventually(
        lambda: counts({"pendingWorkloads": 1, "reservingWorkloads": 2, "admittedWorkloads": 2}),
        "ClusterQueue counts",
    )
    assert status["flavorsUsage"] == [
        {"name": rf, "resources": [{"name": "cpu", "total": "4", "borrowed": "0"}]}
    ]
    active = condition({"status": status}, "Active")
    assert active is not None
    assert (active["status"], active["reason"]) == ("True", "Ready")

    listed = kubectl_json(cluster, kubectl_cache, "get", "workloads", "-n", ns)
    reserved_in = {
        w["metadata"]["name"]: (w["status"].get("admission") or {}).get("clusterQueue")
        for w in listed["items"]
    }
    assert reserved_in == {"a": cq, "b": cq, "c": None}

    await finish(client, ns, "a")
    obj = await eventually(lambda: admitted(client, ns, "c"), "c admitted after a finished")
    assert obj["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] == {"cpu": "2"}
    status = await eventually(
        lambda: counts({"pendingWorkloads": 0, "reservingWorkloads": 2, "admittedWorkloads": 2}),
        "ClusterQueue counts after finish",
    )
    assert status["flavorsUsage"][0]["resources"][0]["total"] == "3"
    queue = kubectl_json(cluster, kubectl_cache, "get", "clusterqueues", cq)
    assert queue["status"]["admittedWorkloads"] == 2

    async def local_counts() -> dict[str, Any] | None:
        # v1beta1, the stored version: the real test plane's CRDs convert nothing (no webhook)
        lq = kubectl_json(
            cluster, kubectl_cache, "get", "localqueues.v1beta1.kueue.x-k8s.io", "lq", "-n", ns
        )
        status: dict[str, Any] = lq.get("status") or {}
        wanted = {"pendingWorkloads": 0, "reservingWorkloads": 2, "admittedWorkloads": 2}
        return status if all(status.get(k) == v for k, v in wanted.items()) else None

    local = await eventually(local_counts, "LocalQueue counts")
    assert local["flavorUsage"] == [{"name": rf, "resources": [{"name": "cpu", "total": "3"}]}]

    async def quota_reserved_event() -> list[dict[str, Any]] | None:
        events = kubectl_json(cluster, kubectl_cache, "get", "events", "-n", ns)["items"]
        hits = [
            e
            for e in events
            if e["reason"] == "QuotaReserved" and e["involvedObject"]["name"] == "c"
        ]
        return hits or None

    events = await eventually(quota_reserved_event, "QuotaReserved event")
    assert events[0]["message"].startswith(f"Quota reserved in ClusterQueue {cq}, wait time")


async def test_missing_flavor_makes_cluster_queue_inactive(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, controller: AdmissionController
) -> None:
    s = suffix()
    ns, cq = f"inact-{s}", f"cq-{s}"
    apply(
        cluster,
        kubectl_cache,
        namespace(ns),
        cluster_queue(cq, f"absent-{s}", "cpu", 4),
        local_queue(ns, "lq", cq),
        workload(ns, "w", "lq", {"cpu": 1}),
    )

    async def inactive() -> dict[str, Any] | None:
        active = condition({"status": await cq_status(client, cq)}, "Active")
        return active if active is not None and active["status"] == "False" else None

    active = await eventually(inactive, "Active=False")
    assert active["reason"] == "FlavorNotFound"
    obj = await eventually(
        partial(pending_with, client, ns, "w", f"ClusterQueue {cq} is inactive"), "inactive"
    )
    reserved = condition(obj, "QuotaReserved")
    assert reserved is not None
    assert reserved["reason"] == "Inadmissible"
    apply(cluster, kubectl_cache, flavor(f"absent-{s}"))
    await eventually(lambda: admitted(client, ns, "w"), "admitted once the flavor exists")


async def test_writes_nothing_while_not_leader(
    cluster: Cluster,
    kubectl_cache: Path,
    client: KubeClient,
    controller: AdmissionController,
    leader: LeaderGate,
) -> None:
    s = suffix()
    ns, rf, cq = f"lead-{s}", f"rf-{s}", f"cq-{s}"
    leader.clear()
    apply(
        cluster,
        kubectl_cache,
        namespace(ns),
        flavor(rf),
        cluster_queue(cq, rf, "cpu", 4),
        local_queue(ns, "lq", cq),
        workload(ns, "w", "lq", {"cpu": 1}),
    )
    await eventually(
        lambda: _known(controller, f"{ns}/w"), "the follower's queues know the workload"
    )
    assert "status" not in await get_workload(client, ns, "w")
    assert controller.writer.writes == 0
    leader.set()
    await eventually(lambda: admitted(client, ns, "w"), "admitted once leading")

    leader.clear()
    writes = controller.writer.writes
    apply(cluster, kubectl_cache, workload(ns, "later", "lq", {"cpu": 1}))
    await eventually(
        lambda: _known(controller, f"{ns}/later"), "the follower's queues know the workload"
    )
    looks = leader.looks

    async def idle_polls() -> bool:  # several of them: a deposed leader must stay silent
        return leader.looks >= looks + 5

    await eventually(idle_polls, "five idle polls of the leadership gate")
    assert "status" not in await get_workload(client, ns, "later")
    assert controller.writer.writes == writes
    leader.set()
    await eventually(lambda: admitted(client, ns, "later"), "admitted once leading again")


async def test_workload_without_local_queue_is_inadmissible_until_it_exists(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, controller: AdmissionController
) -> None:
    s = suffix()
    ns, rf, cq = f"nolq-{s}", f"rf-{s}", f"cq-{s}"
    apply(
        cluster,
        kubectl_cache,
        namespace(ns),
        flavor(rf),
        cluster_queue(cq, rf, "cpu", 1),
        workload(ns, "w", "lq", {"cpu": 1}),
    )
    obj = await eventually(
        lambda: pending_with(client, ns, "w", "LocalQueue lq doesn't exist"), "inadmissible"
    )
    reserved = condition(obj, "QuotaReserved")
    assert reserved is not None
    assert reserved["reason"] == "Inadmissible"
    apply(cluster, kubectl_cache, local_queue(ns, "lq", cq))
    await eventually(lambda: admitted(client, ns, "w"), "admitted once the LocalQueue exists")


async def _known(controller: AdmissionController, key: str) -> bool:
    return controller.feed.queues.pending_in_local_queue(key.split("/")[0] + "/lq") > 0


async def test_deleting_an_admitted_workload_releases_its_quota(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, controller: AdmissionController
) -> None:
    s = suffix()
    ns, rf, cq = f"del-{s}", f"rf-{s}", f"cq-{s}"
    apply(
        cluster,
        kubectl_cache,
        namespace(ns),
        flavor(rf),
        cluster_queue(cq, rf, "cpu", 1),
        local_queue(ns, "lq", cq),
        workload(ns, "first", "lq", {"cpu": 1}),
    )
    await eventually(partial(admitted, client, ns, "first"), "first admitted")
    apply(cluster, kubectl_cache, workload(ns, "second", "lq", {"cpu": 1}))
    message = (
        "couldn't assign flavors to pod set main: "
        f"insufficient unused quota for cpu in flavor {rf}, 1 more needed"
    )
    await eventually(partial(pending_with, client, ns, "second", message), "second pending")
    await client.delete(WORKLOADS, "first", ns)
    await eventually(partial(admitted, client, ns, "second"), "second admitted")
    # What was kept about the words written goes with the workload.
    assert f"{ns}/second" in controller.decisions._pending_written
    await client.delete(WORKLOADS, "second", ns)

    async def words_forgotten() -> bool:
        return f"{ns}/second" not in controller.decisions._pending_written

    await eventually(words_forgotten, "the deleted workload's words forgotten")
