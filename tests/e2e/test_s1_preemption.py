"""Scenario S1, priority and preemption variant, end to end: ``kq dev`` and the real kubectl.

The seed's manifests decide the order. PriorityClass ``low-priority`` has value 100 and the
multislice JobSets name no class, so they run at priority 0: the JobSet called
``low-priority`` is the *higher* of the two (the scenario's "mind the order"). So the 3-slice
JobSet fills the queue first, and ``low-priority`` then preempts it. Every "Expect" of the
variant is checked on the way: the Workload conditions with Kueue's reasons, the JobSet
suspended and its pods gone, the quota released, the requeue, no preemption back by the
lower priority, and the readmission once the chips are free again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from tests.e2e.explained import explain, missing
from tests.e2e.kqdev import KubectlSession, kq_dev_on
from tests.harness import REPO, Cluster, wait_until

EXAMPLES = REPO / "examples" / "s1"
LOW_PRIORITY = EXAMPLES / "low-priority-jobset-standard.yaml"
SPEED = 10  # the JobSets' `sleep 60` lasts 6 s: long enough to watch, short enough to wait for
STEP_TIMEOUT_S = 30.0
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
POOL_LABEL = "cloud.google.com/gke-nodepool"
TPU = "google.com/tpu"
T = TypeVar("T")

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Sandbox(KubectlSession):
    """A running ``kq dev --profile s1``, driven with the real kubectl."""

    backend: str

    def jobset(self, path: Path, name: str) -> str:
        """The JobSet ``name`` of ``path``, as this backend admits it: the real kube-apiserver
        of the tests runs without --allow-privileged, which only the TPU containers ask."""
        document = jobset_document(path, name)
        if self.backend == "real":
            return document.replace("privileged: true", "privileged: false")
        return document

    def workloads(self) -> dict[str, dict[str, Any]]:
        """Workloads by the name of the JobSet that owns them."""
        items = self.get("workloads", "-n", "default")["items"]
        return {wl["metadata"]["ownerReferences"][0]["name"]: wl for wl in items}

    def pods(self, jobset: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.get("pods", "-n", "default", "-l",
                                               f"{JOBSET_LABEL}={jobset}")["items"]  # fmt: skip
        return items

    def events(self, kind: str, name: str) -> list[tuple[str, str]]:
        items = self.get("events", "-n", "default")["items"]
        return [
            (e["reason"], e["message"])
            for e in items
            if (e["involvedObject"]["kind"], e["involvedObject"]["name"]) == (kind, name)
        ]

    def chips_in_use(self) -> int:
        status = self.get("clusterqueue", "cluster-queue").get("status") or {}
        usage = status.get("flavorsUsage") or []
        return sum(int(r["total"]) for f in usage for r in f["resources"])


@pytest.fixture(scope="module")
def sandbox(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    work = tmp_path_factory.mktemp(f"s1-preemption-{cluster.backend}")
    with kq_dev_on(cluster, work, "s1", SPEED) as kubeconfig:
        yield Sandbox(kubeconfig, work / "kubectl-cache", cluster.backend)


def until(what: str, check: Callable[[], T | None]) -> T:
    """``check``'s first truthy value; fails after ``STEP_TIMEOUT_S``."""
    return wait_until(check, what, within=STEP_TIMEOUT_S)


def condition(workload: dict[str, Any], kind: str) -> dict[str, Any]:
    for item in (workload.get("status") or {}).get("conditions") or ():
        if item["type"] == kind:
            return dict(item)
    return {}


def is_true(workload: dict[str, Any] | None, kind: str) -> bool:
    return workload is not None and condition(workload, kind).get("status") == "True"


def running_pods(sandbox: Sandbox, jobset: str, count: int) -> list[dict[str, Any]] | None:
    pods = [
        p
        for p in sandbox.pods(jobset)
        if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    ]
    return pods if len(pods) == count else None


def jobset_document(path: Path, name: str) -> str:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return yaml.safe_dump(next(d for d in docs if d["metadata"]["name"] == name))


