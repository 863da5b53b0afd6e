"""Scenario S2, priority training JobSets and hot-swap, end to end: ``kq dev --profile s2``.

The guide's manifests (``examples/s2/kueue-hotswap.yaml``) are applied as they are with the
real kubectl; the quota is raised to 64 with the README's ``kubectl patch``; nodes fail and
recover with ``kq dev node``. Every Expect line of the story is asserted, and watches on pods
and Workloads check at every version they deliver that no chip is double-booked, no two child
Jobs share a slice, admitted usage stays within quota, and no pod is bound to a failed slice.

On both backends: ``kq dev`` with its own embedded API server, or ``kq dev --kubeconfig`` on the
shared real kube-apiserver, from which each test removes what it created when it ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.e2e.kqdev import KubectlWatch, Seen, kq_dev_on, kubectl_watch
from tests.harness import REPO, Cluster, wait_until

EXAMPLES = REPO / "examples" / "s2"
SPEED = 20
STEP_TIMEOUT_S = 40.0
POOL = "cloud.google.com/gke-nodepool"
TPU = "google.com/tpu"
JOB_NAME = "batch.kubernetes.io/job-name"
WORKLOADS = "workloads.v1beta1.kueue.x-k8s.io"
QUOTA_64 = json.dumps(
    [{"op": "replace", "value": 64,
      "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota"}]
)  # fmt: skip
T = TypeVar("T")
Obj = dict[str, Any]

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Sandbox:
    work: Path
    kubeconfig: Path

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig),
                "KUBECACHEDIR": str(self.work / "kubectl-cache")}  # fmt: skip

    def kubectl(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(["kubectl", *args], capture_output=True, text=True, env=self.env,
                              input=input, timeout=60, check=False)  # fmt: skip
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def node(self, verb: str, name: str) -> None:
        # By kubeconfig: a `kq dev --kubeconfig` keeps none in its data directory.
        subprocess.run([sys.executable, "-m", "kq", "dev", "node", verb, name, "--kubeconfig",
                        str(self.kubeconfig)], check=True, cwd=REPO, capture_output=True,
                       timeout=60)  # fmt: skip

    def workload(self, jobset: str) -> Obj:
        found = self.workload_when(jobset, lambda w: True)
        assert found, f"no Workload for JobSet {jobset}"
        return found

    def workload_when(self, jobset: str, ok: Callable[[Obj], bool]) -> Obj | None:
        """``jobset``'s Workload if it exists and passes ``ok``."""
        items = self.get(WORKLOADS)["items"]
        mine = (w for w in items if w["metadata"]["ownerReferences"][0]["name"] == jobset)
        obj = next(mine, None)
        return obj if obj and ok(obj) else None

    def pools(self) -> dict[str, str]:
        return {n["metadata"]["name"]: n["metadata"]["labels"][POOL]
                for n in self.get("nodes")["items"]}  # fmt: skip

    def running(self, jobset: str) -> list[Obj]:
        return [p for p in self.get("pods")["items"]
                if p["metadata"]["name"].startswith(f"{jobset}-")
                and p["status"].get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")]  # fmt: skip


@pytest.fixture
def s2(cluster: Cluster, tmp_path: Path) -> Iterator[Sandbox]:
    with kq_dev_on(cluster, tmp_path, "s2", SPEED) as kubeconfig:
        yield Sandbox(tmp_path, kubeconfig)


def until(what: str, check: Callable[[], T | None]) -> T:
    """``check``'s first truthy value; fails after ``STEP_TIMEOUT_S``."""
    return wait_until(check, what, within=STEP_TIMEOUT_S)


def condition(obj: Obj, kind: str) -> Obj:
    found = (c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == kind)
    return next(found, {})


def admitted(obj: Obj) -> bool:
    return condition(obj, "Admitted").get("status") == "True"


def domains(obj: Obj) -> list[str]:
    """The slice (node pool) of each pod, in slice order, from the topology assignment."""
    [psa] = obj["status"]["admission"]["podSetAssignments"]
    topology = psa["topologyAssignment"]
    assert topology["levels"] == [POOL, "kubernetes.io/hostname"]
    return [d["values"][0] for d in topology["domains"] for _ in range(d["count"])]


def slices_of(sandbox: Sandbox, jobset: str, pools: dict[str, str]) -> dict[str, set[str]] | None:
    """Child Job → pools of its running pods, once the JobSet runs all 8 pods."""
    pods = sandbox.running(jobset)
    out: dict[str, set[str]] = {}
    for p in pods:
        out.setdefault(p["metadata"]["labels"][JOB_NAME], set()).add(pools[p["spec"]["nodeName"]])
    return out if len(pods) == 8 else None


def apply_guide(sandbox: Sandbox, keep: Callable[[str], bool] = lambda doc: True) -> str:
    """Applies the guide's manifests unchanged, those ``keep`` accepts; returns kubectl's stderr."""
    documents = (EXAMPLES / "kueue-hotswap.yaml").read_text().split("\n---\n")
    return sandbox.kubectl("apply", "-f", "-", input="\n---\n".join(filter(keep, documents))).stderr


def is_high(document: str) -> bool:
    return "name: high-jax-trillium\n" in document


class Invariants:
    """Expect 5, checked on every version the watches delivered."""

    def __init__(self, pods: KubectlWatch, workloads: KubectlWatch, pools: dict[str, str]):
        self.pods, self.workloads, self.pools = pods, workloads, pools
        self.failed: dict[str, float] = {}
        """Pool → when its node was failed (monotonic): nothing may be bound there after."""

    def check(self, quota: int) -> None:
        self._pods(self.pods.seen())
        self._quota(self.workloads.seen(), quota)

    def _pods(self, seen: list[Seen]) -> None:
        latest: dict[str, Obj] = {}
        bound_at: dict[str, float] = {}
        for version in seen:
            pod = version.object
            uid = pod["metadata"]["uid"]
            latest[uid] = pod
            node = pod["spec"].get("nodeName")
            if node and uid not in bound_at:
                bound_at[uid] = version.at
                failed_at = self.failed.get(self.pools[node])
                assert failed_at is None or version.at < failed_at, (
                    f"{pod['metadata']['name']} bound to {node} of failed slice {self.pools[node]}"
                )
            self._no_double_booking(latest)

    def _no_double_booking(self, latest: dict[str, Obj]) -> None:
        chips: dict[str, int] = {}
        jobs: dict[str, set[str]] = {}
        for pod in latest.values():
            node = pod["spec"].get("nodeName")
            if not node or pod["status"].get("phase") in ("Succeeded", "Failed"):
                continue
            if pod["metadata"].get("deletionTimestamp"):
                continue
            limits = pod["spec"]["containers"][0]["resources"].get("limits") or {}
            chips[node] = chips.get(node, 0) + int(limits.get(TPU, 0))
            jobs.setdefault(self.pools[node], set()).add(pod["metadata"]["labels"][JOB_NAME])
        assert all(n <= 4 for n in chips.values()), f"chips double-booked: {chips}"
        assert all(len(j) == 1 for j in jobs.values()), f"two Jobs share a slice: {jobs}"

    def _quota(self, seen: list[Seen], quota: int) -> None:
        latest: dict[str, Obj] = {}
        for version in seen:
            latest[version.object["metadata"]["name"]] = version.object
            used = sum(
                int(psa["resourceUsage"].get(TPU, 0))
                for w in latest.values()
                if (w.get("status") or {}).get("admission")
                for psa in w["status"]["admission"]["podSetAssignments"]
            )
            assert used <= quota, f"{used} chips admitted, quota {quota}"


def test_documented_quota_admits_one_jobset_and_a_free_slice_takes_a_failed_one(
    s2: Sandbox,
) -> None:
    with (
        kubectl_watch(s2.env, "pods") as pod_watch,
        kubectl_watch(s2.env, WORKLOADS) as workload_watch,
    ):
        invariants = Invariants(pod_watch, workload_watch, s2.pools())
        _documented_quota(s2, invariants)
        invariants.check(32)


def _documented_quota(s2: Sandbox, invariants: Invariants) -> None:
    # Low arrives first, as the story has it. Applied in one go, the two JobSets can reach a
    # controller in the same cycle (a relisting informer delivers both), and then high goes first.
    warnings = apply_guide(s2, lambda doc: not is_high(doc))
    # Expect 6: the queue named by the annotation is honoured, with a deprecation warning;
    # and the ClusterQueue's field Kueue does not define is called out on apply and in status.
    assert 'the annotation "kueue.x-k8s.io/queue-name" is deprecated' in warnings
    assert "spec.preemption.reclaimOutOfCohort is not a Kueue field" in warnings
    # Expect 1: priorities resolved from the pod templates' PriorityClasses.
    low = until("low is admitted", lambda: s2.workload_when("low-jax-trillium", admitted))
    apply_guide(s2, is_high)
    high = until("high has a Workload", lambda: s2.workload_when("high-jax-trillium", bool))
    assert (low["spec"]["priority"], high["spec"]["priority"]) == (1000000, 2000000)
    wide = s2.kubectl("get", "workloads", "-o", "wide").stdout
    assert "1000000" in wide
    assert "2000000" in wide
    # Expect 2 (quota 32): low holds the queue; high waits, no withinClusterQueue preemption.
    waiting = until(
        "high waits for quota",
        lambda: s2.workload_when("high-jax-trillium", lambda w: "insufficient unused quota"
                                 in condition(w, "QuotaReserved").get("message", "")),
    )  # fmt: skip
    assert not admitted(waiting)
    until(
        "the ClusterQueue says it ignores reclaimOutOfCohort",
        lambda: (
            "does not act on spec.preemption.reclaimOutOfCohort"
            in condition(s2.get("clusterqueue", "tpu-training-cq"), "Active").get("message", "")
        ),
    )
    pools = s2.pools()
    before = until("low runs on two slices", lambda: slices_of(s2, "low-jax-trillium", pools))
    assert sorted(len(p) for p in before.values()) == [1, 1]
    assert domains(low)[0] != domains(low)[4]
    # Expect 3, free-slice case: a node of low's first slice fails; low moves to a free slice.
    lost = sorted(before.values(), key=sorted)[0]
    [lost_pool] = lost
    victim_node = next(n for n, p in pools.items() if p == lost_pool)
    invariants.check(32)
    invariants.failed[lost_pool] = time.monotonic()
    s2.node("fail", victim_node)
    moved = until(
        "low is re-placed off the failed slice",
        lambda: s2.workload_when("low-jax-trillium", lambda w: lost_pool not in domains(w)),
    )
    assert admitted(moved)
    assert condition(moved, "Evicted").get("status") != "True"
    after = until("low runs again on two healthy slices",
                  lambda: slices_of(s2, "low-jax-trillium", pools))  # fmt: skip
    assert lost_pool not in set().union(*after.values())
    assert s2.get("jobset", "low-jax-trillium")["status"].get("restarts", 0) >= 1
    # Nothing was preempted: high still waits for quota, never evicted anyone.
    assert not admitted(s2.workload("high-jax-trillium"))


def test_hot_swap_preempts_the_low_priority_jobset_and_recovery_readmits_it(
    s2: Sandbox,
) -> None:
    apply_guide(s2)
    s2.kubectl("patch", "clusterqueue", "tpu-training-cq", "--type=json", "-p", QUOTA_64)
    pools = s2.pools()
    with (
        kubectl_watch(s2.env, "pods") as pod_watch,
        kubectl_watch(s2.env, WORKLOADS) as workload_watch,
    ):
        invariants = Invariants(pod_watch, workload_watch, pools)
        # Expect 2 (quota 64): both admitted, two slices each, one child Job per slice.
        low_slices = until("low runs", lambda: slices_of(s2, "low-jax-trillium", pools))
        high_slices = until("high runs", lambda: slices_of(s2, "high-jax-trillium", pools))
        for found in (low_slices, high_slices):
            assert sorted(len(p) for p in found.values()) == [1, 1]
        used = set().union(*low_slices.values(), *high_slices.values())
        assert len(used) == 4
        invariants.check(64)
        # Expect 3, no free slice: one node of a slice used by high fails.
        [failed_pool] = sorted(high_slices.values(), key=sorted)[0]
        node = next(n for n, p in pools.items() if p == failed_pool)
        invariants.failed[failed_pool] = time.monotonic()
        s2.node("fail", node)
        low = until(
            "low is evicted for high",
            lambda: s2.workload_when(
                "low-jax-trillium", lambda w: condition(w, "Evicted").get("status") == "True"
            ),
        )
        evicted, preempted = condition(low, "Evicted"), condition(low, "Preempted")
        high_key = f"default/{s2.workload('high-jax-trillium')['metadata']['name']}"
        assert evicted["reason"] == "Preempted"
        assert preempted["reason"] == "HotSwap"
        assert (
            f"recovering workload {high_key} after the failure of {failed_pool}"
            in (evicted["message"])
        )
        until("low's JobSet is suspended",
              lambda: s2.get("jobset", "low-jax-trillium")["spec"].get("suspend"))  # fmt: skip
        after = until("high runs again on healthy slices",
                      lambda: slices_of(s2, "high-jax-trillium", pools))  # fmt: skip
        assert failed_pool not in set().union(*after.values())
        assert sorted(len(p) for p in after.values()) == [1, 1]
        assert s2.get("jobset", "high-jax-trillium")["status"]["restarts"] >= 1
        # Expect 4: low waits, saying why: 2 healthy slices needed, 1 free.
        waiting = until(
            "low says why it waits",
            lambda: s2.workload_when(
                "low-jax-trillium",
                lambda w: "1 free" in condition(w, "QuotaReserved").get("message", ""),
            ),
        )
        message = condition(waiting, "QuotaReserved")["message"]
        assert f"needs 2 {POOL} domain(s) with room for 4 pods each" in message
        assert f"3 healthy, 1 free (not healthy: {failed_pool})" in message
        invariants.check(64)
        # Recovery: the node comes back and low is re-admitted on the recovered capacity.
        s2.node("recover", node)
        invariants.failed.clear()
        back = until("low runs again", lambda: slices_of(s2, "low-jax-trillium", pools))
        assert failed_pool in set().union(*back.values())
        assert admitted(s2.workload("low-jax-trillium"))
        invariants.check(64)
