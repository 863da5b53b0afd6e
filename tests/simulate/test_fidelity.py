"""Fidelity, measured: ``kq simulate`` decides what ``kq dev`` decides on the same trace.

The same trace goes through the simulator's core and, as Jobs (JobSets for multislice
entries) created on time, through a live ``kq dev`` whose pods run their trace run time in
wall seconds (``--speed`` maps it to the simulated cluster's clock). Compared:

- admissions: kq dev admits exactly the simulator's admissions (each workload as many times),
  and in its order. The one freedom: admissions the simulator makes at one virtual instant may
  come in any order in kq dev, because there they are separate API writes from one or more
  scheduling cycles that a watch sees in commit order, and Kueue's timestamps have whole
  seconds. So kq dev's admissions, mapped to the simulator's instants, must never go back.
- preemptions: the same (victim, preemptor) pairs, as many times.

Why an exact match is possible: each trace keeps its arrivals and finishes at least
``MARGIN_S`` apart in the simulation (asserted first), more than kq dev's own latency (Job
created to Workload admitted, pods finished to quota released, a preemption carried out: 0.1
to 0.6 s measured). Closer events race in kq dev and may rightly come out either way, so a
trace that breaks the margin is refused rather than compared. Priorities go to kq dev as
WorkloadPriorityClass labels or pods' PriorityClasses (a job has no number of its own), so
the traces name classes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.kqdev import kq_dev_on, kubectl_watch
from tests.harness import REPO, Cluster
from tests.simulate.fidelity import margin, order_differences, run_on_kq_dev, simulated
from tests.simulate.live import Kubectl

SPEED = 10
MARGIN_S = 1.0
"""No two arrivals or finishes closer than this in the simulation (``fidelity.margin``)."""
Obj = dict[str, Any]

pytestmark = pytest.mark.slow


def _entry(name: str, at: float, team: str, cpu: int, runtime: float, cls: str = "batch") -> Obj:
    return {"name": name, "arrival": at, "queue": f"team-{team}/team-{team}",
            "runtime": runtime, "requests": {"cpu": cpu, "memory": "1Gi"},
            "priorityClass": cls}  # fmt: skip


S4_SETUP = REPO / "examples" / "simulate" / "setup.yaml"
S4_TRACE = [
    _entry("b1", 0, "b", 6, 12),  # team B's whole on-demand quota
    _entry("b2", 2, "b", 4, 12),  # borrows 4 CPUs of team A's
    _entry("a1", 4, "a", 8, 10),  # team A reclaims them: preempts b2
    _entry("a2", 6, "a", 2, 4),
    _entry("a3", 8, "a", 2, 7, "urgent"),  # preempts a2 within team A
    _entry("b3", 18, "b", 2, 5),
]


def _compare(cluster: Cluster, tmp_path: Path, profile: str, setup: list[Path],
             trace: list[Obj], *, nodes: Path | None = None,
             pod_classes: tuple[str, ...] = ()) -> None:  # fmt: skip
    """``nodes``: the simulator's picture of the profile's nodes (kq dev has them already)."""
    simulation = simulated(setup + ([nodes] if nodes else []), trace)
    assert margin(simulation, trace) >= MARGIN_S, "the trace is too tight to compare exactly"
    assert simulation.preemptions, "the trace should exercise preemption"
    end = max(at for at, _ in simulation.admissions) + max(e["runtime"] for e in trace)
    with kq_dev_on(cluster, tmp_path, profile, SPEED) as kubeconfig:
        kubectl = Kubectl(kubeconfig, tmp_path / "kubectl-cache")
        for path in setup:
            kubectl("apply", "-f", str(path))
        env = {**os.environ, "KUBECONFIG": str(kubeconfig),
               "KUBECACHEDIR": str(tmp_path / "kubectl-cache")}  # fmt: skip
        with kubectl_watch(env, "workloads", "-A") as watch:
            live = run_on_kq_dev(kubeconfig, watch, trace, SPEED, end + 30, pod_classes)
    report = (f"simulation: {simulation.admissions}\nkq dev: "
              f"{[(round(t, 1), k) for t, k in live.admissions]}")  # fmt: skip
    assert order_differences(simulation, live) == [], report
    assert live.preemptions == simulation.preemptions, report


def test_s4_teams_borrowing_reclaim_and_priority(cluster: Cluster, tmp_path: Path) -> None:
    _compare(cluster, tmp_path, "s4", [S4_SETUP], S4_TRACE)


# Kueue's scheduler perf-test mix (test/performance/scheduler/configs/baseline), scaled down:
# its three classes (cpu 1/5/20, priority 50/100/200, run time 0.2/0.5/1 s, here x10) and its
# ClusterQueues (nominal 20 cpu, borrowing limit 100, LowerPriority and reclaim in the cohort),
# two of them in one cohort, 3 small, 2 medium and 1 large workloads each. Arrivals are set on
# whole seconds so that no two events are closer than the margin (see the module docstring).
PERF_CLASSES = {"small": (1, 2, 50), "medium": (5, 5, 100), "large": (20, 10, 200)}
PERF_ARRIVALS = {
    "perf-0": {"small": (0, 10, 13), "medium": (26, 27), "large": (30,)},
    "perf-1": {"small": (6, 14, 19), "medium": (18, 29), "large": (22,)},
}


def _perf_setup(path: Path) -> Path:
    objects: list[Obj] = [{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
                           "metadata": {"name": "default"}}]  # fmt: skip
    for name, (_, _, priority) in PERF_CLASSES.items():
        objects.append({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "WorkloadPriorityClass",
                        "metadata": {"name": name}, "value": priority})  # fmt: skip
    quota = {"name": "cpu", "nominalQuota": 20, "borrowingLimit": 100}
    for name in PERF_ARRIVALS:
        objects += [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
             "metadata": {"name": name},
             "spec": {"cohort": "perf", "namespaceSelector": {},
                      "preemption": {"withinClusterQueue": "LowerPriority",
                                     "reclaimWithinCohort": "Any"},
                      "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                          {"name": "default", "resources": [quota]}]}]}},
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
             "metadata": {"namespace": name, "name": "lq"}, "spec": {"clusterQueue": name}},
        ]  # fmt: skip
    path.write_text(yaml.safe_dump_all(objects))
    return path


def _perf_trace() -> list[Obj]:
    out = []
    for queue, classes in PERF_ARRIVALS.items():
        for name, arrivals in classes.items():
            cpu, runtime, _ = PERF_CLASSES[name]
            for i, at in enumerate(arrivals):
                out.append({"name": f"{name}-{i}", "arrival": at, "queue": f"{queue}/lq",
                            "runtime": runtime, "priorityClass": name,
                            "requests": {"cpu": cpu}})  # fmt: skip
    return out


def test_scaled_kueue_perf_mix(cluster: Cluster, tmp_path: Path) -> None:
    _compare(cluster, tmp_path, "s4", [_perf_setup(tmp_path / "perf.yaml")], _perf_trace())


# S1: GKE's multislice example on kq dev's three TPU v5e slices (2 hosts x 4 chips each), with
# its "priority and preemption" ClusterQueue (24 chips) and low-priority PriorityClass (100).
# The JobSets ask for one node pool per slice (exclusive-topology), which kq places on nodes.
S1 = REPO / "examples" / "s1"
S1_NODES = {
    "apiVersion": "simulate.kq.dev/v1alpha1", "kind": "NodePool", "metadata": {"name": "v5e"},
    "spec": {"slices": 3, "nodes": 2,
             "labels": {"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
                        "cloud.google.com/gke-tpu-topology": "2x4"},
             "allocatable": {"cpu": "111820m", "memory": "180Gi", "google.com/tpu": 4}},
}  # fmt: skip


def _multislice(name: str, at: float, slices: int, runtime: float, cls: str = "") -> Obj:
    pool = "cloud.google.com/gke-nodepool"
    pod_set = {
        "name": "slice",
        "count": 2 * slices,
        "requests": {"google.com/tpu": 4},
        "nodeSelector": dict(S1_NODES["spec"]["labels"]),  # type: ignore[index]
        "topologyRequest": {"podSetSliceRequiredTopology": pool, "podSetSliceSize": 2},
    }
    entry = {
        "name": name,
        "arrival": at,
        "queue": "default/multislice-queue",
        "runtime": runtime,
        "exclusiveTopology": pool,
        "podSets": [pod_set],
    }
    return {**entry, "priorityClass": cls} if cls else entry  # fmt: skip


S1_TRACE = [
    _multislice("three", 0, 3, 15),  # all 24 chips
    _multislice("one", 2, 1, 6),  # waits: same priority, nothing to preempt
    _multislice("low-two", 5, 2, 8, "low-priority"),  # 100 > 0: preempts "three"
    _multislice("two", 17, 2, 6),
]


def test_s1_multislice_jobsets_with_priority(cluster: Cluster, tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump(S1_NODES))
    setup = [S1 / "kueue-preemption-corrected.yaml", S1 / "priority-class.yaml"]
    _compare(cluster, tmp_path, "s1", setup, S1_TRACE, nodes=nodes,
             pod_classes=("low-priority",))  # fmt: skip
