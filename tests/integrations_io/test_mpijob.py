"""MPIJob (kubeflow.org/v2beta1) under kq on the simulated cluster, through the API only.

An MPIJob naming a LocalQueue is suspended by kq's webhook (``runPolicy.suspend``) and gets a
Workload with Kueue's PodSets ``launcher`` (1) and ``worker`` (replicas). Admission unsuspends
it with the flavor's node labels in both templates, mpi-operator (simulated) starts the workers
and the launcher Job on that pool, and the job finishes; a higher-priority job preempts it,
which suspends it, deletes its pods and restores its templates, and it runs again later.
"""

from __future__ import annotations

from typing import Any

from kq.api.quantity import parse_quantity
from kq.jobframework import GroupVersionKind
from kq.jobframework.naming import workload_name
from kq.runtime.resources import JOBS
from kq.sandbox.cluster.driver import MPIJOBS
from kq.sandbox.cluster.kubelet import RUN_SECONDS_ANNOTATION
from tests.controllers.helpers import condition, is_true
from tests.integrations_io.conftest import (
    FLAVOR_LABELS,
    PODSET_LABEL,
    QUEUE,
    Stack,
    eventually,
    urgent_job,
)
from tests.sandbox.manifests import mpijob

GVK = GroupVersionKind("kubeflow.org", "v2beta1", "MPIJob")
ROLE_LABEL = "training.kubeflow.org/job-role"
# the launcher and two workers of 1 CPU / 1Gi each
USAGE = {"cpu": 3, "memory": 3 * parse_quantity("1Gi")}


