"""A plain pod kq manages: gated on create, one Workload, ungated onto the flavor's nodes on
admission, finished with its pod; deleting it releases everything; pods kq must leave alone
are never gated."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from kq.runtime.errors import ApiError
from kq.runtime.resources import NAMESPACES, PODS, WORKLOAD_PRIORITY_CLASSES, WORKLOADS
from tests.controllers.helpers import is_true
from tests.controllers.helpers import priority_class as wpc
from tests.integrations_io.conftest import FLAVOR_LABELS, QUEUE_LABEL, Stack, eventually
from tests.pods.conftest import (
    GATE,
    MANAGED,
    UNMANAGED_LABEL,
    condition,
    event,
    exists,
    gates,
    get_pod,
    get_workload,
    pod,
)

FINALIZER = "kueue.x-k8s.io/managed"
PRIORITY = "kueue.x-k8s.io/priority-class"


async def test_a_single_pod_is_gated_admitted_run_and_finished(stack: Stack) -> None:
    created = await stack.create(PODS, pod("solo", seconds=120))
    assert gates(created) == [GATE]
    assert created["metadata"]["labels"][MANAGED] == "true"
    assert FINALIZER in created["metadata"]["finalizers"]
    assert len(created["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"]) == 8

    workload = await eventually(lambda: stack.workload("Pod", "solo"), "the pod's Workload")
    name = workload["metadata"]["name"]
    assert name.startswith("pod-solo-")
    owner = workload["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Pod", "solo", True)
    assert [(ps["name"], ps["count"]) for ps in workload["spec"]["podSets"]] == [("main", 1)]
    await event(stack, "Pod", "solo", "CreatedWorkload")

    async def running() -> None:
        current = await get_pod(stack, "solo")
        assert gates(current) == []
        await stack.assert_running_on_the_flavor([current])

    await eventually(running, "the pod ungated and running on the flavor")
    # The kubelet's Started events share the reason; kq's names the ClusterQueue.
    started = await event(
        stack, "Pod", "solo", "Started", f"Admitted by clusterQueue {stack.cluster_queue}"
    )
    assert started["type"] == "Normal"
    await stack.using({"cpu": 1, "memory": 100 * 2**20})

    await stack.workload_succeeded(name)

    async def released() -> None:
        done = await get_pod(stack, "solo")
        assert done["status"]["phase"] == "Succeeded"
        assert FINALIZER not in (done["metadata"].get("finalizers") or ())

    await eventually(released, "the finished pod's finalizer removed")
    await event(stack, "Pod", "solo", "FinishedWorkload")


async def test_deleting_a_running_pod_releases_its_workload_and_quota(stack: Stack) -> None:
    await stack.create(PODS, pod("doomed", seconds=6000))
    workload = await eventually(lambda: stack.workload("Pod", "doomed"), "the pod's Workload")
    name = workload["metadata"]["name"]
    await eventually(lambda: _running(stack, "doomed"), "the pod running")
    await stack.client.delete(PODS, "doomed", stack.ns)

    async def gone() -> None:
        assert not await exists(stack, PODS, "doomed"), "the pod is still there"
        assert not await exists(stack, WORKLOADS, name), "the Workload is still there"

    await eventually(gone, "the pod and its Workload gone")
    await stack.using({})


async def _running(stack: Stack, name: str) -> None:
    current = await get_pod(stack, name)
    assert current["status"].get("phase") == "Running", current["status"]


async def test_pods_kq_must_leave_alone_are_never_gated(stack: Stack) -> None:
    no_queue = pod("no-queue")
    del no_queue["metadata"]["labels"][QUEUE_LABEL]
    excluded = pod("excluded", labels={UNMANAGED_LABEL: "yes"})
    for body in (no_queue, excluded):
        created = await stack.create(PODS, body)
        assert gates(created) == [], body["metadata"]["name"]
        assert MANAGED not in (created["metadata"].get("labels") or {})
        assert FINALIZER not in (created["metadata"].get("finalizers") or ())

    async def ran() -> None:
        for name in ("no-queue", "excluded"):
            assert (await get_pod(stack, name))["status"].get("phase") == "Succeeded", name

    await eventually(ran, "both pods run to completion as a kubelet runs them")
    listing = await stack.client.list(WORKLOADS, namespace=stack.ns)
    assert listing.get("items") == []


async def test_the_webhook_refuses_what_upstream_refuses(stack: Stack) -> None:
    orphan_count = pod("orphan-count", annotations={"kueue.x-k8s.io/pod-group-total-count": "2"})
    with pytest.raises(ApiError) as raised:
        await stack.create(PODS, orphan_count)
    assert raised.value.status in (400, 403, 422), raised.value
    assert (
        "metadata.labels[kueue.x-k8s.io/pod-group-name]: Required value: both the "
        "'kueue.x-k8s.io/pod-group-total-count' annotation and the "
        "'kueue.x-k8s.io/pod-group-name' label should be set"
    ) in str(raised.value)

    # On create the webhook sets the label itself; changing it later is refused.
    await stack.create(PODS, pod("labelled", seconds=6000))
    patch = {"metadata": {"labels": {MANAGED: "false"}}}
    with pytest.raises(ApiError) as raised:
        await stack.client.merge_patch(PODS, "labelled", patch, namespace=stack.ns)
    assert (
        "metadata.labels[kueue.x-k8s.io/managed]: Forbidden: managed label value can only be 'true'"
    ) in str(raised.value)


async def test_workload_conditions_follow_the_pod(stack: Stack) -> None:
    """QuotaReserved and Admitted as for any job; the pod's Ready shows in its conditions."""
    await stack.create(PODS, pod("watched", seconds=6000))
    workload = await eventually(lambda: stack.workload("Pod", "watched"), "the pod's Workload")

    async def admitted() -> None:
        current = await get_workload(stack, workload["metadata"]["name"])
        assert is_true(current, "QuotaReserved")
        assert is_true(current, "Admitted")
        ready = condition(await get_pod(stack, "watched"), "Ready")
        assert ready is not None
        assert ready["status"] == "True"
        assert (
            FLAVOR_LABELS.items()
            <= (await get_pod(stack, "watched"))["spec"]["nodeSelector"].items()
        )

    await eventually(admitted, "the Workload admitted and the pod Ready")


