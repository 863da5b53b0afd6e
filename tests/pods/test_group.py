"""Pod groups: one Workload per group once all its pods exist, admitted and run together,
finished together; preempted as a whole (each pod marked ``TerminationTarget`` and deleted),
then waiting for replacement pods; a deleted Workload stops and releases every pod; pods
beyond the group's size are deleted."""

from __future__ import annotations

from typing import Any

from kq.runtime.resources import PODS, WORKLOAD_PRIORITY_CLASSES, WORKLOADS
from tests.controllers.helpers import condition as wl_condition
from tests.controllers.helpers import is_true, workload
from tests.integrations_io.conftest import Stack, eventually
from tests.pods.conftest import (
    GATE,
    PRIORITY_LABEL,
    condition,
    event,
    exists,
    gates,
    get_pod,
    get_workload,
    group_pod,
    pod,
)

FINALIZER = "kueue.x-k8s.io/managed"


async def _pods(stack: Stack, names: list[str]) -> list[dict[str, Any]]:
    return [await get_pod(stack, name) for name in names]


async def test_a_group_waits_for_all_its_pods_then_runs_and_finishes(stack: Stack) -> None:
    names = ["g-0", "g-1", "g-2"]
    for name in names[:2]:
        created = await stack.create(PODS, group_pod(name, "trio", 3, seconds=120))
        assert gates(created) == [GATE]
    # Upstream's Warning, on the group's first pod, until the third arrives.
    warning = await event(stack, "Pod", "g-0", "ErrWorkloadCompose")
    assert warning["type"] == "Warning"
    assert warning["message"] == "'trio' group has fewer runnable pods than expected"
    assert not await exists(stack, WORKLOADS, "trio")
    assert all(gates(p) == [GATE] for p in await _pods(stack, names[:2]))

    await stack.create(PODS, group_pod(names[2], "trio", 3, seconds=120))
    workload = await eventually(lambda: get_workload(stack, "trio"), "the group's Workload")
    assert workload["metadata"]["annotations"]["kueue.x-k8s.io/is-group-workload"] == "true"
    owners = workload["metadata"]["ownerReferences"]
    assert sorted(o["name"] for o in owners) == names
    assert not any(o.get("controller") for o in owners)
    pod_sets = workload["spec"]["podSets"]
    assert len(pod_sets) == 1
    assert pod_sets[0]["count"] == 3
    assert len(pod_sets[0]["name"]) == 8  # the pods' role hash

    async def running() -> None:
        pods = await _pods(stack, names)
        assert all(gates(p) == [] for p in pods)
        await stack.assert_running_on_the_flavor(pods)

    await eventually(running, "every pod of the group ungated and running")
    for name in names:
        await event(
            stack, "Pod", name, "Started", f"Admitted by clusterQueue {stack.cluster_queue}"
        )

    async def finished() -> None:
        done = await get_workload(stack, "trio")
        found = wl_condition(done, "Finished")
        assert found is not None
        assert (found["status"], found["reason"], found["message"]) == (
            "True",
            "Succeeded",
            "Pods succeeded: 3/3.",
        )
        for current in await _pods(stack, names):
            assert FINALIZER not in (current["metadata"].get("finalizers") or ())

    await eventually(finished, "the group finished and its pods released")
    await stack.using({})


async def test_a_group_is_preempted_as_a_whole(stack: Stack) -> None:
    # Cluster-scoped: named for this test's stack.
    low, high = f"low-{stack.suffix}", f"high-{stack.suffix}"
    await stack.create(WORKLOAD_PRIORITY_CLASSES, _priority(low, 10))
    await stack.create(WORKLOAD_PRIORITY_CLASSES, _priority(high, 1000))
    names = ["low-0", "low-1"]
    for name in names:
        await stack.create(
            PODS, group_pod(name, "low", 2, cpu="2", seconds=6000, labels={PRIORITY_LABEL: low})
        )

    async def low_running() -> None:
        await stack.assert_running_on_the_flavor(await _pods(stack, names))

    await eventually(low_running, "the low-priority group running")
    await stack.create(PODS, pod("urgent", cpu="3", seconds=180, labels={PRIORITY_LABEL: high}))

    async def evicted() -> None:
        workload = await get_workload(stack, "low")
        found = wl_condition(workload, "Evicted")
        assert found is not None
        assert (found["status"], found["reason"]) == ("True", "Preempted")
        assert not is_true(workload, "QuotaReserved")
        requeued = wl_condition(workload, "Requeued")
        assert requeued is not None
        assert (requeued["status"], requeued["reason"]) == ("True", "Preempted")

    await eventually(evicted, "the group's Workload evicted and requeued")
    for name in names:
        await event(stack, "Pod", name, "Stopped")

    async def stopped() -> None:
        for current in await _pods(stack, names):
            target = condition(current, "TerminationTarget")
            assert target is not None
            assert (target["status"], target["reason"]) == ("True", "WorkloadEvictedDueToPreempted")
            assert current["metadata"].get("deletionTimestamp")

    await eventually(stopped, "each pod of the group marked and deleted")
    urgent = await eventually(lambda: stack.workload("Pod", "urgent"), "the urgent Workload")
    assert is_true(await get_workload(stack, urgent["metadata"]["name"]), "Admitted")

    async def waiting() -> None:
        found = wl_condition(await get_workload(stack, "low"), "WaitingForReplacementPods")
        assert found is not None
        assert (found["status"], found["reason"]) == ("True", "Preempted")

    await eventually(waiting, "the group's Workload waiting for replacement pods")
    # Replacements (as a controller would create them) take the preempted pods' places: those
    # lose their finalizer and go; the group runs again once the urgent pod is done.
    replacements = ["low-2", "low-3"]
    for name in replacements:
        await stack.create(
            PODS, group_pod(name, "low", 2, cpu="2", seconds=6000, labels={PRIORITY_LABEL: low})
        )

    async def replaced() -> None:
        for name in names:
            assert not await exists(stack, PODS, name), f"{name} still exists"
        found = wl_condition(await get_workload(stack, "low"), "WaitingForReplacementPods")
        assert found is not None
        assert (found["status"], found["reason"], found["message"]) == (
            "False",
            "PodsReady",
            "No pods need replacement",
        )
        await stack.assert_running_on_the_flavor(await _pods(stack, replacements))

    await eventually(replaced, "the replacements running in the preempted pods' places")
    # Each replacement became an owner as it arrived, so the Workload outlived the old pods.
    added = await event(stack, "Workload", "low", "OwnerReferencesAdded")
    assert added["message"] in ("Added 1 owner reference(s)", "Added 2 owner reference(s)")
    owners = (await get_workload(stack, "low"))["metadata"]["ownerReferences"]
    assert set(replacements) <= {o["name"] for o in owners}