def templates(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The pod templates by the PodSet they belong to."""
    specs = job["spec"]["mpiReplicaSpecs"]
    return {role.lower(): specs[role]["template"] for role in ("Launcher", "Worker")}


def selector(template: dict[str, Any]) -> dict[str, str]:
    return dict((template.get("spec") or {}).get("nodeSelector") or {})


async def created_suspended(
    stack: Stack, run_seconds: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Create the MPIJob unsuspended; kq's webhook suspends it and kq makes its Workload."""
    body = mpijob("pi", workers=2)
    launcher = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    launcher["metadata"] = {"annotations": {RUN_SECONDS_ANNOTATION: str(run_seconds)}}
    assert body["spec"]["runPolicy"]["suspend"] is False
    created = await stack.create(MPIJOBS, body)
    assert created["spec"]["runPolicy"]["suspend"] is True, "the webhook did not suspend it"
    workload = await eventually(lambda: stack.workload("MPIJob", "pi"), "the Workload")
    assert workload["metadata"]["name"] == workload_name("pi", created["metadata"]["uid"], GVK)
    assert workload["metadata"]["name"].startswith("mpijob-pi-")
    assert workload["spec"]["queueName"] == QUEUE
    pod_sets = workload["spec"]["podSets"]
    assert [(p["name"], p["count"]) for p in pod_sets] == [("launcher", 1), ("worker", 2)]
    assert [p["template"]["spec"]["containers"][0]["name"] for p in pod_sets] == [
        "launcher",
        "worker",
    ]
    return created, workload


async def running(stack: Stack) -> dict[str, Any]:
    """The MPIJob once admitted and running: flavor in both templates, every pod on the pool."""

    async def probe() -> dict[str, Any]:
        job = await stack.client.get(MPIJOBS, "pi", stack.ns)
        assert job["spec"]["runPolicy"]["suspend"] is False
        assert is_true(job, "Running")
        for name, template in templates(job).items():
            assert FLAVOR_LABELS.items() <= selector(template).items(), name
            assert template["metadata"]["labels"][PODSET_LABEL] == name
        pods = await stack.pods("training.kubeflow.org/job-name=pi")
        names = sorted(p["metadata"]["name"] for p in pods)
        assert names[1:] == ["pi-worker-0", "pi-worker-1"]
        assert names[0].startswith("pi-launcher-")
        await stack.assert_running_on_the_flavor(pods)
        return job

    return await eventually(probe, "the MPIJob running on the flavor's pool")


async def finished(stack: Stack, workload_name_: str) -> None:
    """The MPIJob succeeds, its workers go, its Workload finishes and frees the quota."""

    async def succeeded() -> None:
        job = await stack.client.get(MPIJOBS, "pi", stack.ns)
        assert is_true(job, "Succeeded")
        assert job["status"]["replicaStatuses"]["Launcher"]["succeeded"] == 1

    await eventually(succeeded, "the MPIJob succeeded")

    await stack.workload_succeeded(workload_name_)

    async def workers_gone() -> None:  # cleanPodPolicy: Running
        assert await stack.pods(f"{ROLE_LABEL}=worker") == []

    await eventually(workers_gone, "the workers deleted")


async def test_mpijob_is_queued_admitted_run_and_finished(stack: Stack) -> None:
    await stack.local_queue()
    _, workload = await created_suspended(stack, run_seconds=240)

    # Without a ClusterQueue the Workload waits and the MPIJob stays suspended, with no pods.
    pending = await stack.workload("MPIJob", "pi")
    assert not is_true(pending, "QuotaReserved")
    job = await stack.client.get(MPIJOBS, "pi", stack.ns)
    assert job["spec"]["runPolicy"]["suspend"] is True
    assert await stack.pods() == []

    # 2. Admission: unsuspended with the flavor's labels; the pods run on the flavor's pool.
    await stack.cluster_queue_with_flavor(cpu="4", memory="8Gi")
    await running(stack)
    admitted = await stack.workload("MPIJob", "pi")
    assert is_true(admitted, "QuotaReserved")
    assert is_true(admitted, "Admitted")
    assignments = admitted["status"]["admission"]["podSetAssignments"]
    assert [(a["name"], a["count"], a["flavors"]) for a in assignments] == [
        (name, count, {"cpu": stack.flavor, "memory": stack.flavor})
        for name, count in (("launcher", 1), ("worker", 2))
    ]
    await stack.using(USAGE)
    await stack.announced("MPIJob", "pi", "Started")

    # 3. The job finishes: Finished, quota released, workers cleaned up.
    await finished(stack, workload["metadata"]["name"])


async def test_a_preempted_mpijob_is_restored_requeued_and_finishes_later(stack: Stack) -> None:
    high = f"high-{stack.suffix}"
    await stack.priority_class(high, 1000)
    await stack.local_queue()
    await stack.cluster_queue_with_flavor(cpu="4", memory="8Gi")
    created, workload = await created_suspended(stack, run_seconds=300)
    original = templates(created)
    await running(stack)
    await stack.using(USAGE)

    # A higher-priority Job needing 2 of the 4 CPUs preempts the MPIJob (3 CPUs).
    await stack.create(JOBS, urgent_job(high))

    async def evicted() -> None:
        job = await stack.client.get(MPIJOBS, "pi", stack.ns)
        assert job["spec"]["runPolicy"]["suspend"] is True
        assert is_true(job, "Suspended")
        assert templates(job) == original
        assert await stack.pods("training.kubeflow.org/job-name=pi") == []
        assert (await stack.client.list(JOBS, namespace=stack.ns, query=[
            ("labelSelector", "app=pi")]))["items"] == []  # fmt: skip
        wl = await stack.workload("MPIJob", "pi")
        assert "admission" not in wl["status"]
        assert not is_true(wl, "QuotaReserved")
        evicted_ = condition(wl, "Evicted")
        assert evicted_ is not None, "no Evicted condition yet"
        assert (evicted_["status"], evicted_["reason"]) == ("True", "Preempted")
        requeued = condition(wl, "Requeued")
        assert requeued is not None, "no Requeued condition yet"
        assert (requeued["status"], requeued["reason"]) == ("True", "Preempted")

    await eventually(evicted, "the MPIJob preempted, suspended, restored and requeued")
    await stack.announced("Workload", workload["metadata"]["name"], "Preempted")

    async def urgent_done() -> None:
        assert is_true(await stack.client.get(JOBS, "urgent", stack.ns), "Complete")

    await eventually(urgent_done, "the preempting Job complete")

    # Readmitted once the CPUs are free: the pods run on the flavor's pool again, then finish.
    await running(stack)
    readmitted = await stack.workload("MPIJob", "pi")
    assert readmitted["metadata"]["uid"] == workload["metadata"]["uid"]
    await finished(stack, workload["metadata"]["name"])
