"""LeaderWorkerSets under kq (framework ``leaderworkerset.x-k8s.io/leaderworkerset``): one
Workload per group with pod sets leader and worker, a group ungated as one, preempted as one,
scaled, deleted."""

from __future__ import annotations

from typing import Any

from kq.runtime.resources import EVENTS, JOBS, WORKLOADS
from kq.sandbox.cluster.serving import LEADERWORKERSETS
from tests.integrations_io.conftest import QUEUE, QUEUE_LABEL, Stack, eventually, urgent_job
from tests.serving.conftest import (
    GATE,
    PARENT,
    PRIORITY_LABEL,
    condition,
    gates,
    live,
    scale,
    server_template,
)

MIB = 2**20
SET_LABEL = "leaderworkerset.sigs.k8s.io/name"


def lws(name: str, replicas: int, size: int, **labels: str) -> dict[str, Any]:
    leader = server_template(name)
    worker = server_template(name)
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "labels": {QUEUE_LABEL: QUEUE, **labels}},
        "spec": {"replicas": replicas,
                 "leaderWorkerTemplate": {"size": size,
                                          "restartPolicy": "RecreateGroupOnPodRestart",
                                          "leaderTemplate": leader, "workerTemplate": worker}},
    }  # fmt: skip


async def set_pods(stack: Stack, name: str) -> list[dict[str, Any]]:
    return live(await stack.pods(f"{SET_LABEL}={name}"))


async def group_workloads(stack: Stack, name: str) -> dict[str, dict[str, Any]]:
    listing = await stack.client.list(WORKLOADS, namespace=stack.ns)
    prefix = f"leaderworkerset-{name}-"
    return {
        w["metadata"]["name"]: w
        for w in listing.get("items") or ()
        if w["metadata"]["name"].startswith(prefix)
    }


async def groups_running(stack: Stack, name: str, groups: int, size: int) -> dict[str, Any]:
    """Until ``groups`` groups of ``size`` pods run ungated, each with an admitted Workload."""

    async def probe() -> dict[str, Any]:
        pods = await set_pods(stack, name)
        up = [p for p in pods if not gates(p) and p["status"].get("phase") == "Running"]
        assert (len(up), len(pods)) == (groups * size, groups * size), [
            (p["metadata"]["name"], gates(p), p["status"].get("phase")) for p in pods
        ]
        workloads = await group_workloads(stack, name)
        assert len(workloads) == groups, sorted(workloads)
        for workload in workloads.values():
            admitted = condition(workload, "Admitted")
            assert admitted is not None
            assert admitted["status"] == "True"
        return workloads

    return await eventually(probe, f"{groups} groups of {name} running", within=90)


async def resize(stack: Stack, name: str, replicas: int) -> None:
    await scale(stack, name, replicas, LEADERWORKERSETS)


async def test_one_workload_per_group_with_leader_and_worker_pod_sets(stack: Stack) -> None:
    created = await stack.create(LEADERWORKERSETS, lws("llm", 2, 2))
    for key in ("leaderTemplate", "workerTemplate"):
        template = created["spec"]["leaderWorkerTemplate"][key]["metadata"]
        assert template["annotations"][PARENT] == "leaderworkerset.x-k8s.io/leaderworkerset"
        assert template["annotations"]["kueue.x-k8s.io/pod-group-serving"] == "true"
        assert template["labels"][QUEUE_LABEL] == QUEUE
    workloads = await groups_running(stack, "llm", 2, 2)
    for index in ("0", "1"):
        [workload] = [
            w for n, w in workloads.items() if n.startswith(f"leaderworkerset-llm-{index}-")
        ]
        assert [(ps["name"], ps["count"]) for ps in workload["spec"]["podSets"]] == [
            ("leader", 1),
            ("worker", 1),
        ]
    await stack.assert_running_on_the_flavor(await set_pods(stack, "llm"))
    await stack.using({"cpu": 4, "memory": 400 * MIB})


async def test_a_group_that_does_not_fit_waits_gated(stack: Stack) -> None:
    await stack.create(LEADERWORKERSETS, lws("llm", 3, 2))  # 6 CPUs wanted, 4 in the queue

    async def probe() -> None:
        workloads = await group_workloads(stack, "llm")
        assert len(workloads) == 3
        reasons = [(condition(w, "QuotaReserved") or {}).get("reason") for w in workloads.values()]
        waiting = [r for r in reasons if r == "WaitingForQuota"]
        assert len(waiting) == 1
        pods = await set_pods(stack, "llm")
        assert len([p for p in pods if gates(p) == [GATE]]) == 2

    await eventually(probe, "two groups running, the third gated and pending", 90)
    await stack.using({"cpu": 4, "memory": 400 * MIB})


