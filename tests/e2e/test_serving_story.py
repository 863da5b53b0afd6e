"""The serving story (examples/serving) end to end: ``kq dev --profile s1`` and the real kubectl.

An inference Deployment at high priority next to two training JobSets at low priority share
the 24 TPU chips of one ClusterQueue; a traffic spike scales the server up and preempts a
training run; scaling back down lets the training run back in. Every step of the example's
README is asserted on the manifests as they are, on both backends (``kq dev`` with its own API
server, or ``--kubeconfig`` on the shared real one, cleaned up after).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.e2e.kqdev import KubectlSession, kq_dev_on
from tests.harness import REPO, Cluster, wait_until

EXAMPLE = REPO / "examples" / "serving"
SPEED = 20
STEP_TIMEOUT_S = 60.0
GATE = "kueue.x-k8s.io/admission"
TPU = "google.com/tpu"
T = TypeVar("T")
Obj = dict[str, Any]

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Sandbox(KubectlSession):
    def workloads(self) -> list[Obj]:
        # At v1beta1 on both backends (their preferred versions differ).
        items = self.get("workloads.v1beta1.kueue.x-k8s.io", "-n", "default")["items"]
        return list(items)

    def used_chips(self) -> str:
        status = self.get("clusterqueue", "tpu-fleet").get("status") or {}
        for flavor in status.get("flavorsUsage") or ():
            for resource in flavor["resources"]:
                if resource["name"] == TPU:
                    return str(resource["total"])
        return "0"


def until(what: str, check: Callable[[], T | None]) -> T:
    return wait_until(check, what, within=STEP_TIMEOUT_S)


def condition(obj: Obj | None, kind: str) -> Obj:
    for item in ((obj or {}).get("status") or {}).get("conditions") or ():
        if item["type"] == kind:
            return dict(item)
    return {}


def of_owner(workloads: list[Obj], kind: str, name: str = "") -> list[Obj]:
    return [
        w
        for w in workloads
        if any(
            o.get("kind") == kind and (not name or o.get("name") == name)
            for o in w["metadata"].get("ownerReferences") or ()
        )
    ]


def training(box: Sandbox, name: str) -> Obj:
    [found] = of_owner(box.workloads(), "JobSet", name)
    return found


def admitted(box: Sandbox, name: str) -> Callable[[], bool | None]:
    """A probe: whether JobSet ``name``'s Workload is admitted."""
    return lambda: condition(training(box, name), "Admitted").get("status") == "True" or None