async def test_a_namespace_the_pod_options_leave_out_is_never_gated(stack: Stack) -> None:
    """Labelled out of ``podOptions.namespaceSelector``, the namespace's pods run ungated."""
    patch = {"metadata": {"labels": {UNMANAGED_LABEL: "yes"}}}
    await stack.client.merge_patch(NAMESPACES, stack.ns, patch)

    async def ungated() -> None:
        body = {**pod("probe"), "metadata": {**pod("probe")["metadata"], "namespace": stack.ns}}
        dry = await stack.client.request(
            "POST", PODS.path(stack.ns), body=body, query=[("dryRun", "All")]
        )
        assert gates(dry) == []

    # The webhook answers from kq's Namespace informer, which sees the label a moment later.
    await eventually(ungated, "pods of the namespace no longer gated")
    created = await stack.create(PODS, pod("outside", seconds=60))
    assert gates(created) == []
    assert MANAGED not in created["metadata"]["labels"]
    await eventually(_succeeded(stack, "outside"), "the pod run to completion ungated")
    assert (await stack.client.list(WORKLOADS, namespace=stack.ns)).get("items") == []


def _succeeded(stack: Stack, name: str) -> Callable[[], Awaitable[None]]:
    async def probe() -> None:
        assert (await get_pod(stack, name))["status"].get("phase") == "Succeeded"

    return probe


async def test_a_failed_pod_fails_its_workload(stack: Stack) -> None:
    await stack.create(PODS, pod("broken", annotations={"kq.dev/exit-code": "3"}))
    workload = await eventually(lambda: stack.workload("Pod", "broken"), "the pod's Workload")

    async def failed() -> None:
        current = await get_workload(stack, workload["metadata"]["name"])
        found = condition(current, "Finished")
        assert found is not None
        assert (found["status"], found["reason"]) == ("True", "Failed")
        done = await get_pod(stack, "broken")
        assert done["status"]["phase"] == "Failed"
        assert FINALIZER not in (done["metadata"].get("finalizers") or ())

    await eventually(failed, "the Workload finished as Failed and the pod released")
    await stack.using({})


async def test_a_preempted_pod_is_stopped_and_goes_with_its_workload(stack: Stack) -> None:
    """Upstream's SkipReassignmentForPodOwnedWorkloads: not requeued, the pod is gone."""
    # Cluster-scoped: named for this test's stack.
    low, high = f"low-{stack.suffix}", f"high-{stack.suffix}"
    for name, value in ((low, 10), (high, 1000)):
        await stack.create(WORKLOAD_PRIORITY_CLASSES, wpc(name, value))
    await stack.create(PODS, pod("victim", cpu="3", seconds=6000, labels={PRIORITY: low}))
    victim = await eventually(lambda: stack.workload("Pod", "victim"), "the victim's Workload")
    await eventually(lambda: _running(stack, "victim"), "the victim running")
    await stack.create(PODS, pod("winner", cpu="3", seconds=6000, labels={PRIORITY: high}))

    # Marked TerminationTarget and deleted (the group test sees the condition: a lone pod may
    # be gone before anyone looks), with upstream's event.
    stopped = await event(stack, "Pod", "victim", "Stopped")
    assert "Preempted" in stopped["message"]

    async def gone() -> None:
        assert not await exists(stack, PODS, "victim"), "the victim is still there"
        assert not await exists(stack, WORKLOADS, victim["metadata"]["name"])
        await _running(stack, "winner")

    await eventually(gone, "the victim and its Workload gone, the winner running")