async def test_preemption_stops_a_group_as_one(stack: Stack) -> None:
    low, high = f"low-{stack.suffix}", f"high-{stack.suffix}"
    await stack.priority_class(low, 10)
    await stack.priority_class(high, 1000)
    await stack.create(LEADERWORKERSETS, lws("llm", 2, 2, **{PRIORITY_LABEL: low}))
    await groups_running(stack, "llm", 2, 2)
    urgent = urgent_job(high, cpu="2")
    # It must outlast the test: once it ends the group is admitted again.
    urgent["spec"]["template"]["spec"]["containers"][0]["command"] = ["sh", "-c", "sleep 100000"]
    await stack.create(JOBS, urgent)

    async def probe() -> str:
        urgent = await stack.workload("Job", "urgent")
        assert (condition(urgent, "Admitted") or {}).get("status") == "True"
        # The stopped group's pods were told why.
        listing = await stack.client.list(EVENTS, namespace=stack.ns)
        stopped = {
            e["involvedObject"]["name"]
            for e in listing.get("items") or ()
            if e["involvedObject"].get("kind") == "Pod"
            and e.get("reason") == "Stopped"
            and "Preempted to accommodate a workload" in e.get("message", "")
        }
        # The leader at least: its workers may go with it first (the set owns them through it).
        assert stopped & {"llm-0", "llm-1"}, stopped
        assert stopped <= {"llm-0", "llm-0-1"} or stopped <= {"llm-1", "llm-1-1"}, stopped
        return "0" if "llm-0" in stopped else "1"

    index = await eventually(probe, "one group preempted, the Job admitted", 90)
    await stack.using({"cpu": 4, "memory": 2**30 + 200 * MIB})
    owner = await stack.client.get(LEADERWORKERSETS, "llm", stack.ns)

    async def recreated() -> dict[str, Any]:
        # The set makes the stopped group again; it waits, gated, for quota, under the same
        # Workload: the set owns it (as upstream's), so it outlived the group's pods and
        # keeps why it was evicted.
        pods = await set_pods(stack, "llm")
        assert sorted(len(gates(p)) for p in pods) == [0, 0, 1, 1], pods
        [kept] = [
            w
            for n, w in (await group_workloads(stack, "llm")).items()
            if n.startswith(f"leaderworkerset-llm-{index}-")
        ]
        owners = kept["metadata"]["ownerReferences"]
        assert {"LeaderWorkerSet": owner["metadata"]["uid"]}.items() <= {
            o["kind"]: o["uid"] for o in owners
        }.items()
        evicted = condition(kept, "Evicted") or {}
        assert (evicted.get("status"), evicted.get("reason")) == ("True", "Preempted")
        preempted = condition(kept, "Preempted") or {}
        assert (preempted.get("status"), preempted.get("reason")) == ("True", "InClusterQueue")
        assert preempted["message"].startswith("Preempted to accommodate a workload (UID: ")
        assert (condition(kept, "QuotaReserved") or {}).get("status") == "False"
        return kept

    kept = await eventually(recreated, "the preempted group back and gated, its Workload kept", 90)
    # The Job gone, the same Workload is admitted again and the group runs.
    # Background propagation, as kubectl's: a Job's default orphans its pods and Workload.
    await stack.client.request("DELETE", JOBS.path(stack.ns, "urgent"),
                               body={"propagationPolicy": "Background"})  # fmt: skip
    back = await groups_running(stack, "llm", 2, 2)
    assert kept["metadata"]["uid"] in {w["metadata"]["uid"] for w in back.values()}


async def test_scale_down_and_delete_release_the_groups(stack: Stack) -> None:
    await stack.create(LEADERWORKERSETS, lws("llm", 2, 2))
    await groups_running(stack, "llm", 2, 2)
    await resize(stack, "llm", 1)
    await groups_running(stack, "llm", 1, 2)
    await stack.using({"cpu": 2, "memory": 200 * MIB})
    await resize(stack, "llm", 2)
    await groups_running(stack, "llm", 2, 2)
    await stack.client.delete(LEADERWORKERSETS, "llm", stack.ns)

    async def gone() -> None:
        assert await set_pods(stack, "llm") == []
        assert await group_workloads(stack, "llm") == {}

    await eventually(gone, "the groups and their Workloads gone", 90)
    await stack.using({})