def chips(jobset: str) -> int:
    """The TPU chips a JobSet asks for: per replicated job, replicas x pods x chips per pod."""
    spec = yaml.safe_load(jobset)["spec"]
    total = 0
    for replicated in spec["replicatedJobs"]:
        job = replicated["template"]["spec"]
        per_pod = sum(
            int(c["resources"]["limits"].get(TPU, 0)) for c in job["template"]["spec"]["containers"]
        )
        total += replicated["replicas"] * job["parallelism"] * per_pod
    return total


def tpu_quota() -> int:
    """cluster-queue's nominal TPU chips in flavor vlp-24, from the corrected manifest."""
    docs = yaml.safe_load_all((EXAMPLES / "kueue-preemption-corrected.yaml").read_text())
    [cq] = [d for d in docs if d["kind"] == "ClusterQueue"]
    [group] = cq["spec"]["resourceGroups"]
    [flavor] = group["flavors"]
    [tpu] = flavor["resources"]
    assert (flavor["name"], tpu["name"]) == ("vlp-24", TPU)
    return int(tpu["nominalQuota"])


def test_a_higher_priority_jobset_preempts_and_the_victim_is_readmitted(sandbox: Sandbox) -> None:
    started = time.monotonic()
    quota = tpu_quota()
    # The published kueue-preemption.yaml is not valid YAML; the corrected copy is its intent.
    sandbox.kubectl("apply", "-f", str(EXAMPLES / "priority-class.yaml"))
    sandbox.kubectl("apply", "-f", str(EXAMPLES / "kueue-preemption-corrected.yaml"))
    cq = sandbox.get("clusterqueue", "cluster-queue")
    assert cq["spec"]["preemption"] == {
        "reclaimWithinCohort": "Any",
        "withinClusterQueue": "LowerPriority",
        **{k: v for k, v in cq["spec"]["preemption"].items() if k == "borrowWithinCohort"},
    }

    # The queue full: the 3-slice JobSet (priority 0) holds all 24 chips and runs 6 pods.
    three = sandbox.jobset(EXAMPLES / "jobsets-multislice-standard.yaml", "multislice-3slice")
    sandbox.kubectl("apply", "-f", "-", input=three)
    until("multislice-3slice runs 6 pods", lambda: running_pods(sandbox, "multislice-3slice", 6))
    victim = sandbox.workloads()["multislice-3slice"]
    assert is_true(victim, "Admitted")
    assert victim["spec"]["priority"] == 0
    # ClusterQueue status is written in batches (1 s, as Kueue), so it is waited for too.
    until("cluster-queue uses 24 chips", lambda: sandbox.chips_in_use() == 24)

    # `low-priority` (PriorityClass value 100) needs 8 of those chips.
    low = sandbox.jobset(LOW_PRIORITY, "low-priority")
    sandbox.kubectl("apply", "-f", "-", input=low)

    def victim_stopped() -> dict[str, Any] | None:
        wl = sandbox.workloads()["multislice-3slice"]
        if not (is_true(wl, "Evicted") and condition(wl, "QuotaReserved").get("status") == "False"):
            return None
        jobset = sandbox.get("jobset", "multislice-3slice", "-n", "default")
        if not jobset["spec"].get("suspend") or sandbox.pods("multislice-3slice"):
            return None
        return wl

    victim = until("multislice-3slice is evicted, suspended and its pods gone", victim_stopped)
    evicted, preempted = condition(victim, "Evicted"), condition(victim, "Preempted")
    assert evicted["reason"] == "Preempted"
    assert (preempted["status"], preempted["reason"]) == ("True", "InClusterQueue")
    preemptor = sandbox.workloads()["low-priority"]
    assert evicted["message"].startswith(
        f"Preempted to accommodate a workload (UID: {preemptor['metadata']['uid']}, JobUID: "
    )
    assert "due to prioritization in the ClusterQueue" in evicted["message"]
    assert preempted["message"] == evicted["message"]
    # Quota released and requeued at once (Kueue requeues preempted Workloads immediately).
    assert "admission" not in victim["status"]
    requeued = condition(victim, "Requeued")
    assert (requeued["status"], requeued["reason"]) == ("True", "Preempted")
    assert ("Preempted", evicted["message"]) in sandbox.events(
        "Workload", victim["metadata"]["name"]
    )
    assert ("Stopped", evicted["message"]) in sandbox.events("JobSet", "multislice-3slice")

    # The preemptor runs on the freed chips: one slice, both pods on one node pool.
    pods = until("low-priority runs 2 pods", lambda: running_pods(sandbox, "low-priority", 2))
    nodes = {n["metadata"]["name"]: n for n in sandbox.get("nodes")["items"]}
    pools = {nodes[p["spec"]["nodeName"]]["metadata"]["labels"][POOL_LABEL] for p in pods}
    assert len(pools) == 1
    preemptor = sandbox.workloads()["low-priority"]
    assert is_true(preemptor, "Admitted")
    spec = preemptor["spec"]
    # kubectl reads v1beta2, as against Kueue v0.19: the class is a reference there. On a real
    # kube-apiserver, under the CRDs kq dev installs (no conversion webhook), the Workload
    # keeps its priority but carries no class at all: a known gap, not asserted there.
    if sandbox.backend != "real":
        ref = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "low-priority"}
        assert spec["priorityClassRef"] == ref
    assert spec["priority"] == 100

    def counts() -> tuple[int, int, int]:
        status = sandbox.get("clusterqueue", "cluster-queue")["status"]
        return status["admittedWorkloads"], status["pendingWorkloads"], sandbox.chips_in_use()

    # Quota released: only the preemptor's 8 chips are in use, the victim pending.
    until("cluster-queue shows 1 admitted, 1 pending, 8 chips", lambda: counts() == (1, 1, 8))

    # The victim waits: priority 0 never preempts 100 under LowerPriority. Its eviction's
    # words stay until the new wait has lasted a second; then it says what it misses.
    def short_of_chips() -> dict[str, Any] | None:
        waiting = sandbox.workloads()["multislice-3slice"]
        said = condition(waiting, "QuotaReserved")
        short = "insufficient unused quota for google.com/tpu in flavor vlp-24"
        return waiting if said["status"] == "False" and short in said["message"] else None

    waiting = until("the victim's words say what it misses", short_of_chips)
    # explain names the flavor, the resource and how many chips it misses: all of the
    # quota it needs but the preemptor's.
    needs, holds = chips(three), chips(low)
    free = quota - holds
    said = explain(sandbox.env, "default", waiting["metadata"]["name"])
    assert missing(said) == {("vlp-24", "google.com/tpu"): (needs - free, needs, free)}, said
    lp = f"default/{preemptor['metadata']['name']} {holds} (priority 100)"
    assert f"held in cluster-queue by: {lp}" in said, said

    # When low-priority finishes, the 3-slice JobSet is admitted again and runs.
    until("multislice-3slice is readmitted",
          lambda: is_true(sandbox.workloads()["multislice-3slice"], "Admitted"))  # fmt: skip
    workloads = sandbox.workloads()
    assert is_true(workloads["low-priority"], "Finished")
    assert condition(workloads["low-priority"], "Evicted") == {}, "low-priority was preempted"
    readmitted = workloads["multislice-3slice"]
    assert condition(readmitted, "Evicted")["status"] == "False"
    until("multislice-3slice runs 6 pods again",
          lambda: running_pods(sandbox, "multislice-3slice", 6))  # fmt: skip
    assert sandbox.get("jobset", "multislice-3slice", "-n", "default")["spec"]["suspend"] is False
    until("cluster-queue uses 24 chips again", lambda: sandbox.chips_in_use() == 24)

    # Issue: one FinishedWorkload per finished Workload, however many reconciles ran.
    finished = [r for r, _ in sandbox.events("JobSet", "low-priority") if r == "FinishedWorkload"]
    assert finished == ["FinishedWorkload"]
    assert time.monotonic() - started < 60
