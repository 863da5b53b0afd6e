"""Kueue's documented shapes apply unchanged to ``kq dev``, in both versions, and their jobs run.

The manifests in ``tests/e2e/kueue_docs/`` are ours, written in the shapes of Kueue v0.19's site
examples (the single-ClusterQueue setup, the sample Job, JobSet, MPIJob and RayJob, the
topology-aware scheduling queues and its "required topology" Job), applied with the real
kubectl. On both backends: ``kq dev`` with its own embedded API server, or ``kq dev
--kubeconfig`` on the shared real kube-apiserver, from which each test removes what it created
when it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.e2e.kqdev import KubectlSession, kq_dev_on
from tests.harness import Cluster, wait_until

DOCS = Path(__file__).parent / "kueue_docs"
SPEED = 20
STEP_TIMEOUT_S = 40.0
RACK = "cloud.provider.com/topology-rack"
T = TypeVar("T")

pytestmark = pytest.mark.slow


class Kubectl(KubectlSession):
    def create_job(self, path: Path, queue: str | None = None) -> str:
        text = path.read_text()
        if queue is not None:
            text = text.replace("QUEUE", queue)
        return self("create", "-f", "-", "-o", "name", input=text).strip().split("/")[-1]


def until(what: str, check: Callable[[], T | None]) -> T:
    """``check``'s first truthy value; fails after ``STEP_TIMEOUT_S``."""
    return wait_until(check, what, within=STEP_TIMEOUT_S)


def complete(kubectl: Kubectl, job: str) -> bool:
    conditions = kubectl.get("job", job).get("status", {}).get("conditions") or ()
    return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions)


def workload_of(kubectl: Kubectl, job: str, version: str = "v1beta1") -> dict[str, Any] | None:
    items = kubectl.get(f"workloads.{version}.kueue.x-k8s.io")["items"]
    return next((w for w in items if w["metadata"]["ownerReferences"][0]["name"] == job), None)


@pytest.fixture
def cpu_cluster(cluster: Cluster, tmp_path: Path) -> Iterator[Kubectl]:
    with kq_dev_on(cluster, tmp_path, "s4", SPEED) as kubeconfig:
        yield Kubectl(kubeconfig, tmp_path / "kubectl-cache")


@pytest.fixture
def tas_cluster(cluster: Cluster, tmp_path: Path) -> Iterator[Kubectl]:
    with kq_dev_on(cluster, tmp_path, str(DOCS / "tas-profile.yaml"), SPEED) as kubeconfig:
        yield Kubectl(kubeconfig, tmp_path / "kubectl-cache")


def test_the_single_queue_setup_applies_in_both_versions_and_its_jobs_run(
    cpu_cluster: Kubectl,
) -> None:
    kubectl = cpu_cluster
    for version in ("v1beta2", "v1beta1"):
        kubectl("apply", "-f", str(DOCS / f"single-queue-{version}.yaml"))
    # Each reads back in the other version: one object, two API versions.
    for name in ("docs-queue", "docs-queue-b1"):
        for version in ("v1beta1", "v1beta2"):
            cq = kubectl.get(f"clusterqueues.{version}.kueue.x-k8s.io", name)
            assert cq["apiVersion"] == f"kueue.x-k8s.io/{version}"
            assert cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["name"] == "cpu"
    jobs = [
        kubectl.create_job(DOCS / "sample-job.yaml", "docs-user-queue"),
        kubectl.create_job(DOCS / "sample-job.yaml", "docs-user-queue-b1"),
    ]
    for job in jobs:
        until(f"{job} completes", lambda job=job: complete(kubectl, job))  # type: ignore[misc]
        workload = workload_of(kubectl, job, "v1beta2")
        assert workload is not None
        finished = [c for c in workload["status"]["conditions"] if c["type"] == "Finished"]
        assert finished[0]["status"] == "True"


@pytest.mark.parametrize(
    ("manifest", "pod_sets"),
    [
        ("sample-jobset.yaml", ["workers", "driver"]),
        ("sample-mpijob.yaml", ["launcher", "worker"]),
        ("sample-rayjob.yaml", ["head", "small-group"]),
    ],
)
def test_the_sample_jobs_of_each_integration_run_on_the_v1beta2_setup(
    cpu_cluster: Kubectl, manifest: str, pod_sets: list[str]
) -> None:
    kubectl = cpu_cluster
    kubectl("apply", "-f", str(DOCS / "single-queue-v1beta2.yaml"))
    job = kubectl.create_job(DOCS / manifest, "docs-user-queue")

    def finished() -> dict[str, Any] | None:
        workload = workload_of(kubectl, job, "v1beta2")
        conditions = ((workload or {}).get("status") or {}).get("conditions") or ()
        done = any(c["type"] == "Finished" and c["status"] == "True" for c in conditions)
        return workload if done else None

    workload = until(f"{manifest}'s Workload finishes", finished)
    assert [p["name"] for p in workload["spec"]["podSets"]][: len(pod_sets)] == pod_sets
    [finish] = [c for c in workload["status"]["conditions"] if c["type"] == "Finished"]
    assert finish["reason"] == "Succeeded", finish


def test_the_topology_setup_puts_a_required_rack_job_in_one_rack(tas_cluster: Kubectl) -> None:
    kubectl = tas_cluster
    kubectl("apply", "-f", str(DOCS / "tas-queues.yaml"))
    assert kubectl.get("topologies.v1beta2.kueue.x-k8s.io", "docs-topology")["spec"]["levels"][
        1
    ] == {"nodeLabel": RACK}
    job = kubectl.create_job(DOCS / "tas-job-required.yaml")
    workload = until("the Job's Workload is admitted with a topology",
                     lambda: _placed(kubectl, job))  # fmt: skip
    topology = workload["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert topology["levels"] == [RACK, "kubernetes.io/hostname"]
    assert len({d["values"][0] for d in topology["domains"]}) == 1  # one rack
    assert sum(d["count"] for d in topology["domains"]) == 10
    assert all(d["count"] <= 4 for d in topology["domains"])  # a node holds 4 one-CPU pods
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"] for n in kubectl.get("nodes")["items"]}

    def bound_racks() -> set[str] | None:
        pods = [p for p in kubectl.get("pods")["items"]
                if p["metadata"]["name"].startswith(job) and p["spec"].get("nodeName")]  # fmt: skip
        return {nodes[p["spec"]["nodeName"]][RACK] for p in pods} if len(pods) == 10 else None

    racks = until("all ten pods are bound", bound_racks)
    assert racks == {topology["domains"][0]["values"][0]}
    until(f"{job} completes", lambda: complete(kubectl, job))


def _placed(kubectl: Kubectl, job: str) -> dict[str, Any] | None:
    workload = workload_of(kubectl, job)
    if workload is None or not (workload.get("status") or {}).get("admission"):
        return None
    return workload