def serving_pods(box: Sandbox) -> list[Obj]:
    items = box.get("pods", "-n", "default", "-l", "app=inference")["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def running_replicas(box: Sandbox, count: int) -> list[Obj] | None:
    """The replica pods once exactly ``count`` run ungated, each with an admitted Workload."""
    pods = serving_pods(box)
    up = [
        p
        for p in pods
        if not p["spec"].get("schedulingGates") and p["status"].get("phase") == "Running"
    ]
    if len(pods) != count or len(up) != count:
        return None
    admitted = [
        w for w in of_owner(box.workloads(), "Pod") if condition(w, "Admitted").get("status")
    ]
    names = {p["metadata"]["name"] for p in up}
    owners = {w["metadata"]["ownerReferences"][0]["name"] for w in admitted}
    return up if names <= owners else None


@pytest.fixture
def sandbox(cluster: Cluster, tmp_path: Path) -> Iterator[Sandbox]:
    with kq_dev_on(cluster, tmp_path, "s1", SPEED) as kubeconfig:
        box = Sandbox(kubeconfig, tmp_path / "kubectl-cache")
        try:
            yield box
        finally:
            # The real server is shared: what the story made goes (kq dev cleans up the rest).
            box.kubectl("delete", "-f", str(EXAMPLE / "inference.yaml"), "--ignore-not-found")
            for manifest in ("training", "statefulset", "leaderworkerset"):
                box.kubectl("delete", "-f", str(EXAMPLE / f"{manifest}.yaml"), "--ignore-not-found")


def test_a_traffic_spike_preempts_training_and_the_scale_down_lets_it_back(
    sandbox: Sandbox,
) -> None:
    box = sandbox
    box.kubectl("apply", "-f", str(EXAMPLE / "kueue.yaml"))
    box.kubectl("apply", "-f", str(EXAMPLE / "training.yaml"))
    for name in ("training-a", "training-b"):
        until(f"{name} admitted", admitted(box, name))
    until("16 chips in use by training", lambda: box.used_chips() == "16" or None)

    # Step 1: the server comes up on the third slice, one Workload per replica.
    box.kubectl("apply", "-f", str(EXAMPLE / "inference.yaml"))
    deployment = box.get("deployment", "inference", "-n", "default")
    template = deployment["spec"]["template"]["metadata"]
    assert template["annotations"]["kueue.x-k8s.io/pod-suspending-parent"] == "deployment"
    assert template["labels"]["kueue.x-k8s.io/priority-class"] == "inference"
    until("two replicas running", lambda: running_replicas(box, 2))
    until("all 24 chips in use", lambda: box.used_chips() == "24" or None)
    for workload in of_owner(box.workloads(), "Pod"):
        assert workload["spec"]["priorityClassName"] == "inference"
        assert workload["spec"]["priority"] == 1000

    # Step 2: a traffic spike. Two more replicas need 8 chips: one training run gives way.
    box.kubectl("scale", "deployment/inference", "--replicas=4", "-n", "default")
    until("four replicas running", lambda: running_replicas(box, 4))
    evicted = until("a training run preempted", lambda: [
        w for w in of_owner(box.workloads(), "JobSet")
        if condition(w, "Preempted").get("status") == "True"
    ] or None)  # fmt: skip
    assert len(evicted) == 1
    victim = evicted[0]
    assert condition(victim, "Evicted")["reason"] == "Preempted"
    preempted = condition(victim, "Preempted")
    assert preempted["reason"] == "InClusterQueue"
    assert preempted["message"].startswith("Preempted to accommodate a workload (UID: ")
    assert "due to prioritization in the ClusterQueue" in preempted["message"]
    victim_name = victim["metadata"]["ownerReferences"][0]["name"]
    assert box.get("jobset", victim_name, "-n", "default")["spec"]["suspend"] is True
    until("the victim waits for quota", lambda: condition(training(box, victim_name),
          "QuotaReserved").get("reason") == "WaitingForQuota" or None)  # fmt: skip
    assert box.used_chips() == "24"

    # Step 3: traffic falls. The removed replicas free their chips; training resumes.
    box.kubectl("scale", "deployment/inference", "--replicas=2", "-n", "default")
    until("two replicas running", lambda: running_replicas(box, 2))
    until(f"{victim_name} admitted again", admitted(box, victim_name))
    assert box.get("jobset", victim_name, "-n", "default")["spec"]["suspend"] is False
    until("all 24 chips in use again", lambda: box.used_chips() == "24" or None)
    assert len(of_owner(box.workloads(), "Pod")) == 2


def running_admitted(box: Sandbox, selector: str, count: int, owner_kind: str) -> list[Obj] | None:
    """The Workloads owned by ``owner_kind`` once ``count`` pods of ``selector`` run ungated
    and every such Workload is admitted."""
    pods = [
        p
        for p in box.get("pods", "-n", "default", "-l", selector)["items"]
        if not p["metadata"].get("deletionTimestamp")
    ]
    up = [p for p in pods if not p["spec"].get("schedulingGates")
          and p["status"].get("phase") == "Running"]  # fmt: skip
    workloads = of_owner(box.workloads(), owner_kind)
    if len(pods) != count or len(up) != count or not workloads:
        return None
    return workloads if all(condition(w, "Admitted").get("status") == "True"
                            for w in workloads) else None  # fmt: skip


def test_kq_dev_queues_statefulsets_and_leaderworkersets(sandbox: Sandbox) -> None:
    box = sandbox
    box.kubectl("apply", "-f", str(EXAMPLE / "kueue.yaml"))
    box.kubectl("apply", "-f", str(EXAMPLE / "statefulset.yaml"))
    box.kubectl("apply", "-f", str(EXAMPLE / "leaderworkerset.yaml"))
    [sts] = until("the StatefulSet's pods running, its Workload admitted",
                  lambda: running_admitted(box, "app=cache", 2, "StatefulSet"))  # fmt: skip
    assert sts["metadata"]["name"].startswith("statefulset-cache-")
    assert [(ps["name"], ps["count"]) for ps in sts["spec"]["podSets"]] == [("main", 2)]
    assert sts["spec"]["priority"] == 1000
    group_pods = "leaderworkerset.sigs.k8s.io/name=llm"

    def group() -> list[Obj] | None:
        if running_admitted(box, group_pods, 2, "Pod") is None:
            return None
        found = [w for w in box.workloads()
                 if w["metadata"]["name"].startswith("leaderworkerset-llm-0-")]  # fmt: skip
        return found if found and condition(found[0], "Admitted").get("status") == "True" else None

    [lws] = until("the LeaderWorkerSet's group running, its Workload admitted", group)
    assert [(ps["name"], ps["count"]) for ps in lws["spec"]["podSets"]] == [
        ("leader", 1),
        ("worker", 1),
    ]
    until("16 chips in use", lambda: box.used_chips() == "16" or None)