async def test_deleting_a_group_workload_stops_and_releases_its_pods(stack: Stack) -> None:
    names = ["d-0", "d-1"]
    for name in names:
        await stack.create(PODS, group_pod(name, "duo", 2, seconds=6000))

    async def running() -> None:
        await stack.assert_running_on_the_flavor(await _pods(stack, names))

    await eventually(running, "the group running")
    await stack.client.delete(WORKLOADS, "duo", stack.ns)

    async def released() -> None:
        for name in names:
            assert not await exists(stack, PODS, name), f"{name} still exists"
        assert not await exists(stack, WORKLOADS, "duo"), "the Workload still exists"

    await eventually(released, "every pod stopped, finalized and gone, and the Workload gone")
    await stack.using({})


def _priority(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


async def test_pods_beyond_the_group_size_are_deleted(stack: Stack) -> None:
    for name in ("x-0", "x-1", "x-2"):
        await stack.create(PODS, group_pod(name, "pair", 2, seconds=6000))

    async def trimmed() -> None:
        assert not await exists(stack, PODS, "x-2"), "the newest pod is still there"
        workload = await get_workload(stack, "pair")
        assert [ps["count"] for ps in workload["spec"]["podSets"]] == [2]

    await eventually(trimmed, "the excess pod deleted and a Workload for two")
    await event(stack, "Pod", "x-2", "ExcessPodDeleted", "Excess pod deleted")


async def test_a_group_named_like_someone_elses_workload_is_refused(stack: Stack) -> None:
    # Held by the ClusterQueue's quota in no way: the other Workload names no existing queue.
    other = workload(stack.ns, "taken", "nowhere", {"cpu": "1"})
    await stack.create(WORKLOADS, other)
    for name in ("t-0", "t-1"):
        await stack.create(PODS, group_pod(name, "taken", 2))
    warning = await event(stack, "Pod", "t-0", "WorkloadNameConflict")
    assert warning["type"] == "Warning"
    assert warning["message"] == (
        'A Workload named "taken" already exists but is not a pod group workload; '
        "this pod group cannot be admitted"
    )
    kept = await get_workload(stack, "taken")
    assert kept["spec"]["queueName"] == "nowhere"
    assert all(gates(p) == [GATE] for p in await _pods(stack, ["t-0", "t-1"]))


async def test_a_fast_admission_group_starts_with_its_first_pod(stack: Stack) -> None:
    fast = {"kueue.x-k8s.io/pod-group-fast-admission": "true"}
    names = ["f-0", "f-1", "f-2"]
    await stack.create(PODS, group_pod(names[0], "fast", 3, seconds=600, annotations=fast))
    # Admitted for the whole group (3 CPUs of 4) before the other pods exist.
    workload = await eventually(lambda: get_workload(stack, "fast"), "the group's Workload")
    [pod_set] = workload["spec"]["podSets"]
    assert pod_set["count"] == 3

    async def first_running() -> None:
        assert is_true(await get_workload(stack, "fast"), "Admitted")
        assert gates(await get_pod(stack, names[0])) == []

    await eventually(first_running, "the first pod ungated once the Workload is admitted")
    await stack.using({"cpu": 3, "memory": 300 * 2**20})
    for name in names[1:]:
        await stack.create(PODS, group_pod(name, "fast", 3, seconds=600, annotations=fast))

    async def all_running() -> None:
        pods = await _pods(stack, names)
        assert all(gates(p) == [] for p in pods)
        await stack.assert_running_on_the_flavor(pods)

    await eventually(all_running, "each later pod ungated as it comes")
    current = await get_workload(stack, "fast")
    assert condition(current, "WaitingForReplacementPods") is None
    assert sorted(o["name"] for o in current["metadata"]["ownerReferences"]) == names
